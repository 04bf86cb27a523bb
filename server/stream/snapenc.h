/*
 * snapenc — one room's snapshots, encoded once per snapshot in each kind
 * its clients take: a version 1 snapshot (PROTOCOL.md §4) and the version
 * 2 frames proto_v2_plan() lists for it (§11.8: a key frame and deltas on
 * the bases the room holds), all in one refcounted, immutable struct frame
 * that every client of the room shares. Which kinds to encode comes in
 * with each snapshot (the room asks for the kinds its clients took
 * lately), so a room without version 2 viewers never quantizes or hashes
 * for version 2, and a kind nobody takes costs nothing.
 *
 * Between snapshots it keeps what version 2 needs: the quantized states
 * of the last snapshots, as far back as the bases of the kinds wanted
 * reach (2, up to PROTO_V2_HISTORY: a delta on (seq-2, seq-4) needs 4),
 * and how many snapshots run back unbroken in the current epoch. The plan
 * lists every kind that run allows, so a client that falls behind asks
 * for the deeper kind it needs; that kind is encoded once the states it
 * names are kept again. A snapshot that wants no version 2 kind breaks
 * the run: the next one offers only the key frame and deltas on itself.
 *
 * This is where the simulation meets the snapshot codecs: the world's view
 * is turned into the codecs' plain views here (obstacles, active targets,
 * quantized boids, sim_hash()).
 *
 * Never: reads a clock itself (the wall time comes in; durations only
 * through the clock the config names), locks, sockets, knows clients.
 * Threading: one snapenc is used by one thread at a time (its room's
 * tick); a frame it returns is immutable, its refcount atomic, so any
 * thread may read it and drop its reference.
 *
 * Memory: snapenc_create() allocates the view arrays; version 2's encoder
 * is allocated at the first snapshot that wants it and stays until
 * snapenc_destroy(); each state kept is an allocation at capacity (5 bytes
 * a boid: qx, qy, heading), one more is kept spare, the others freed. Each frame is one allocation
 * of the bytes it holds (its parts are encoded into it, not copied), freed by its last
 * frame_release().
 */
#ifndef FLOCKD_SNAPENC_H
#define FLOCKD_SNAPENC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "proto_v2.h"
#include "sim.h"
#include "tiles.h"

struct snapenc_config {
    uint32_t capacity;      /* most boids of the world */
    uint32_t max_obstacles; /* most obstacles of the world */
    size_t pre;             /* headroom to leave before each part */
    /* Times each kind's encoding into the stats (e.g. clock_mono_ns, or a
     * CPU clock in a benchmark); NULL: no timing. */
    int64_t (*clock_ns)(void);
    /* Version 3: the room's tile grid, and in a room with teams the
     * snapshots by which rts spectators are delayed (0: none). */
    struct tiles_grid grid;
    uint32_t delay;
};

/* What the encodings cost so far, by kind. */
struct snapenc_stats {
    uint64_t frames[FRAME_KINDS];
    uint64_t bytes[FRAME_KINDS];
    uint64_t ns[FRAME_KINDS];
    uint64_t prepare_ns;          /* version 2: quantizing, sim_hash() and the state hash */
    uint64_t v3_snapshots, v3_ns; /* version 3: snapshots cut into tiles, and what it took */
};

struct snapenc;

/* NULL on failure with a static reason in *err; free with snapenc_destroy(). */
struct snapenc *snapenc_create(const struct snapenc_config *cfg, const char **err);
void snapenc_destroy(struct snapenc *e);

/* One snapshot to encode. */
struct snapenc_input {
    const struct sim_world *world; /* its state now */
    uint64_t seq;                  /* one more than the previous snapshot's */
    int64_t wall_us;               /* stamped into every part */
    bool paused;
    unsigned want;  /* bit k set: encode kind k if this snapshot allows it; FRAME_WANT_V3: tiles */
    unsigned teams; /* version 3 in an rts room: teams 1..teams get a fogged audience each */
    const struct sim_fork *fork; /* threads to cut version 3's tiles over (tiles.h); may be NULL */
};

/*
 * Encodes the world's snapshot in every kind `want` names that it allows
 * (a delta only on bases held) into a new frame with one reference, the
 * caller's; kinds not asked for have len 0. With FRAME_WANT_V3 the frame
 * also holds its version 3 tilesets (frame_v3): the audience of all and,
 * with teams, each team's fog; their parts are encoded when a client
 * first needs one (tiles.h). NULL if memory ran out (the snapshot is
 * lost; version 2 then starts again on a key frame).
 */
struct frame *snapenc_encode(struct snapenc *e, const struct snapenc_input *in);

void snapenc_stats(const struct snapenc *e, struct snapenc_stats *out);

/* Audience a's newest tilestate (0: every boid, t: team t), a reference for
 * the caller; NULL when no snapshot was cut into tiles lately. */
struct tilestate *snapenc_state(const struct snapenc *e, unsigned audience);

#endif
