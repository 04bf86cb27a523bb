/*
 * tiles — one snapshot of a room for version 3 clients (PROTOCOL.md §12):
 * every boid an audience sees, cut into the room's tile grid, in id order
 * per tile; views of it at a grid shift and a sample (super-tiles, a
 * subset of the boids, a field of the rest), built the first time a
 * client needs one; and the parts of its super-tiles, each encoded once,
 * by whichever service thread first needs it, and shared by every client
 * whose frame holds that super-tile.
 *
 * Two objects, both refcounted and immutable once published:
 * - a tilestate: the boids of one snapshot for one audience (and the
 *   views built from them). It holds nothing else, so the states a room
 *   keeps as bases stay bounded.
 * - a tileset: a snapshot as clients are served it: its tilestate, the
 *   tilestates of the TILES_KEEP snapshots before it (the bases its deltas
 *   may name: a client that falls behind still holds a frame among them,
 *   and gets a delta on it rather than a key), its obstacles and targets,
 *   and the cache of its encoded parts.
 *
 * Never: sockets, clocks, the lobby. Threading: a tilestate is built by
 * its room's tick thread; from then on any thread may read it, build a
 * view (under its lock) or take a part (a part being encoded by another
 * thread is waited for); references are atomic.
 * Memory: tiles_state_build() and tiles_set_create() allocate; the last
 * tiles_*_release() frees, views and parts included.
 */
#ifndef FLOCKD_TILES_H
#define FLOCKD_TILES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_snapshot.h"
#include "proto_v3.h"

/* Snapshots a tileset keeps before its own: a delta's gap1 + gap0 at most
 * (a client holds its last PROTO_V3_HISTORY frames, however far apart). */
#define TILES_KEEP 16
#include "sim.h"

/* A room's tile grid and what its frames share. */
struct tiles_grid {
    uint8_t cols, rows; /* 1..255 */
    float width, height;
    float vscale; /* units/s per step of a field's mean velocity */
};

/*
 * The grid for a world: tiles of about `tile` world units (at most 255
 * across or down; a big world's tiles grow), vscale from the fastest a
 * boid may fly.
 */
void tiles_grid_for(float width, float height, float tile, float max_speed, struct tiles_grid *out);

/* One snapshot's boids as the tiles hold them: in (tile, id) order, tile
 * t's boids at [start[t], start[t + 1]). */
struct tiles_boids {
    uint32_t count;
    uint32_t *id;
    uint16_t *qx, *qy;
    uint8_t *heading, *group;
    int8_t *vx, *vy; /* velocity / vscale, for fields */
    uint32_t *start; /* tiles + 1 entries */
};

/* A view of a tilestate at one shift and sample: its super-tiles' boids
 * (the sample's), each super-tile's tile hash and, at a sample above 0,
 * its field (every boid the audience sees). */
struct tiles_view {
    uint8_t shift, sample;
    uint32_t gc, gr; /* super-tiles across and down */
    struct tiles_boids b;
    uint32_t *hash;               /* gc * gr */
    struct proto_v3_field *field; /* gc * gr, or NULL at sample 0 */
    const uint8_t *held;          /* a relay's view: gc * gr, nonzero where the super-tile
                                   * came (tiles_state_given()); NULL: every one */
};

struct tilestate;

/*
 * Memory tiles_state_build() works in, kept by its caller from one
 * snapshot to the next: a big room's would otherwise be a fresh mapping
 * each time, every page of it faulted in again (about 30 bytes a boid).
 * Zero-initialized before its first use; tiles_scratch_free() lets it go.
 * One build at a time uses it.
 */
struct tiles_scratch {
    void *mem;
    size_t cap;
};

void tiles_scratch_free(struct tiles_scratch *sc);

/* What a room hands over to build a snapshot's tilestates. */
struct tiles_input {
    const struct tiles_grid *grid;
    const struct sim_view *world;
    uint32_t seq;
    /* The world's boids quantized (§4.4), in world order, when the caller
     * has them (version 2's state of the same snapshot); NULL: quantized here. */
    const uint16_t *qx, *qy;
    const uint8_t *heading;
    /* Threads to cut the work of a big world over (a room whose steps are
     * split); NULL: this thread alone. */
    const struct sim_fork *fork;
    /* Where to work; NULL: memory allocated for the call. */
    struct tiles_scratch *scratch;
};

/* Fewer boids than this are cut into tiles on one thread, whatever the fork. */
#define TILES_FORK_MIN 20000

/*
 * The tilestate of every boid of the world (the audience that sees
 * everything), with one reference for the caller. NULL if memory ran out.
 */
struct tilestate *tiles_state_build(const struct tiles_input *in);

/* The tilestate of the boids of `all` whose visible[] bit `bit` is set
 * (an rts team's audience; visible has one entry per boid of the world, in
 * world order, and all was built from the same world). NULL on no memory. */
struct tilestate *tiles_state_filter(const struct tilestate *all, const struct sim_view *world,
                                     const uint32_t *visible, unsigned bit);

struct tilestate *tiles_state_ref(struct tilestate *s);
void tiles_state_release(struct tilestate *s);

uint32_t tiles_state_seq(const struct tilestate *s);
const struct tiles_grid *tiles_state_grid(const struct tilestate *s);

/* Boids of tile `t` (shift 0) whose count a plan weighs. */
uint32_t tiles_state_count(const struct tilestate *s, uint32_t t);

/* Boids in the rect of base tiles from column tx, row ty, cols across and
 * rows down (each at most the grid's), wrapping around the grid: O(1), from
 * a table of sums built with the state. */
uint64_t tiles_state_count_rect(const struct tilestate *s, uint32_t tx, uint32_t ty, uint32_t cols,
                                uint32_t rows);

/*
 * The view at shift and sample, built now if no thread built it yet.
 * Owned by s; NULL if memory ran out or shift/sample are out of range, or
 * for a view a relay's state was not given (tiles_state_given()).
 */
const struct tiles_view *tiles_state_view(struct tilestate *s, unsigned shift, unsigned sample);

/* ---- a snapshot served: the tileset ----------------------------------------- */

struct tileset;

/* What a frame's header says of its snapshot besides the tiles. */
struct tiles_meta {
    uint64_t tick;
    int64_t time_us;     /* server time stamped into the snapshot */
    uint8_t flags;       /* PROTO_SNAPSHOT_FLAG_PAUSED | _WRAP | PROTO_V3_FLAG_* */
    uint32_t room_boids; /* boids in the whole room */
};

/*
 * A tileset for `now` (one reference taken on it), with prev[g - 1] the
 * tilestate of snapshot seq - g for g = 1..TILES_KEEP (prev or an
 * entry NULL where none; references taken), its meta, and the audience's
 * obstacles and targets (copied). One reference for the caller; NULL on
 * no memory.
 */
struct tileset *tiles_set_create(struct tilestate *now, struct tilestate *const *prev,
                                 const struct tiles_meta *meta,
                                 const struct proto_obstacle *obstacles, uint32_t nobstacles,
                                 const struct proto_target *targets, uint32_t ntargets);

const struct tiles_meta *tiles_set_meta(const struct tileset *ts);

/* The tileset's number, never given to another in the process's life
 * (1, 2, ...): what tells two tilesets apart when one may be freed and
 * another made at its address. */
uint64_t tiles_set_serial(const struct tileset *ts);

struct tileset *tiles_set_ref(struct tileset *ts);
void tiles_set_release(struct tileset *ts);

struct tilestate *tiles_set_state(const struct tileset *ts);

/* The tilestate g snapshots before (1..TILES_KEEP), or NULL. */
struct tilestate *tiles_set_base(const struct tileset *ts, unsigned g);

void tiles_set_sections(const struct tileset *ts, const struct proto_obstacle **obstacles,
                        uint32_t *nobstacles, const struct proto_target **targets,
                        uint32_t *ntargets);

/* An encoded part: its bytes (owned by the tileset) and its tile hash. */
struct tiles_part {
    const uint8_t *bytes;
    size_t len;
    uint32_t hash;
};

/*
 * Super-tile st of the view at shift/sample as a key (gap1 0) or a delta on
 * the bases gap1 and gap1 + gap0 snapshots back (gap1 1..15, gap0 0..15,
 * gap1 + gap0 at most TILES_KEEP); encoded with enc (the calling thread's)
 * unless another thread did already. 0 and *out, or PROTO_E_NO_BASE (a base
 * the tileset does not hold), PROTO_E_NOSPACE (the super-tile holds as
 * many deltas on other gaps as it keeps: ask for another, or the key),
 * PROTO_E_INTERNAL (no memory), PROTO_E_BAD_ARG (out of range).
 */
int tiles_set_part(struct tileset *ts, unsigned shift, unsigned sample, uint32_t st, unsigned gap1,
                   unsigned gap0, struct proto_v3_encoder *enc, struct tiles_part *out);

/* Parts encoded so far by this process and their bytes (for /metrics). */
void tiles_counters(uint64_t *parts, uint64_t *bytes);

/* ---- a relay's tilestate (server/cluster/CLUSTER.md §3.8) -----------------------
 * A node that relays a room another node ticks holds, per snapshot and
 * audience, only what the owner sent it: the views (shift, sample) its
 * clients' frames need, with the super-tiles they look at, and every
 * tile's count of boids (the plans weigh them). Such a state builds no
 * view: a view it was not given is NULL, and its parts, keys and deltas,
 * are encoded from what it holds as the owner's are. */

struct tileneed;

/* One view as the owner sent it: super-tile st's boids (ascending ids) at
 * [start[st], start[st + 1]) of the arrays, only where held[st]; at a
 * sample above 0 each held super-tile's field. */
struct tiles_given_view {
    uint8_t shift, sample;
    const uint8_t *held;   /* gc * gr */
    const uint32_t *start; /* gc * gr + 1, start[0] = 0 */
    const uint32_t *id;
    const uint16_t *qx, *qy;
    const uint8_t *heading, *group;
    const struct proto_v3_field *field; /* gc * gr (those not held ignored); NULL at sample 0 */
};

struct tiles_given {
    const struct tiles_grid *grid;
    uint32_t seq;
    uint64_t tick;
    const uint32_t *counts; /* cols * rows: the audience's boids in each tile */
    const struct tiles_given_view *views;
    uint32_t nviews; /* each (shift, sample) once */
    /* Where its clients' plans are noted (view_frame()), and for whom. */
    struct tileneed *need;
    unsigned audience;
};

/* A relay's tilestate of in (copied; a reference on in->need taken), with
 * one reference for the caller. NULL if memory ran out or a view is
 * malformed (starts that go down, boids in a super-tile not held). */
struct tilestate *tiles_state_given(const struct tiles_given *in);

/* True if s holds super-tiles [rect_x, + cols) x [rect_y, + rows) (wrapping)
 * of its view at shift and sample: always for a state of the room's own. */
bool tiles_state_holds(const struct tilestate *s, unsigned shift, unsigned sample, uint32_t rect_x,
                       uint32_t rect_y, uint32_t cols, uint32_t rows);

/* A relay's state: where its clients' plans are noted and their audience
 * (*audience); NULL for a state of the room's own. */
struct tileneed *tiles_state_need(const struct tilestate *s, unsigned *audience);

#endif
