/*
 * ctl_join — the join flockctl sends when a command is asked to work in a
 * room or with a role (--room, --role, --name, --token, --password; and
 * the shape of a room it creates: --mode, --boids, --width, --height,
 * --edges, --teams, --units; PROTOCOL.md §5.6): the flags checked as the server checks a join (by
 * proto's own command parser, which tests/unit/test_schema.c holds to
 * proto/schema.json), the command's text, and what the server's replies to
 * it mean. Both clients use it: the libwebsockets session (send, watch,
 * record) and load's own epoll client.
 *
 * The exchange: after the connection's first welcome the client sends the
 * join; the server answers it with an ack, then the new room's welcome
 * (or with an error and the client stays where it was). Anything else in
 * between (the old room's snapshots, rosters) is not the client's concern.
 *
 * Never: I/O, sockets, secrets in messages (--token and --password are
 * never repeated in a diagnostic).
 * Threading: ctl_join_settle() runs on the main thread at parse time
 * (proto's parser and cJSON's error position are process-wide); the rest is
 * reentrant, one struct ctl_join_wait per connection.
 */
#ifndef FLOCKCTL_JOIN_H
#define FLOCKCTL_JOIN_H

#include <stddef.h>

#include "ctl_args.h"

/* Room used when a join flag other than --room is given. */
#define CTL_JOIN_ROOM "default"
/* Longest join text: the arguments at their limits, every byte escaped. */
#define CTL_JOIN_TEXT_MAX 2048

/*
 * Decides whether cmd joins a room: if any join flag was given, checks each
 * given one as the server would (room 1..32 of [A-Za-z0-9_-], role one of
 * three, name up to 32 and token/password up to 128 bytes of printable
 * UTF-8), then fills in the room (CTL_JOIN_ROOM) and role (cmd->role) left
 * out and sets a->join. Returns 0, or the parser's negative PROTO_E_* code
 * with why[0..cap) saying which flag and what is wrong with it.
 */
int ctl_join_settle(const struct ctl_command *cmd, struct ctl_args *a, char *why, size_t cap);

/* The join command's JSON text for a settled a, NUL-terminated, into
 * buf[0..cap): its length, or PROTO_E_NOSPACE. */
int ctl_join_text(const struct ctl_args *a, char *buf, size_t cap);

/* Where one connection is in the exchange; zero it, then set phase to
 * CTL_JOIN_SENT when the join has gone out. */
enum ctl_join_phase { CTL_JOIN_IDLE, CTL_JOIN_SENT, CTL_JOIN_ACKED };
struct ctl_join_wait {
    enum ctl_join_phase phase;
};

/*
 * Feeds one text message text[0..len) that arrived while the join is out.
 * Returns 0 while waiting, 1 when this message is the joined room's
 * welcome (the exchange is over), or the negative PROTO_E_* code the server
 * refused the join with, with why[0..cap) set to "CODE: MESSAGE" (the
 * server's words).
 */
int ctl_join_feed(struct ctl_join_wait *w, const char *text, size_t len, char *why, size_t cap);

struct cJSON;

/*
 * The refusal an error reply msg carries (the join's, the view's): writes
 * "CODE: MESSAGE" (the server's words) to why[0..cap) and returns the
 * negative PROTO_E_* code its code names, PROTO_E_INTERNAL if none does.
 */
int ctl_refusal(const struct cJSON *msg, char *why, size_t cap);

#endif
