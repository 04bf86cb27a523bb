/*
 * dispatch — what happens to one message a client sent: the straight path
 * of a command.
 *
 *   reassembled message (session.h)
 *     -> rate limit (the session's bucket.h; abuse closes with 1008)
 *     -> parse and validate (proto_command.h, against the room's limits)
 *     -> a join waits while earlier replies are owed (session JOIN_HELD)
 *     -> lobby_submit(): role check, join, kick, the room's queue
 *     -> one reply owed, answered by the room before its next step (at
 *        once when a tick worker is free).
 *
 * Every command gets exactly one reply, in the order sent: refusals found
 * on the way (rate, JSON, role, kick) are queued to the room to be
 * answered in turn; only a full queue, and a refused join (which runs
 * when nothing is owed), are answered at once.
 *
 * Never: writes to sockets (replies go through the session's queue);
 * reads the clock (`now` comes in). Threading: the service thread owning
 * the session, holding the lobby's lock (lobby.h).
 */
#ifndef FLOCKD_DISPATCH_H
#define FLOCKD_DISPATCH_H

#include <stdint.h>

#include "lobby.h"
#include "proto_command.h"
#include "session.h"

/* Handles one whole message from s. Only an OPEN session's messages are
 * handled; one being closed (DRAINING) has what it still sent dropped. */
void dispatch_message(struct session *s, const struct session_message *msg, struct lobby *l,
                      int64_t now);

/* Hands a parsed, rate-checked command (also a held join) to the lobby;
 * the session then owes its reply, or has its refusal answered. */
void dispatch_command(struct session *s, const struct proto_command *cmd, struct lobby *l,
                      int64_t now);

/*
 * The view a new connection's URL asks for (?view=X,Y,W,H&px=N&budget=B,
 * PROTOCOL.md §12.4), right after its welcome: dispatched as its first
 * command (no id), or refused at once with an error without id. While its
 * reply is owed a version 3 session is sent no frame (session.h,
 * awaits_view), so that its first frame is of its view, not of the whole
 * room. lws' headers must still be there (ESTABLISHED).
 */
void dispatch_url_view(struct session *s, struct lobby *l, int64_t now);

#endif
