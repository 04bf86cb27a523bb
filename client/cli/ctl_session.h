/*
 * ctl_session — one libwebsockets client connection to flockd, for the
 * subcommands that talk to the server as a single client (send, watch,
 * record).
 *
 * Opening connects to a ws:// URL offering flock.v3, flock.v2 and flock.v1
 * (or the versions from --protocol down) and waits for the welcome
 * (PROTOCOL.md §6.1); when the flags ask for a room or role (ctl_join.h)
 * it then joins and waits for the join's ack and the room's welcome; when
 * they ask for a view (ctl_view.h) it then sends it and waits for its ack
 * (the frames meanwhile, and the ack, go to the caller). Every whole
 * message, text or binary,
 * reassembled from its fragments, is handed to the callback given at open
 * from the welcome of the room the caller works in onwards (what came
 * before a join is not); text to send is queued and written when the
 * socket can take it.
 *
 * Never: decoding or interpreting messages beyond the welcome's protocol
 * and the join's replies (the rest is the caller's and proto/'s business),
 * more than one connection, threads.
 * Threading: everything on the calling thread; the callback runs inside
 * ctl_session_open() and ctl_session_service().
 * Memory: the session owns its buffers; the data passed to the callback is
 * valid only during the call.
 */
#ifndef FLOCKCTL_SESSION_H
#define FLOCKCTL_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_args.h"
#include "ctl_view.h"

struct ctl_session;

/* One whole message: binary (a snapshot) or text (JSON), data[0..len). */
typedef void (*ctl_message_fn)(void *user, int binary, const uint8_t *data, size_t len);

/* Why ctl_session_open() returned NULL. */
struct ctl_open_error {
    int status;       /* CTL_EXIT_CONNECT: not reached, no welcome; CTL_EXIT_FAILED: the join
                         or the view was refused or unanswered */
    char reason[320]; /* e.g. "join refused: forbidden: wrong password" */
};

/*
 * Connects to a->url (ws:// or wss://; with a->insecure a wss:// server's
 * certificate need not verify) offering the snapshot versions up to
 * a->protocol (3: flock.v3, flock.v2, then flock.v1; 2: flock.v2, then
 * flock.v1; 1: flock.v1) and waits up to a->timeout seconds for the
 * welcome; with a->join it then sends the join and waits up to a->timeout
 * more for its ack and the room's welcome; with a->view it then sends the
 * view (a->view_args, --px, --budget) and waits up to a->timeout more for
 * its ack. Returns the session, or NULL with *err filled if the server
 * could not be reached, refused the upgrade, sent no welcome in time,
 * refused or did not answer the join or the view (e.g. "view refused:
 * out_of_range: ...") or ctl_stop was set. Free with ctl_session_close().
 */
struct ctl_session *ctl_session_open(const struct ctl_args *a, ctl_message_fn fn, void *user,
                                     struct ctl_open_error *err);

/* The snapshot version the server took (its welcome's protocol): 1, 2 or 3. */
int ctl_session_protocol(const struct ctl_session *s);

/* The view's ack, owned by the session; NULL if no view was asked for. */
const struct ctl_view_ack *ctl_session_view(const struct ctl_session *s);

/* The welcome's JSON text (after a join, the room's), NUL-terminated,
 * owned by the session. */
const char *ctl_session_welcome(const struct ctl_session *s, size_t *len);

/* Queues text[0..len) as one text message. 0, or -1 if out of memory or
 * the connection is gone. */
int ctl_session_send(struct ctl_session *s, const char *text, size_t len);

/* Services the connection once (returns within about 20 ms). 0 while it
 * is open, -1 once it has closed. */
int ctl_session_service(struct ctl_session *s);

/* Why the connection ended, "" while it is open (e.g. "server closed: 1001"). */
const char *ctl_session_error(const struct ctl_session *s);

/* Closes with 1000 (waiting up to a second for the server's answer),
 * frees everything. NULL is allowed. */
void ctl_session_close(struct ctl_session *s);

#endif
