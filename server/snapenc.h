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

#include "proto_v2.h"
#include "sim.h"

/*
 * The kinds of frame a snapshot may be encoded as: version 1, then the
 * version 2 frames in the order of a full proto_v2_plan() (the key frame,
 * then the deltas by preference).
 */
enum {
    SNAPENC_V1 = 0,
    SNAPENC_KEY = 1,
    SNAPENC_KINDS = 1 + PROTO_V2_PLAN_MAX,
};

/* The longest WebSocket header of a server's binary message (RFC 6455
 * §5.2: opcode, 127, a 64-bit length). */
#define FRAME_WS_HEAD_MAX 10

/* One encoding of a snapshot inside its frame: len bytes at data + off
 * (len 0: not encoded), preceded by the head bytes of their WebSocket
 * header (a final, unmasked binary message of len bytes), written once
 * when the frame is made: every client is sent the same bytes, and no
 * thread writes into a frame it shares. head is 0 when the frame's
 * headroom is shorter than FRAME_WS_HEAD_MAX. */
struct frame_part {
    size_t off, len;
    unsigned head;
};

/* One snapshot in every kind it was encoded as; shared by every client. */
struct frame {
    atomic_uint refs;
    uint64_t seq; /* 1, 2, 3 ... per room; a version 2 frame carries its low 32 bits */
    uint64_t tick;
    int64_t time_us; /* server time stamped into the snapshot */
    size_t pre;      /* headroom before each part (>= FRAME_WS_HEAD_MAX to be sent) */
    /* The version 2 frames this snapshot allows (their bases were held),
     * key first, and the kind of each (plan.frame[k] is part[kind[k]]). */
    struct proto_v2_plan plan;
    uint8_t kind[PROTO_V2_PLAN_MAX];
    struct frame_part part[SNAPENC_KINDS]; /* by kind */
    unsigned char data[];
};

/* Takes another reference / drops one (frees at zero). NULL is ignored. */
struct frame *frame_ref(struct frame *f);
void frame_release(struct frame *f);

/* The payload of part `kind` of f. */
static inline const unsigned char *frame_payload(const struct frame *f, unsigned kind)
{
    return f->data + f->part[kind].off;
}

/* Part `kind` of f as a client is sent it, its WebSocket header first:
 * *n bytes (0 when the part has no header). */
static inline const unsigned char *frame_wire(const struct frame *f, unsigned kind, size_t *n)
{
    const struct frame_part *p = &f->part[kind];
    *n = p->head ? p->head + p->len : 0;
    return f->data + p->off - p->head;
}

/* Makes part `kind` of f the len bytes at f->data + off, and writes their
 * WebSocket header into the f->pre bytes before them (if they hold it).
 * For the maker of f, before it is shared. */
void frame_set_part(struct frame *f, unsigned kind, size_t off, size_t len);

/* The kind of the version 2 frame with these gaps (0, 0: the key frame). */
unsigned snapenc_kind_of(uint8_t gap1, uint8_t gap0);

/* "v1", "key", "delta_1_1", "delta_2_2", "delta_1_2", "delta_1": the
 * name of a kind in /metrics and in reports; "" out of range. */
const char *snapenc_kind_name(unsigned kind);

/*
 * The version 2 part of f for a client that was sent the frames of
 * sequence numbers sent[0..n) (newest first): among the parts f holds, the
 * one proto_v2_pick() chooses (a delta on bases the client holds, else the
 * key frame); -1 if f holds neither. *ideal: the kind proto_v2_pick()
 * chooses among every frame of f's plan, encoded or not (a room that is
 * asked for it encodes it from the next snapshot on).
 */
int snapenc_pick(const struct frame *f, const uint32_t *sent, size_t n, unsigned *ideal);

struct snapenc_config {
    uint32_t capacity;      /* most boids of the world */
    uint32_t max_obstacles; /* most obstacles of the world */
    size_t pre;             /* headroom to leave before each part */
    /* Times each kind's encoding into the stats (e.g. clock_mono_ns, or a
     * CPU clock in a benchmark); NULL: no timing. */
    int64_t (*clock_ns)(void);
};

/* What the encodings cost so far, by kind. */
struct snapenc_stats {
    uint64_t frames[SNAPENC_KINDS];
    uint64_t bytes[SNAPENC_KINDS];
    uint64_t ns[SNAPENC_KINDS];
    uint64_t prepare_ns; /* version 2: quantizing, sim_hash() and the state hash */
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
    unsigned want; /* bit k set: encode kind k if this snapshot allows it */
};

/*
 * Encodes the world's snapshot in every kind `want` names that it allows
 * (a delta only on bases held) into a new frame with one reference, the
 * caller's; kinds not asked for have len 0. NULL if memory ran out (the
 * snapshot is lost; version 2 then starts again on a key frame).
 */
struct frame *snapenc_encode(struct snapenc *e, const struct snapenc_input *in);

void snapenc_stats(const struct snapenc *e, struct snapenc_stats *out);

#endif
