/*
 * view — what one version 3 client gets (PROTOCOL.md §12.4-§12.5): the
 * plan of its frames (the grid shift, the sample and the rect of
 * super-tiles its view, its pixels and its budget call for), the frames it
 * was sent (the bases its decoder holds), and its frame of a snapshot,
 * spliced from the snapshot's shared parts (tiles.h): a header, the
 * audience's obstacles and targets, and one part per super-tile of the
 * rect, each the delta on the newest bases the client holds or a key.
 * Nothing is encoded for one client: only the header and the splice.
 *
 * Never: sockets, locks of its own, the clock (`now` comes in).
 * Threading: a feed belongs to its client's service thread; the tileset
 * may be shared with other threads (tiles.h).
 */
#ifndef FLOCKD_VIEW_H
#define FLOCKD_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_command.h"
#include "proto_v3.h"
#include "tiles.h"

/* What a client asked to look at; whole: no view (the whole room, exact). */
struct view_req {
    bool whole;
    struct proto_view_args args; /* when !whole */
    /* A delta's bytes per boid as this view's frames weighed (0: the
     * plan's own estimate, as in the view's ack): its frames' plans are
     * fitted by it. */
    double boid_bytes;
};

/* What its frames hold (PROTOCOL.md §12.4's ack). */
struct view_plan {
    uint8_t shift, sample;
    uint32_t rect_x, rect_y, rect_cols, rect_rows; /* super-tiles */
    uint64_t boids;                                /* about this many */
    uint64_t bytes;                                /* expected bytes of a frame */
    double rate;                                   /* frames per second */
};

/* Most super-tiles across or down a rect the plan picks a shift for. */
#define VIEW_RECT_MAX 12

/* A rect covers the view and as far around it as a boid at the grid's top
 * speed (tiles_grid.vscale * 127) flies in this many snapshots. */
#define VIEW_MARGIN_SNAPSHOTS 4

/*
 * The plan for req on state s (the audience's newest) of a room sending
 * snapshot_hz snapshots a second, with `budget` bytes per second when the
 * request names none. s may be NULL (no tiles yet): an estimate of n boids
 * spread evenly over grid g.
 */
void view_plan(const struct tilestate *s, const struct tiles_grid *g, uint64_t n,
               const struct view_req *req, double budget, double snapshot_hz,
               struct view_plan *out);

/* A frame sent, as its bases are to the client's decoder. */
struct view_sent {
    uint32_t seq;
    uint8_t shift, sample;
    uint8_t rect_x, rect_y, rect_cols, rect_rows;
    bool used;
};

/* A client's version 3 state: its request and the frames it holds. */
struct view_feed {
    struct view_req req;
    struct view_sent sent[PROTO_V3_HISTORY]; /* newest first */
    /* When the bytes sent so far are paid for at the budget's rate (a
     * frame may go up to one snapshot earlier: view_frame()). */
    int64_t next_ns;
    /* On a relay: the plan last noted in its tilestate's need (tileneed.h),
     * when, and when its rect last moved (0: never). */
    struct view_plan noted;
    uint32_t noted_epoch, moved_epoch;
};

/* Epochs (steps of the relay's steward) a view that moved is noted with a
 * ring of super-tiles around its rect (tileneed_note()). */
#define VIEW_RING_EPOCHS 10

/* A new stream (a welcome, a keyframe command): every part of the next
 * frame is a key. The request stays. */
void view_feed_restart(struct view_feed *f);

/* What a frame was made of, for the metrics. */
struct view_made {
    uint32_t parts, keys, boids;
    /* None was made: this node relays the room and does not hold the tiles
     * of the frame's plan yet (it asked the owner for them): the client
     * passes this snapshot over and takes a later one. */
    bool passed;
};

/* The frame a scratch buffer holds and whom it fits: a client of the same
 * tileset (tiles_set_serial(); 0: none), header flags and plan (`frame`,
 * the entry it adds to the frames a client holds) that holds the same
 * frames gets it byte for byte, so it is spliced once for all of them
 * (the clients of the whole room that keep up). */
struct view_spliced {
    uint64_t set;
    uint8_t flags;
    struct view_sent frame;
    struct view_sent held[PROTO_V3_HISTORY];
    size_t len;
    struct view_made made;
};

/* Per service thread: the encoder of the parts it is first to need, and
 * the buffer a client's frame is spliced into (`pre` bytes of headroom),
 * with the frame it holds. */
struct view_scratch {
    struct proto_v3_encoder *enc;
    uint8_t *buf;
    size_t cap, pre;
    struct view_spliced last;
};

void view_scratch_free(struct view_scratch *x);

/*
 * Client feed's frame of tileset ts, into x->buf + x->pre (grown as
 * needed): the plan for its request, the parts, the header (flags ORed
 * with extra_flags: PROTO_V3_FLAG_FOGGED, _DELAYED). budget and
 * snapshot_hz as view_plan(). Its length (>0) and the feed updated; 0 when
 * the budget's rate holds the client back until later (`now`), or when a
 * relay's tileset does not hold the plan's tiles (made->passed); or
 * PROTO_E_INTERNAL (no memory). *made (may be NULL) says what it held. On
 * a relay the plan is noted in the tilestate's need (tileneed.h) once per
 * epoch and whenever it changes, so that the relay asks for its tiles.
 */
ptrdiff_t view_frame(struct tileset *ts, struct view_feed *feed, uint8_t extra_flags, double budget,
                     double snapshot_hz, int64_t now, struct view_scratch *x,
                     struct view_made *made);

#endif
