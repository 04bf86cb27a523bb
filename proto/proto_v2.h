/*
 * proto_v2 — snapshot frames of protocol version 2 (PROTOCOL.md §11):
 * key frames and predictive delta frames, compressed once with raw
 * deflate, both directions.
 *
 * A room quantizes each snapshot once into a struct proto_v2_state (the
 * same quantization as version 1) and seals it with its state hash. From
 * that state and the states of one or two earlier snapshots (the bases)
 * the encoder writes a key frame (absolute) or a delta frame (residuals
 * against a prediction from the bases). Every frame of one snapshot
 * decodes to the same state, so the room encodes each kind at most once
 * and hands the same bytes to every client whose decoder holds the bases
 * (proto_v2_plan() says which frames to encode, proto_v2_pick() which one
 * a client gets). A client's decoder keeps the states of the last
 * PROTO_V2_HISTORY frames it decoded and refuses a delta whose bases it
 * does not hold, a body that does not inflate to the announced size, and
 * a reconstruction whose hash differs from the one in the frame.
 *
 * Never: I/O, clocks (the server time, tick and sim_hash come in with the
 * state), threads, the simulation's types. Memory is allocated only by the
 * _create() functions (the encoder's planes, the decoder's states and its
 * zlib inflate stream; zlib allocates its window on the first decode). The
 * decoder trusts nothing: every length, count and value is checked before
 * use, no byte outside buf[0..len) is read, and no inflated byte is written
 * past the size announced in the header.
 *
 * Threading: an encoder or a decoder is used by one thread at a time;
 * different objects are independent. The plain functions are reentrant.
 *
 * Errors: negative enum proto_status (proto.h); constructors return NULL
 * and a static reason in *err.
 */
#ifndef FLOCKD_PROTO_V2_H
#define FLOCKD_PROTO_V2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "proto_snapshot.h"

#define PROTO_V2_VERSION     2          /* header byte 2 */
#define PROTO_V2_SUBPROTOCOL "flock.v2" /* WebSocket subprotocol of version 2 */
#define PROTO_V2_HEADER_SIZE 80
#define PROTO_V2_KIND_KEY    1   /* header byte 3: absolute, self-contained */
#define PROTO_V2_KIND_DELTA  2   /* header byte 3: residuals against one or two bases */
#define PROTO_V2_MAX_GAP     255 /* a base is at most this many sequence numbers older */
/* A decoder keeps the states of at least this many frames it decoded; a
 * server names as bases only frames among the last this many it sent. */
#define PROTO_V2_HISTORY 4
/* Most frames proto_v2_plan() asks for per snapshot: one key and twenty
 * deltas (every pair of gaps 1..4, and one base 1..4 back). */
#define PROTO_V2_PLAN_MAX 21
/* The oldest base a plan's delta names: seq - 8 (gaps 4 and 4). */
#define PROTO_V2_PLAN_REACH 8

/*
 * One snapshot's quantized state: what every frame of it decodes to. The
 * arrays belong to whoever fills the struct (the room for encoding, the
 * decoder for decoded states); for encoding they must not change while a
 * frame is written from them.
 */
struct proto_v2_state {
    uint32_t seq;            /* the room's snapshot sequence number, +1 per snapshot */
    uint64_t tick;           /* the room's tick this state belongs to */
    uint64_t server_time_us; /* server wall clock when encoded, µs since the Unix epoch */
    uint64_t sim_hash;       /* hash of the exact simulation state of the tick (opaque) */
    uint64_t state_hash;     /* proto_v2_state_hash() of the boids below */
    float width, height;     /* world size, finite and > 0 */
    uint32_t epoch;          /* boid-order epoch (PROTOCOL.md §4.4) */
    uint8_t flags;           /* PROTO_SNAPSHOT_FLAG_PAUSED | PROTO_SNAPSHOT_FLAG_WRAP */
    uint32_t count;          /* boids */
    uint16_t *qx, *qy;       /* quantized positions (§4.4) */
    uint8_t *heading;        /* quantized headings (§4.4) */
    uint8_t *group;          /* groups, ascending */
    uint32_t obstacle_count;
    struct proto_obstacle *obstacles; /* ids strictly ascending from 1 */
    uint32_t target_count;
    struct proto_target *targets; /* groups strictly ascending */
};

/*
 * The 64-bit hash of a state's boids that every frame carries (§11.6): two
 * MurmurHash3_x86_32 lanes over 8 bytes per boid (qx, qy, heading, group,
 * two zero bytes), seeds 0 (low half) and 1 (high half). Covers count, qx,
 * qy, heading and group; not obstacles, targets or header fields.
 */
uint64_t proto_v2_state_hash(const struct proto_v2_state *s);

/* Sets s->state_hash from the boids; call once after filling a state. */
void proto_v2_state_seal(struct proto_v2_state *s);

/*
 * The heading (0..255, PROTOCOL.md §4.4) of the world-space direction
 * (x, y), both below 2^23 in magnitude and not both zero, computed with
 * integers only so every decoder predicts the same value (§11.4).
 */
uint8_t proto_v2_heading_of(int32_t x, int32_t y);

/* ---- frames ------------------------------------------------------------- */

/* The fixed header of a frame (§11.2), as proto_v2_decode_header() reads it. */
struct proto_v2_header {
    uint8_t kind, flags;
    uint8_t gap1, gap0; /* base1 = seq - gap1, base0 = base1 - gap0; 0 = no such base */
    uint16_t run_count, obstacle_count, target_count;
    uint32_t seq, epoch, boid_count;
    uint32_t packed_len; /* compressed body bytes */
    uint32_t plain_len;  /* body bytes once inflated */
    uint64_t tick, server_time_us, sim_hash, state_hash;
    float width, height;
};

/*
 * Largest frame of any kind for these counts: sizes an output buffer for
 * proto_v2_encode(). Never below the exact size of any frame it can write.
 */
size_t proto_v2_frame_max_size(uint32_t boids, uint32_t runs, uint32_t obstacles, uint32_t targets);

/*
 * Checks the header of buf[0..len) and that len is exactly the size its
 * counts imply (§11.7 steps 1-7) and fills *h; the body is neither read
 * nor inflated. Returns 0 or PROTO_E_TRUNCATED, _BAD_MAGIC, _BAD_VERSION,
 * _BAD_TYPE (unknown kind), _BAD_VALUE, _BAD_LENGTH.
 */
int proto_v2_decode_header(const uint8_t *buf, size_t len, struct proto_v2_header *h);

/* The fields h shares with version 1's header (§11.2: its first 44 bytes
 * are laid out alike), as a struct proto_snapshot_header: version 2, type
 * the frame's kind. */
struct proto_snapshot_header proto_v2_common_header(const struct proto_v2_header *h);

/* ---- encoding (server) -------------------------------------------------- */

struct proto_v2_encoder;

/*
 * An encoder for states of up to max_boids boids (1..4194304): scratch for
 * the residual planes (10 bytes per boid), allocated here once. NULL on
 * failure with a static reason in *err. Free with proto_v2_encoder_destroy().
 */
struct proto_v2_encoder *proto_v2_encoder_create(uint32_t max_boids, const char **err);
void proto_v2_encoder_destroy(struct proto_v2_encoder *e);

/*
 * Writes one frame of state s into buf[0..cap): a key frame when base1 is
 * NULL, else a delta predicted from base1 (and base0 when not NULL, the
 * second-order prediction). Bases are earlier states of the same epoch and
 * boid count, base1->seq = s->seq - gap1 and base0->seq = base1->seq -
 * gap0 with gaps in 1..PROTO_V2_MAX_GAP. s->state_hash must be sealed.
 * Returns the frame's length, PROTO_E_NOSPACE when cap is too small,
 * PROTO_E_UNENCODABLE when s breaks a format rule (as in
 * proto_snapshot_encode(), or more boids than the encoder's max_boids) or
 * the bases do not fit s. The body is written by proto_deflate.h.
 */
ptrdiff_t proto_v2_encode(struct proto_v2_encoder *e, const struct proto_v2_state *s,
                          const struct proto_v2_state *base1, const struct proto_v2_state *base0,
                          uint8_t *buf, size_t cap);

/* ---- serving many clients (server) -------------------------------------- */

/* One frame to encode for a snapshot: a key (gap1 = 0) or a delta. */
struct proto_v2_plan_frame {
    uint8_t gap1, gap0; /* as in the header: 0 = no such base */
};

/* The frames of one snapshot, key first, then deltas by preference. */
struct proto_v2_plan {
    uint32_t seq;
    unsigned count;
    struct proto_v2_plan_frame frame[PROTO_V2_PLAN_MAX];
};

/*
 * Which frames to encode for snapshot seq when the room holds the states of
 * the `run` snapshots just before it with the same epoch (seq-1 .. seq-run;
 * 0 when the epoch changed at seq): always a key frame, then at most
 * max_deltas deltas (clamped to PROTO_V2_PLAN_MAX - 1), the first of these
 * whose bases the room holds, in this order: on (seq-1, seq-2) for clients
 * that keep up; on (seq-2, seq-4) for clients that take every other frame;
 * on (seq-1, seq-3) for clients that skipped one frame; then on two bases
 * (seq-g1, seq-g1-g0) for every other pair of gaps 1..4, the smaller g1
 * first, then the smaller g0 (clients served every second or third
 * snapshot, irregularly, as on a server whose cores are full); last on one
 * base seq-1 .. seq-4 (the first frames after an epoch change, or a
 * client's first key frame).
 */
void proto_v2_plan(uint32_t seq, uint32_t run, unsigned max_deltas, struct proto_v2_plan *out);

/*
 * The index in p->frame of the frame to send a client that has been sent
 * the frames sent[0..n) of the same stream, newest first (at most
 * PROTO_V2_HISTORY are looked at): the first delta whose bases are all
 * among them, else the key frame (0).
 */
unsigned proto_v2_pick(const struct proto_v2_plan *p, const uint32_t *sent, size_t n);

/* ---- decoding (clients, tests) ------------------------------------------ */

struct proto_v2_decoder;

/*
 * A decoder for frames of up to max_boids boids and max_obstacles
 * obstacles, with room for PROTO_V2_HISTORY decoded states and one being
 * decoded. NULL on failure with a static reason in *err. Free with
 * proto_v2_decoder_destroy().
 */
struct proto_v2_decoder *proto_v2_decoder_create(uint32_t max_boids, uint32_t max_obstacles,
                                                 const char **err);
void proto_v2_decoder_destroy(struct proto_v2_decoder *d);

/* Forgets every state held: a new stream starts (a welcome, another room). */
void proto_v2_decoder_forget(struct proto_v2_decoder *d);

/*
 * Decodes and validates one frame (§11.7) and keeps its state as a base
 * for later frames. On success returns 0 and points *out at the decoded
 * state, owned by the decoder and valid until the next call on d. On
 * failure returns the first check that failed: a header code of
 * proto_v2_decode_header(), PROTO_E_OVER_LIMIT (counts above the
 * decoder's limits), PROTO_E_BAD_VALUE (runs, obstacles, targets),
 * PROTO_E_NO_BASE (a base not held, or of another epoch or boid count),
 * PROTO_E_BAD_BODY (the body does not inflate to exactly plain_len bytes,
 * or its planes are inconsistent), PROTO_E_HASH_MISMATCH, or
 * PROTO_E_INTERNAL if zlib cannot reset its stream; the states held are
 * unchanged and *out is not set.
 */
int proto_v2_decode(struct proto_v2_decoder *d, const uint8_t *buf, size_t len,
                    const struct proto_v2_state **out);

/* True if the decoder holds a state of sequence number seq. */
bool proto_v2_decoder_has(const struct proto_v2_decoder *d, uint32_t seq);

#endif
