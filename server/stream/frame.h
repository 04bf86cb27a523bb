/*
 * frame — one snapshot as every client is sent it: a refcounted,
 * immutable block holding each kind of frame the snapshot was encoded as
 * (version 1, the version 2 key frame and deltas), each part preceded by
 * its WebSocket header, written once when the frame is made. The kinds,
 * their names (/metrics) and the choice of a part for a client that holds
 * some earlier frames live here too.
 *
 * Never: encodes (snapenc.h does), reads a clock, locks.
 * Threading: a frame is immutable once shared; its refcount is atomic, so
 * any thread may read it and drop its reference.
 * Memory: a frame is one allocation, freed by its last frame_release().
 */
#ifndef FLOCKD_FRAME_H
#define FLOCKD_FRAME_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_v2.h"

/*
 * The kinds of frame a snapshot may be encoded as: version 1, then the
 * version 2 frames in the order of a full proto_v2_plan() (the key frame,
 * then the deltas by preference).
 */
enum {
    FRAME_V1 = 0,
    FRAME_KEY = 1,
    FRAME_KINDS = 1 + PROTO_V2_PLAN_MAX,
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

/* A want bit besides the kinds (room_want()): version 3's tiles, which
 * are not a part of the frame but tilesets beside it (frame_v3). */
#define FRAME_WANT_V3 FRAME_KINDS

struct tileset;

/* A snapshot for version 3 clients (PROTOCOL.md §12): a tileset per
 * audience, sets[0] every boid and, in an rts room, sets[t] team t's fog;
 * `delayed` the room as it was the spectator delay ago (rts spectators).
 * All NULL when no version 3 client was served lately. */
struct frame_v3 {
    struct tileset **sets;
    uint32_t count;
    struct tileset *delayed;
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
    struct frame_part part[FRAME_KINDS]; /* by kind */
    struct frame_v3 v3;
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
unsigned frame_kind_of(uint8_t gap1, uint8_t gap0);

/* "v1", "key", "delta_G1_G0" for a delta on two bases, "delta_G1" for one
 * on one base (delta_1_1, delta_2_2 ... delta_4), and "v3" for
 * FRAME_WANT_V3 (version 3's frames, spliced per client): the name of a
 * kind in /metrics and in reports; "" out of range. */
const char *frame_kind_name(unsigned kind);

/*
 * The version 2 part of f for a client that was sent the frames of
 * sequence numbers sent[0..n) (newest first): among the parts f holds, the
 * one proto_v2_pick() chooses (a delta on bases the client holds, else the
 * key frame); -1 if f holds neither. *ideal: the kind proto_v2_pick()
 * chooses among every frame of f's plan, encoded or not (a room that is
 * asked for it encodes it from the next snapshot on).
 */
int frame_pick(const struct frame *f, const uint32_t *sent, size_t n, unsigned *ideal);

#endif
