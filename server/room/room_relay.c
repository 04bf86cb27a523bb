/*
 * room_relay.c — a room of a cluster (room.h, cfg.link): the relay of a
 * room another node ticks, and the switches between relaying and ticking.
 *
 * A relay still runs on the pool, but its tick only takes its queue: a
 * join is answered here (ack and welcome from this node's copy of the
 * room, whose tick follows the frames relayed), a checkpoint request is
 * dropped (the owner checkpoints), and every other command, refusals
 * included, goes to the link in arrival order, so each client's replies
 * come back in the order it sent. Frames and replies from the owner are
 * handed in by the link on its own threads.
 *
 * A relay's welcomes show the owner's parameters as the link last
 * brought them (its copy's world keeps those of its checkpoint). A relay
 * that cannot reach its owner says so to its members (a notice
 * for every member, and its welcomes) until frames come again.
 *
 * A switch to ticking restores the checkpoint it was given (the room then
 * carries on from the checkpoint's tick: a jump back, documented in
 * server/cluster/CLUSTER.md) and continues the frame numbers past the last frame
 * relayed, so no client mistakes a new frame for a base it holds.
 */
#include "room_internal.h"

#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct room_switch {
    bool owner;
    uint8_t *ck; /* owner: the checkpoint to restore, or NULL */
    size_t len;
};

void room_relay_set(struct room *r, bool owner, uint8_t *ck, size_t len)
{
    struct room_switch *sw = malloc(sizeof *sw);
    if (!sw) {
        free(ck);
        return;
    }
    *sw = (struct room_switch){.owner = owner, .ck = owner ? ck : NULL, .len = len};
    if (!owner)
        free(ck);
    pthread_mutex_lock(&r->lock);
    struct room_switch *old = r->switch_to;
    r->switch_to = sw;
    pthread_mutex_unlock(&r->lock);
    if (old)
        free(old->ck);
    free(old);
}

bool room_is_relay(const struct room *r)
{
    return atomic_load_explicit(&r->relay, memory_order_acquire);
}

/* Restores sw's checkpoint into the room; says why not on stderr (the
 * room then carries on from its own state). Tick thread. */
static void restore(struct room *r, const struct room_switch *sw)
{
    struct ckpt c;
    const char *why = NULL;
    if (ckpt_decode(sw->ck, sw->len, &c, &why) < 0 || strcmp(c.room, r->name) != 0 ||
        room_restore(r, &c, &why) < 0) {
        fprintf(stderr, "flockd: room \"%s\" taken over without its checkpoint: %s\n", r->name,
                why ? why : "it names another room");
        return;
    }
    struct sim_view v;
    sim_view(r->world, &v);
    fprintf(stderr, "flockd: room \"%s\" resumed from checkpoint %u at tick %llu\n", r->name, c.seq,
            (unsigned long long)v.tick);
}

/* Applies the switch asked for, if any. Tick thread. */
static void take_switch(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    struct room_switch *sw = r->switch_to;
    r->switch_to = NULL;
    uint64_t last_seq = r->latest ? r->latest->seq : 0;
    pthread_mutex_unlock(&r->lock);
    if (!sw)
        return;
    if (sw->owner && room_is_relay(r)) {
        if (sw->ck)
            restore(r, sw);
        /* Past every base a client of this node may hold. */
        if (r->frame_seq < last_seq + PROTO_V2_HISTORY + 1)
            r->frame_seq = last_seq + PROTO_V2_HISTORY + 1;
        r->since_snapshot = r->snapshot_every - 1; /* a frame at once */
    }
    atomic_store_explicit(&r->relay, !sw->owner, memory_order_release);
    if (sw->owner) { /* its own world's parameters from now on, told to the relays */
        pthread_mutex_lock(&r->lock);
        r->has_owner_values = false;
        pthread_mutex_unlock(&r->lock);
        room__refresh_welcome(r);
    }
    free(sw->ck);
    free(sw);
}

/* One queued item of a relay: a join answered here, anything else to the
 * owner (an error at once if it cannot go). */
static void relay_one(struct room *r, const struct queued *q)
{
    if (q->checkpoint) {
        free(q->checkpoint);
        return;
    }
    if (q->who.client == 0) /* the server's own commands act on the owner's room */
        return;
    if (!q->refused && q->cmd.kind == PROTO_CMD_JOIN) {
        room__apply_command(r, q);
        return;
    }
    const struct room_link *l = r->cfg.link;
    int rc = l->forward(l->arg, r, &q->who, &q->cmd, q->refused, q->message);
    if (rc < 0) {
        char text[PROTO_REPLY_BYTES];
        int len = proto_reply_error(text, sizeof text, q->cmd.id, rc,
                                    "the room is unavailable: its node is starting or cannot "
                                    "be reached; try again");
        if (len > 0)
            room__add_reply(r, &q->who, ROOM_REPLY_PLAIN, text, (size_t)len);
    }
}

bool room__relay_tick(struct room *r)
{
    if (!r->cfg.link)
        return false;
    take_switch(r);
    if (!room_is_relay(r))
        return false;
    uint32_t n = room__take_batch(r);
    for (uint32_t k = 0; k < n; k++)
        relay_one(r, &r->batch[k]);
    if (n > 0)
        room__wake(r);
    return true;
}

void room__relay_destroy(struct room *r)
{
    if (r->switch_to)
        free(r->switch_to->ck);
    free(r->switch_to);
    r->switch_to = NULL;
}

void room_relay_frame(struct room *r, struct frame *f, uint32_t boids, bool paused)
{
    pthread_mutex_lock(&r->lock);
    struct frame *old = r->latest;
    r->latest = f;
    r->info.tick = f->tick;
    bool has_part = false;
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        has_part |= f->part[k].len > 0;
    if (has_part) { /* the parts' headers said so */
        r->info.boids = boids;
        r->info.paused = paused;
    }
    pthread_mutex_unlock(&r->lock);
    frame_release(old);
    room__wake(r);
}

void room_relay_reply(struct room *r, uint64_t client, enum room_reply_kind kind, const char *text,
                      size_t len)
{
    /* Its arrival was timed on the node it came to, not here. */
    room__add_reply(r, &(struct room_actor){.client = client}, kind, text, len);
    room__wake(r);
}

unsigned room_relay_wanted(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t seq = r->latest ? r->latest->seq : 0;
    pthread_mutex_unlock(&r->lock);
    return room__wanted_kinds(r, seq);
}

bool room_relay_is_watched(struct room *r, int64_t now)
{
    int64_t at = atomic_load_explicit(&r->watched_ns, memory_order_relaxed);
    return at != 0 && (double)(now - at) < ROOM_WATCHED_S * 1e9;
}

void room_relay_want(struct room *r, unsigned kinds, int64_t now)
{
    atomic_store_explicit(&r->watched_ns, now, memory_order_relaxed);
    pthread_mutex_lock(&r->lock);
    uint64_t seq = r->latest ? r->latest->seq : 1;
    pthread_mutex_unlock(&r->lock);
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        if (kinds & 1u << k)
            room_want(r, k, seq);
}

void room_relay_set_available(struct room *r, bool available, const char *reason)
{
    pthread_mutex_lock(&r->lock);
    bool changed = r->unavailable == available;
    r->unavailable = !available;
    snprintf(r->unavailable_reason, sizeof r->unavailable_reason, "%s",
             available || !reason ? "" : reason);
    if (changed)
        r->availability_seq++;
    pthread_mutex_unlock(&r->lock);
    if (!changed)
        return;
    news_post(&r->availability_news);
    room__wake(r);
}

uint32_t room_availability_seq(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    uint32_t seq = r->availability_seq;
    pthread_mutex_unlock(&r->lock);
    return seq;
}

int room_availability(struct room *r, char *buf, size_t cap, uint32_t *seq)
{
    char reason[sizeof r->unavailable_reason];
    pthread_mutex_lock(&r->lock);
    bool available = !r->unavailable;
    *seq = r->availability_seq;
    memcpy(reason, r->unavailable_reason, sizeof reason);
    pthread_mutex_unlock(&r->lock);
    int len = proto_reply_availability(buf, cap, r->name, available, reason);
    return len > 0 ? len : 0;
}

bool room_take_availability_news(struct room *r, unsigned thread)
{
    return news_take(&r->availability_news, thread);
}

void room_relay_params(struct room *r, const struct sim_params values[SIM_GROUPS])
{
    pthread_mutex_lock(&r->lock);
    memcpy(r->values, values, sizeof r->values);
    r->has_owner_values = true;
    pthread_mutex_unlock(&r->lock);
}
