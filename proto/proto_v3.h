/*
 * proto_v3 — view frames of protocol version 3 (PROTOCOL.md §12): a room's
 * state cut into tiles, each tile encoded once per snapshot (a key, or a
 * delta on the same tile one or two frames earlier) and spliced into the
 * frame of every client that looks at it.
 *
 * The server holds, per snapshot and audience, each (super-)tile's boids
 * in id order as a struct proto_v3_tile. proto_v3_encode_part() writes one
 * tile's part (§12.5) from it and its bases; a client's frame is a header
 * (proto_v3_put_header()), the obstacles and targets, then the parts of
 * the tiles of its rect, copied as they are. The tile hash of each part
 * (proto_v3_tile_hash()) is summed into the frame's header.
 *
 * A client's decoder keeps the last PROTO_V3_HISTORY frames it decoded
 * (every part's boids, by super-tile) and refuses a frame whose deltas
 * name a base it does not hold, whose bodies do not inflate to their
 * announced sizes or sections, or whose tile hashes do not sum to the
 * header's.
 *
 * Never: I/O, clocks, threads, the simulation's types. Memory is
 * allocated only by the _create() functions. The decoder trusts nothing:
 * every length, count and value is checked before use.
 * Threading: an encoder or decoder is used by one thread at a time; the
 * plain functions are reentrant.
 * Errors: negative enum proto_status (proto.h); constructors return NULL
 * and a static reason in *err.
 */
#ifndef FLOCKD_PROTO_V3_H
#define FLOCKD_PROTO_V3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "proto_snapshot.h"

#define PROTO_V3_VERSION     3
#define PROTO_V3_SUBPROTOCOL "flock.v3"
#define PROTO_V3_HEADER_SIZE 56
#define PROTO_V3_KIND_FRAME  1 /* header byte 3 */
#define PROTO_V3_HISTORY     4 /* frames a decoder keeps; bases a server may name */
#define PROTO_V3_MAX_SHIFT   7
#define PROTO_V3_MAX_SAMPLE  16
#define PROTO_V3_MAX_GAP     15
#define PROTO_V3_MAX_TILES   255 /* tile columns, rows; super-tiles across a rect */
#define PROTO_V3_FIELD_CELLS 4   /* a field's cells across and down a super-tile */
#define PROTO_V3_FIELD_MAX   64  /* most cells of a field (cells * cells): up to 8 across */

/* Header flags (§12.5): PROTO_SNAPSHOT_FLAG_PAUSED, _WRAP and these. */
#define PROTO_V3_FLAG_FOGGED  0x04u /* a team's audience: some boids are hidden */
#define PROTO_V3_FLAG_DELAYED 0x08u /* spectators: the room as it was delay_s ago */

/* Part kinds (§12.5), bits 0-1 of a part's first byte; bit 2: a field
 * follows. */
enum { PROTO_V3_PART_EMPTY = 0, PROTO_V3_PART_KEY = 1, PROTO_V3_PART_DELTA = 2 };
#define PROTO_V3_PART_FIELD 0x04u

/* The sampling test's hash of a boid id (§12.2): MurmurHash3's finalizer. */
uint32_t proto_v3_mix(uint32_t id);

/* True if the boid with this id is in sample s (mix(id) mod 2^s == 0). */
static inline bool proto_v3_in_sample(uint32_t id, unsigned s)
{
    return s == 0 || (proto_v3_mix(id) & ((1u << s) - 1u)) == 0;
}

/* The tile column (row) of a quantized coordinate on a grid of n (§12.2). */
static inline uint32_t proto_v3_tile_of(uint16_t q, uint32_t n)
{
    return (uint32_t)q * n >> 16;
}

/* A field (§12.6): cells * cells cells, row by row. */
struct proto_v3_field {
    uint32_t cells;
    uint32_t count[PROTO_V3_FIELD_MAX]; /* boids the audience sees in the cell */
    int8_t vx[PROTO_V3_FIELD_MAX];      /* mean velocity / vscale, -127..127 */
    int8_t vy[PROTO_V3_FIELD_MAX];
};

/*
 * One (super-)tile's boids at one snapshot, ascending by id. The arrays
 * belong to whoever fills the struct and must not change while a part is
 * written from them.
 */
struct proto_v3_tile {
    uint32_t count;
    const uint32_t *id;
    const uint16_t *qx, *qy;
    const uint8_t *heading, *group;
    const struct proto_v3_field *field; /* NULL: none */
};

/* The tile hash (§12.7): MurmurHash3_x86_32, seed 0, 12 bytes per boid. */
uint32_t proto_v3_tile_hash(const struct proto_v3_tile *t);

/* ---- frames -------------------------------------------------------------- */

/* A frame's header (§12.5). */
struct proto_v3_header {
    uint8_t flags, shift, sample;
    uint8_t cols, rows;                    /* the tile grid */
    uint8_t rect_x, rect_y;                /* the rect's first super-tile */
    uint8_t rect_cols, rect_rows;          /* its size in super-tiles */
    uint16_t obstacle_count, target_count; /* sections after the header */
    uint32_t seq, room_boids, frame_hash;
    uint64_t tick, server_time_us;
    float width, height;
};

/* Writes h into p[0..PROTO_V3_HEADER_SIZE). */
void proto_v3_put_header(uint8_t *p, const struct proto_v3_header *h);

/* Super-tiles across (down) the grid at shift k: ceil(n / 2^k). */
static inline uint32_t proto_v3_grid_at(uint32_t n, unsigned shift)
{
    return (n + (1u << shift) - 1u) >> shift;
}

/* ---- encoding (server) --------------------------------------------------- */

struct proto_v3_encoder;

/*
 * An encoder for tiles of up to max_boids boids (1..4194304): scratch for
 * one part, allocated here once. NULL on failure with a static reason in
 * *err. Free with proto_v3_encoder_destroy().
 */
struct proto_v3_encoder *proto_v3_encoder_create(uint32_t max_boids, const char **err);
void proto_v3_encoder_destroy(struct proto_v3_encoder *e);

/*
 * Most bytes a part of a tile of n boids with a base of b boids (0 for a
 * key) and a field of `cells` cells across takes: sizes the buffer of
 * proto_v3_encode_part().
 */
size_t proto_v3_part_max_size(uint32_t n, uint32_t b, uint32_t cells);

/* What a delta part is predicted from. */
struct proto_v3_bases {
    const struct proto_v3_tile *b1; /* the same super-tile gap1 frames earlier */
    const struct proto_v3_tile *b0; /* gap0 frames before b1, or NULL: one base */
    uint8_t gap1, gap0;
    uint64_t tick, tick1, tick0; /* the ticks of the frame and of its bases */
};

/*
 * The gaps a delta's prediction scales by (§12.5): the ticks from base 0
 * to base 1 (*g0) and from base 1 to the frame (*g1) when each is 1..255
 * (snapshots need not be evenly spaced in ticks), else the frames' gaps.
 */
static inline void proto_v3_pred_gaps(uint64_t tick, uint64_t tick1, uint64_t tick0, unsigned gap1,
                                      unsigned gap0, int32_t *g1, int32_t *g0)
{
    bool ticks = tick > tick1 && tick1 > tick0 && tick - tick1 <= 255 && tick1 - tick0 <= 255;
    *g1 = ticks ? (int32_t)(tick - tick1) : (int32_t)gap1;
    *g0 = ticks ? (int32_t)(tick1 - tick0) : (int32_t)gap0;
}

/*
 * Writes tile t's part into buf[0..cap): empty when t holds no boid and no
 * field; a key when b is NULL; else a delta on b. width and height are the
 * world's (the heading prediction's aspect, §11.4). Returns the part's
 * length, PROTO_E_NOSPACE when cap is too small, or PROTO_E_UNENCODABLE
 * (ids not ascending or 0, more boids than the encoder takes, gaps out of
 * range, a field of another size).
 */
ptrdiff_t proto_v3_encode_part(struct proto_v3_encoder *e, const struct proto_v3_tile *t,
                               const struct proto_v3_bases *b, float width, float height,
                               uint8_t *buf, size_t cap);

/* ---- decoding (clients, tests) -------------------------------------------- */

/* One decoded part: a super-tile of the frame's rect and its boids. */
struct proto_v3_part {
    uint32_t tx, ty; /* its super-tile column and row (in the frame's shift) */
    uint32_t count;
    const uint32_t *id; /* ascending */
    const uint16_t *qx, *qy;
    const uint8_t *heading, *group;
    const struct proto_v3_field *field; /* NULL: the part has none */
};

/* A decoded frame, owned by its decoder. */
struct proto_v3_frame {
    struct proto_v3_header h;
    const struct proto_obstacle *obstacles; /* h.obstacle_count */
    const struct proto_target *targets;     /* h.target_count */
    uint32_t part_count, boid_count;        /* boid_count: every part's */
    const struct proto_v3_part *parts;      /* rect order */
};

struct proto_v3_decoder;

/*
 * A decoder for frames of up to max_boids boids (every part together),
 * max_parts parts and max_obstacles obstacles, whose fields have
 * field_cells cells across (the welcome's stream.field.cells, 1..8). NULL
 * on failure with a static reason in *err. Free with
 * proto_v3_decoder_destroy().
 */
struct proto_v3_decoder *proto_v3_decoder_create(uint32_t max_boids, uint32_t max_parts,
                                                 uint32_t max_obstacles, uint32_t field_cells,
                                                 const char **err);
void proto_v3_decoder_destroy(struct proto_v3_decoder *d);

/* Forgets every frame held: a new stream starts (a welcome, another room). */
void proto_v3_decoder_forget(struct proto_v3_decoder *d);

/*
 * Decodes and validates one frame (§12.7) and keeps it as a base for later
 * frames. On success returns 0 and points *out at the decoded frame, valid
 * until the next call on d. On failure returns PROTO_E_TRUNCATED,
 * _BAD_MAGIC, _BAD_VERSION, _BAD_TYPE, _BAD_VALUE, _OVER_LIMIT (more than
 * the decoder's limits), _NO_BASE, _BAD_BODY, _BAD_LENGTH,
 * _HASH_MISMATCH, or _INTERNAL (zlib); the frames held are unchanged and
 * *out is not set.
 */
int proto_v3_decode(struct proto_v3_decoder *d, const uint8_t *buf, size_t len,
                    const struct proto_v3_frame **out);

/* ---- one part alone (the nodes of a cluster pass parts between them) ------ */

/* The bases a lone part may name: base[g - 1] is its super-tile g frames
 * back (NULL: not held) and tick[g - 1] that frame's tick, g = 1..4. */
struct proto_v3_part_bases {
    const struct proto_v3_part *base[PROTO_V3_HISTORY];
    uint64_t tick[PROTO_V3_HISTORY];
};

/*
 * Decodes the part at buf[*at..len) as proto_v3_decode() decodes each part
 * of a frame (§12.7 step 4) whose header would be h (its tick, width and
 * height are read), on b's bases, into the caller's arrays out->id, qx, qy,
 * heading and group (room for the decoder's max_boids each) and *field
 * (out->field points at it if the part has one); *at moves past the part.
 * 0, or PROTO_E_TRUNCATED, _BAD_VALUE, _OVER_LIMIT, _NO_BASE, _BAD_BODY or
 * _INTERNAL. The decoder's frames are neither used nor changed.
 */
int proto_v3_decode_part(struct proto_v3_decoder *d, const uint8_t *buf, size_t len, size_t *at,
                         const struct proto_v3_part_bases *b, const struct proto_v3_header *h,
                         struct proto_v3_part *out, struct proto_v3_field *field);

/*
 * What a frame holds, read from its header and its parts' fixed fields
 * without a body decoded (§12.5): enough to size a decoder, count a
 * frame's parts and boids, and check its framing.
 */
struct proto_v3_shape {
    uint32_t parts;                /* rect_cols * rect_rows */
    uint32_t keys, deltas, fields; /* parts that are keys, deltas, that carry a field */
    uint64_t boids;                /* every part's count */
};

/*
 * Reads buf[0..len)'s header into *h and walks its sections and parts
 * into *out, decoding nothing and holding no base: checks §12.7 steps 1,
 * 2, the lengths of step 3, each part's fixed fields (step 4: in bounds,
 * kind and gaps, a key's plain_len at most 1032 * packed_len) and step 5.
 * Returns 0 or the code proto_v3_decode() would return for the first of
 * those checks that fails (PROTO_E_TRUNCATED, _BAD_MAGIC, _BAD_VERSION,
 * _BAD_TYPE, _BAD_VALUE, _BAD_LENGTH). A frame it refuses, the decoder
 * refuses; one it accepts, the decoder may still refuse (bases, bodies,
 * obstacles' values, the hash). Reentrant; no allocation.
 */
int proto_v3_scan(const uint8_t *buf, size_t len, struct proto_v3_header *h,
                  struct proto_v3_shape *out);

#endif
