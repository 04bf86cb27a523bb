/*
 * proto_snapshot — the binary snapshot (PROTOCOL.md §4), both directions.
 *
 * The server encodes each room's state once per snapshot from a plain view
 * (struct proto_snapshot_view: arrays, counts, world size, flags; the room
 * adapts its world to it) into one buffer that every client of the room
 * receives. Clients (and the tests) decode a buffer into caller-provided
 * arrays. The layout is fixed and little-endian: a 44-byte header, then 5
 * bytes per group run, exactly 5 bytes per boid (u16 x, u16 y, u8
 * heading), 16 per obstacle, 9 per active target.
 *
 * Never: I/O, clocks (the server's time comes in through the view),
 * allocation, globals, the simulation's types. The decoder trusts nothing:
 * every length, count and value is checked before use and no byte outside
 * buf[0..len) is read.
 *
 * Memory: the codec allocates nothing; every buffer and array belongs to
 * the caller, sized with proto_snapshot_size()/_max_size() or from a
 * header read by proto_snapshot_decode_header().
 *
 * Threading: reentrant; a view's arrays must not be mutated while it is
 * encoded.
 *
 * Errors: negative enum proto_status (proto.h).
 */
#ifndef FLOCKD_PROTO_SNAPSHOT_H
#define FLOCKD_PROTO_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define PROTO_SNAPSHOT_TYPE          1 /* header byte 3 */
#define PROTO_SNAPSHOT_HEADER_SIZE   44
#define PROTO_SNAPSHOT_RUN_SIZE      5
#define PROTO_SNAPSHOT_BOID_SIZE     5
#define PROTO_SNAPSHOT_OBSTACLE_SIZE 16
#define PROTO_SNAPSHOT_TARGET_SIZE   9
#define PROTO_SNAPSHOT_MAX_RUNS      PROTO_GROUPS /* one per group */
#define PROTO_SNAPSHOT_MAX_OBSTACLES 65535        /* u16 count */
#define PROTO_SNAPSHOT_MAX_TARGETS   PROTO_GROUPS /* one per group */

#define PROTO_SNAPSHOT_FLAG_PAUSED 0x01u
#define PROTO_SNAPSHOT_FLAG_WRAP   0x02u

/* An obstacle as the snapshot carries it (both directions). */
struct proto_obstacle {
    uint32_t id;
    float x, y, r;
};

/* A group's seek target as the snapshot carries it (both directions). */
struct proto_target {
    uint8_t group;
    float x, y;
};

/* ---- encoding (server) ---- */

/*
 * Everything one snapshot carries, as plain values and arrays the caller
 * owns. Boids are in the order clients index them, sorted by group.
 */
struct proto_snapshot_view {
    uint64_t tick;
    uint64_t server_time_us; /* server wall clock, microseconds since the Unix epoch */
    uint32_t epoch;          /* bumped whenever boid order or count changes */
    float width, height;     /* world size, world units */
    int paused;              /* the room is paused */
    int wrap;                /* edges wrap (torus); 0 = contain */
    uint32_t count;          /* boids */
    const float *x, *y;      /* count positions, world units */
    const float *vx, *vy;    /* count velocities: only their direction is sent */
    const uint8_t *group;    /* count group ids, ascending */
    uint32_t obstacle_count;
    const struct proto_obstacle *obstacles; /* ids strictly ascending, from 1 */
    uint32_t target_count;
    const struct proto_target *targets; /* active targets only, groups strictly ascending */
};

/* Exact encoded size for these counts. */
size_t proto_snapshot_size(uint32_t boids, uint32_t runs, uint32_t obstacles, uint32_t targets);

/* Largest snapshot of any world with these capacities (for preallocation). */
size_t proto_snapshot_max_size(uint32_t capacity, uint32_t max_obstacles);

/*
 * Encodes the view into buf[0..cap). Returns the number of bytes written
 * (always proto_snapshot_size() of the view's counts) or a negative code:
 * PROTO_E_NOSPACE if cap is too small (nothing useful written),
 * PROTO_E_UNENCODABLE if the view breaks a format rule (groups not in
 * ascending order, more than 65535 obstacles, obstacle ids not ascending or
 * zero, target groups not strictly ascending, a non-finite or non-positive
 * size, a non-finite obstacle or target).
 */
ptrdiff_t proto_snapshot_encode(const struct proto_snapshot_view *view, uint8_t *buf, size_t cap);

/*
 * Quantizers the encoder uses, public so that tools and tests can predict
 * bytes. Position: q = floor(v * 65536 / size) clamped to [0, 65535]
 * (negative or NaN v gives 0). Heading: round(atan2(vy, vx) * 128 / pi)
 * mod 256, half away from zero; a zero or non-finite velocity gives 0.
 */
uint16_t proto_quantize_pos(float v, float size);
/* Where the heading step changes within the first octant (the ratio
 * min(|vx|, |vy|) / max(|vx|, |vy|) at each step's rounding boundary). */
extern const double proto_heading_bounds[32];

uint8_t proto_quantize_heading(float vx, float vy);

/* Centre of quantum q: (q + 0.5) * size / 65536. */
double proto_dequantize_pos(uint16_t q, float size);
/* Heading in radians, h * pi / 128, in [0, 2 pi); 0 = +x, pi/2 = +y. */
double proto_dequantize_heading(uint8_t h);

/* ---- decoding (clients, tests) ---- */

struct proto_snapshot_header {
    uint8_t version, type, flags;
    uint64_t tick, server_time_us;
    float width, height;
    uint32_t epoch, boid_count;
    uint16_t run_count, obstacle_count, target_count;
};

struct proto_run {
    uint8_t group;
    uint32_t count;
};

struct proto_boid {
    uint16_t qx, qy;
    uint8_t heading;
    uint8_t group; /* from the runs, not on the wire per boid */
};

/*
 * Decoder output. The caller points the arrays at its own memory and sets
 * each capacity (entries); the decoder fills the header and the first
 * count entries of each array. An array may be NULL with capacity 0 if the
 * snapshot has none of those.
 */
struct proto_snapshot {
    struct proto_snapshot_header h;
    struct proto_run *runs;
    size_t runs_cap;
    struct proto_boid *boids;
    size_t boids_cap;
    struct proto_obstacle *obstacles;
    size_t obstacles_cap;
    struct proto_target *targets;
    size_t targets_cap;
};

/*
 * Checks the header of buf[0..len) and that len is exactly the size its
 * counts imply, and fills *h; the body is not read. Lets a client size its
 * arrays before decoding. Returns 0 or PROTO_E_TRUNCATED, _BAD_MAGIC,
 * _BAD_VERSION, _BAD_TYPE, _BAD_LENGTH, _BAD_VALUE (in the order of the
 * checks in PROTOCOL.md §4.6).
 */
int proto_snapshot_decode_header(const uint8_t *buf, size_t len, struct proto_snapshot_header *h);

/*
 * Decodes and validates the whole snapshot into *out. Returns 0, one of the
 * header codes above, PROTO_E_OVER_LIMIT if a count exceeds its array's
 * capacity, or PROTO_E_BAD_VALUE for a body that breaks a rule (runs not
 * strictly ascending or empty, runs not summing to boid_count, obstacle
 * ids not strictly ascending from 1, non-finite floats, radius <= 0,
 * targets not strictly ascending). On failure *out's contents are
 * unspecified.
 */
int proto_snapshot_decode(const uint8_t *buf, size_t len, struct proto_snapshot *out);

#endif
