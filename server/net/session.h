/*
 * session — one WebSocket client's life cycle, as an explicit state
 * machine, with what it is owed and what waits to be written to it.
 *
 *   NONE --admitted (session_open)--> OPEN
 *   OPEN --join while replies are owed (session_hold_join)--> JOIN_HELD
 *   JOIN_HELD --its last owed reply routed (session_take_held_join)--> OPEN
 *   OPEN --rate abuse (session_close_after_replies)--> DRAINING
 *   DRAINING --every owed reply written--> CLOSING
 *   OPEN, JOIN_HELD, DRAINING --message too large, kicked, unread
 *       replies, shutdown (session_close), stale (session_evict)--> CLOSING
 *   any --connection gone (session_release)--> NONE
 *
 * What each state allows:
 *   - reading commands: OPEN only, and only while the client is owed fewer
 *     than SESSION_RX_PAUSE replies (resuming at SESSION_RX_RESUME), so a
 *     burst waits in its socket rather than here; DRAINING and CLOSING read
 *     what comes and drop it, so that the socket is empty when it closes
 *     (unread data makes the kernel reset the connection, and the client
 *     would lose the close frame: 1006 instead of the status sent);
 *   - text out (replies, rosters): every state but CLOSING and NONE;
 *   - frames: OPEN, JOIN_HELD and DRAINING, of the room whose welcome it
 *     last got (`feed`), while that is still its room.
 *
 * A join waits in JOIN_HELD until every earlier command is answered, so
 * replies keep their order across rooms. "Owed" counts commands handed to
 * a room and not yet answered.
 *
 * Never: parses commands or decides anything about rooms (dispatch.h,
 * lobby.h); reads the clock (`now` comes in). Threading: the service
 * thread owning the connection.
 */
#ifndef FLOCKD_SESSION_H
#define FLOCKD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "lobby.h"
#include "proto_command.h"
#include "proto_v2.h"
#include "sessions.h"
#include "view.h"

struct lws;

#define SESSION_OUTQ      512  /* text messages queued for a client before 1008 */
#define SESSION_OUTQ_MIN  8    /* the queue's first allocation, in messages */
#define SESSION_RX_MIN    256  /* the reassembly buffer's first allocation, bytes */
#define SESSION_RX_KEEP   1024 /* a bigger one is freed once its message is handled */
#define SESSION_RX_PAUSE  128  /* owed replies that stop reading a client... */
#define SESSION_RX_RESUME 64   /* ...until it is owed this many or fewer */

enum session_state {
    SESSION_NONE = 0, /* not admitted, or gone (lws zeroes a new session) */
    SESSION_OPEN,
    SESSION_JOIN_HELD,
    SESSION_DRAINING,
    SESSION_CLOSING,
};

/* The frames a session is fed: delivery's per-client state (deliver.h). */
struct session_feed {
    const struct lobby_room *room; /* whose welcome it got; NULL: none yet */
    uint64_t last_seq;             /* last frame written, 0: none */
    int64_t last_frame_ns;         /* when (or when the feed started) */
    uint32_t availability_seq;     /* the room's availability it knows (room_availability) */
    uint64_t squads_seen;          /* the room's squads board it has had (room_squads_send) */
    uint64_t game_seen;            /* the room's script's board it has had (room_game_send) */
    uint64_t dilation_seen;        /* the room's dilation board it knows (room_dilation_send) */
    /* Version 2: the frames written since the stream (re)started, newest
     * first: the bases its decoder holds (proto_v2_pick()). */
    uint32_t sent[PROTO_V2_HISTORY];
    uint32_t nsent;
    /* Version 3: its view and the frames it holds (view.h). */
    struct view_feed v3;
};

struct session_text {
    size_t len;
    int64_t at_ns;      /* a reply: its command's arrival (clock.h); 0: not timed */
    unsigned char *buf; /* owned: LWS_PRE headroom, then len bytes */
};

/* Lives in lws' per-session storage (zeroed by lws). */
struct session {
    struct lws *wsi;
    struct sessions_entry entry; /* its client id and peer address (sessions.h) */
    enum session_state state;
    int close_status;     /* DRAINING, CLOSING: the close code to send */
    bool is_close_handed; /* CLOSING: lws was told to close (it sends the close frame) */
    struct lobby_member m;
    struct proto_command *held_join; /* owned: JOIN_HELD only */
    uint32_t owed;
    /* Version 3: the view of its URL is owed its reply (dispatch_url_view()):
     * no frame until then. */
    bool awaits_view;
    bool reading; /* what lws was last told (rx flow control) */
    struct bucket bucket;
    struct session_feed feed;
    /* Reassembly, grown as a message needs it up to max_message: a viewer
     * that sends nothing holds none. */
    char *rx; /* owned: rx_cap bytes */
    size_t rx_len, rx_cap;
    bool rx_binary;
    /* The text queue, a ring of out_cap (a power of two from
     * SESSION_OUTQ_MIN up to SESSION_OUTQ) allocated while it holds
     * messages. */
    struct session_text *outq; /* owned */
    uint32_t out_cap, out_head, out_count;
};

/* The session a lobby member or a sessions entry is embedded in: found
 * without reading the member or the entry, so that a walk of many can
 * read ahead. */
static inline struct session *session_of_member(const struct lobby_member *m)
{
    return (struct session *)((const char *)m - offsetof(struct session, m));
}

static inline struct session *session_of_entry(const struct sessions_entry *e)
{
    return (struct session *)((const char *)e - offsetof(struct session, entry));
}

/* sessions_would_admit() for the peer of wsi, before its upgrade. */
enum metrics_limit session_would_admit(struct lws *wsi, const struct sessions *ss);

/*
 * Admits a new connection (lws ESTABLISHED) speaking `protocol` (1 or 2,
 * the subprotocol it took): within the limits of `ss` (counted in
 * /metrics when hit), into the lobby's default room, its welcome queued
 * and its feed started. 0 and OPEN, or a negative PROTO_E_* and NONE
 * (refuse the connection; nothing is kept).
 */
int session_open(struct session *s, struct lws *wsi, struct sessions *ss, struct lobby *l,
                 unsigned protocol, int64_t now);

/* The connection is gone (lws CLOSED): leaves its room, frees what it
 * holds, back to NONE. Nothing happens for a session never admitted. */
void session_release(struct session *s, struct sessions *ss, struct lobby *l, int64_t now);

/* A whole message from the client; text points into the session's buffer
 * and stays valid until the next session_receive(). */
struct session_message {
    const char *text;
    size_t len;
    bool binary;
};

/*
 * Appends a received fragment. True once a whole message is in *msg. A
 * message past max_message closes the session with 1009; fragments
 * arriving while CLOSING are dropped.
 */
bool session_receive(struct session *s, const void *in, size_t len, uint32_t max_message,
                     struct session_message *msg);

/* Queues a text message (copied). A client with SESSION_OUTQ messages
 * unread is closed with 1008; nothing is queued while CLOSING; a message
 * memory cannot be found for is dropped. */
void session_send(struct session *s, const char *text, size_t len);

/* session_send() for a board's messages (room_text_fn): ctx is the session. */
void session_send_text(void *ctx, const char *text, size_t len);

/* The latest messages of its room's script (§14) to s, which just arrived
 * in that room: its feed's game board is current from then on. */
void session_send_game(struct session *s);

/* Its room's dilation messages (§6.7) newer than what s knows, to s (fed
 * by that room); what it knows is current from then on. */
void session_send_dilation(struct session *s);

/* session_send() for the reply to a command that arrived at at_ns (0:
 * not timed): its wait goes into the reply-latency metric when written. */
void session_reply(struct session *s, const char *text, size_t len, int64_t at_ns);

/* Sends an error reply now (not in turn) and counts it in /metrics. */
void session_send_error(struct session *s, const char *id, int code, const char *message);

/* A command was handed to the room: one more reply owed. */
void session_owe(struct session *s);

/* A reply from the room arrived: one less owed. */
void session_replied(struct session *s);

/* OPEN -> JOIN_HELD: cmd (a join) runs once nothing is owed. If memory
 * runs out the session closes with 1011 instead. */
void session_hold_join(struct session *s, const struct proto_command *cmd);

/* JOIN_HELD with nothing owed -> OPEN: true, the held join in *out (run it
 * now). False otherwise. */
bool session_take_held_join(struct session *s, struct proto_command *out);

/* -> CLOSING: drops what it reads, closes with `status` at the next
 * WRITEABLE. */
void session_close(struct session *s, int status);

/* The close code of PROTOCOL.md §7.2 for a member the lobby took out:
 * kicked 1008, replaced by a rejoin on another connection 4009. */
#define SESSION_CLOSE_REPLACED 4009
int session_eviction_status(enum lobby_eviction why);

/* -> DRAINING: drops what it reads, closes with `status` once every owed
 * reply is written (within a few seconds). */
void session_close_after_replies(struct session *s, int status);

/* -> CLOSING at once, without a close frame (a client that reads nothing). */
void session_evict(struct session *s, int status);

/* Starts or stops reading by state and owed replies (see above). Call
 * after anything that changes either. */
void session_flow(struct session *s);

/* Asks lws for a WRITEABLE callback. */
void session_want_write(struct session *s);

/* True if a text message waits to be written. */
bool session_has_text(const struct session *s);

/* Writes the next queued text message at `now` (a timed reply's wait
 * counted): 0, or PROTO_E_INTERNAL if the socket took less (close the
 * connection). */
int session_write_text(struct session *s, int64_t now);

/* At WRITEABLE: in CLOSING (DRAINING turns CLOSING here once nothing is
 * owed or queued) sets the close frame and returns true, once: the caller
 * then hands the close to lws (returns -1), which sends the frame and
 * waits for the client's own close, reading and dropping what the client
 * still sends. False otherwise. */
bool session_close_if_due(struct session *s);

/* The close was handed to lws: a WRITEABLE of the connection writes
 * nothing and returns 0. Returning -1 again would make lws close the
 * socket at once, without waiting for the client's close, and a client
 * still sending would get a reset that drops the close frame it had not
 * read yet. */
bool session_is_close_handed(const struct session *s);

#endif
