/*
 * frame.c — the shared frame, its parts' WebSocket headers and its kinds
 * (see frame.h).
 */
#include "frame.h"

#include "tiles.h"

#include <stdlib.h>

/* Fixed by proto_v2_plan()'s order; test_snapenc checks it against the plan. */
static const char *const kind_names[FRAME_KINDS + 1] = {
    "v1",        "key",       "delta_1_1", "delta_2_2", "delta_1_2", "delta_1_3",
    "delta_1_4", "delta_2_1", "delta_2_3", "delta_2_4", "delta_3_1", "delta_3_2",
    "delta_3_3", "delta_3_4", "delta_4_1", "delta_4_2", "delta_4_3", "delta_4_4",
    "delta_1",   "delta_2",   "delta_3",   "delta_4",   "v3"};

struct frame *frame_ref(struct frame *f)
{
    if (f)
        atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    return f;
}

void frame_release(struct frame *f)
{
    if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (uint32_t a = 0; a < f->v3.count; a++)
        tiles_set_release(f->v3.sets[a]);
    free(f->v3.sets);
    tiles_set_release(f->v3.delayed);
    free(f);
}

void frame_set_part(struct frame *f, unsigned kind, size_t off, size_t len)
{
    unsigned head = len < 126 ? 2 : len < 65536 ? 4 : FRAME_WS_HEAD_MAX;
    if (f->pre < FRAME_WS_HEAD_MAX || off < f->pre)
        head = 0;
    f->part[kind] = (struct frame_part){.off = off, .len = len, .head = head};
    if (!head)
        return;
    unsigned char *h = f->data + off - head;
    h[0] = 0x82; /* FIN, binary */
    if (head == 2) {
        h[1] = (unsigned char)len;
        return;
    }
    h[1] = head == 4 ? 126 : 127;
    for (unsigned i = 2; i < head; i++) /* the length, big-endian */
        h[i] = (unsigned char)((uint64_t)len >> 8 * (head - 1 - i));
}

unsigned frame_kind_of(uint8_t gap1, uint8_t gap0)
{
    struct proto_v2_plan full;
    proto_v2_plan(0, PROTO_V2_PLAN_REACH, PROTO_V2_PLAN_MAX - 1, &full);
    for (unsigned k = 0; k < full.count; k++)
        if (full.frame[k].gap1 == gap1 && full.frame[k].gap0 == gap0)
            return FRAME_KEY + k;
    return FRAME_KEY;
}

int frame_pick(const struct frame *f, const uint32_t *sent, size_t n, unsigned *ideal)
{
    *ideal = f->kind[proto_v2_pick(&f->plan, sent, n)];
    if (f->part[*ideal].len)
        return (int)*ideal;
    /* The encoded deltas, the key first as proto_v2_pick() expects it. */
    struct proto_v2_plan encoded = {.seq = f->plan.seq, .count = 1, .frame = {f->plan.frame[0]}};
    uint8_t kind[PROTO_V2_PLAN_MAX] = {FRAME_KEY};
    for (unsigned k = 1; k < f->plan.count; k++) {
        if (!f->part[f->kind[k]].len)
            continue;
        kind[encoded.count] = f->kind[k];
        encoded.frame[encoded.count++] = f->plan.frame[k];
    }
    unsigned k = proto_v2_pick(&encoded, sent, n);
    if (k > 0)
        return kind[k];
    return f->part[FRAME_KEY].len ? FRAME_KEY : -1;
}

const char *frame_kind_name(unsigned kind)
{
    return kind <= FRAME_WANT_V3 ? kind_names[kind] : "";
}
