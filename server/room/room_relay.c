/*
 * room_relay.c — a room of a cluster (room_relay.h, cfg.link): the relay
 * of a room another node ticks, and the switches between relaying and
 * ticking.
 *
 * A relay still runs on the pool, but its tick only takes its queue
 * (room.c): a join is answered by the room itself (ack and welcome from
 * this node's copy of the room, whose tick follows the frames relayed), a
 * checkpoint request is dropped (the owner checkpoints), and every other
 * command, refusals included, goes to the link in arrival order
 * (room__relay_forward), so each client's replies come back in the order
 * it sent. Frames and replies from the owner are handed in by the link on
 * its own threads.
 *
 * A relay's welcomes show the owner's parameters as the link last
 * brought them (its copy's world keeps those of its checkpoint). A relay
 * that cannot reach its owner says so to its members (a notice for every
 * member, and its welcomes) until frames come again.
 *
 * A switch to ticking restores the checkpoint it was given (the room then
 * carries on from the checkpoint's tick: a jump back, documented in
 * server/cluster/CLUSTER.md) and continues the frame numbers past the
 * last frame relayed, so no client mistakes a new frame for a base it
 * holds: room.c does both at the start of a tick.
 *
 * The relay's state is this file's alone (struct room_relay), made for a
 * room with a link; a room without one has none and is never a relay.
 */
#include "room_internal.h"

#include "reclog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct room_relay {
    atomic_bool relays;             /* it relays another node's */
    bool attached;                  /* told the link it exists */
    atomic_int_fast64_t watched_ns; /* another node's clients last took frames; 0: never */
    /* A bit per service thread not yet told of a change of availability
     * (room_take_availability_news). */
    _Atomic uint64_t availability_news;

    pthread_mutex_t lock;          /* the fields below */
    struct room_switch *switch_to; /* asked for, waiting for the tick; NULL: none */
    bool unavailable;              /* no owner reached (room_relay_set_available) */
    char unavailable_reason[ROOM_REASON_MAX];
    uint32_t availability_seq;                  /* changes of availability so far */
    bool has_owner_values;                      /* owner_values came (room_relay_params) */
    struct sim_params owner_values[SIM_GROUPS]; /* the owner's parameters, for welcomes */
};

/* ---- life (room.c) --------------------------------------------------------------- */

int room__relay_create(struct room *r)
{
    if (!r->cfg.link)
        return 0;
    struct room_relay *rl = calloc(1, sizeof *rl);
    if (!rl)
        return PROTO_E_INTERNAL;
    atomic_init(&rl->relays, true); /* until the cluster makes it the owner */
    pthread_mutex_init(&rl->lock, NULL);
    r->relay = rl;
    r->cfg.link->attach(r->cfg.link->arg, r);
    rl->attached = true;
    return 0;
}

void room__relay_destroy(struct room *r)
{
    struct room_relay *rl = r->relay;
    if (!rl)
        return;
    if (rl->attached)
        r->cfg.link->detach(r->cfg.link->arg, r);
    if (rl->switch_to)
        room_takeover_free(&rl->switch_to->from);
    free(rl->switch_to);
    pthread_mutex_destroy(&rl->lock);
    free(rl);
    r->relay = NULL;
}

/* ---- switches ------------------------------------------------------------------ */

int room_resume_mark(uint8_t *buf, size_t cap, uint64_t tick, uint64_t term)
{
    return reclog_put_resume(buf, cap, tick, term);
}

void room_takeover_free(struct room_takeover *t)
{
    free(t->ck);
    free(t->log);
    *t = (struct room_takeover){0};
}

void room_relay_set(struct room *r, bool owner, struct room_takeover *t)
{
    struct room_takeover from = {0};
    if (t) {
        from = *t;
        *t = (struct room_takeover){0};
    }
    if (!owner) /* a relay carries nothing on */
        room_takeover_free(&from);
    struct room_switch *sw = r->relay ? malloc(sizeof *sw) : NULL;
    if (!sw) {
        room_takeover_free(&from);
        return;
    }
    *sw = (struct room_switch){.owner = owner, .from = from};
    pthread_mutex_lock(&r->relay->lock);
    struct room_switch *old = r->relay->switch_to;
    /* Replacing a step down the room has not taken: it still counts. */
    sw->stepped_down = owner && old && (!old->owner || old->stepped_down);
    r->relay->switch_to = sw;
    pthread_mutex_unlock(&r->relay->lock);
    if (old)
        room_takeover_free(&old->from);
    free(old);
}

bool room__is_relay(const struct room *r)
{
    return r->relay && atomic_load_explicit(&r->relay->relays, memory_order_acquire);
}

bool room__relay_take_switch(struct room *r, struct room_switch *sw)
{
    struct room_relay *rl = r->relay;
    if (!rl)
        return false;
    pthread_mutex_lock(&rl->lock);
    struct room_switch *asked = rl->switch_to;
    rl->switch_to = NULL;
    pthread_mutex_unlock(&rl->lock);
    if (!asked)
        return false;
    *sw = *asked;
    free(asked);
    return true;
}

void room__relay_become(struct room *r, bool owner)
{
    struct room_relay *rl = r->relay;
    atomic_store_explicit(&rl->relays, !owner, memory_order_release);
    if (!owner)
        return;
    pthread_mutex_lock(&rl->lock); /* its own world's parameters from now on */
    rl->has_owner_values = false;
    pthread_mutex_unlock(&rl->lock);
}

/* ---- what a relay does with its queue (room.c) ---------------------------------- */

bool room__relay_forward(struct room *r, const struct queued *q)
{
    if (q->checkpoint) {
        free(q->checkpoint);
        return true;
    }
    if (q->who.client == 0) /* the server's own commands act on the owner's room */
        return true;
    /* Another node's command served here as owner before this room took
     * the switch: forwarded again it would go out under a new origin, and
     * be applied again if the log already has it. Its node sends it again
     * (with its own origin) to the owner of then. */
    if (q->who.origin)
        return true;
    /* A join, and a view (what this node sends its client), are this node's. */
    if (!q->refused && (q->cmd.kind == PROTO_CMD_JOIN || q->cmd.kind == PROTO_CMD_VIEW))
        return false;
    const struct room_link *l = r->cfg.link;
    int rc = l->forward(l->arg, r, &q->who, &q->cmd, q->refused, q->message);
    if (rc < 0) { /* a refusal found here stays what it was */
        char text[PROTO_REPLY_BYTES];
        int len = q->refused
                      ? proto_reply_error(text, sizeof text, q->cmd.id, q->refused, q->message)
                      : proto_reply_error(text, sizeof text, q->cmd.id, rc,
                                          "the room is unavailable: its node is starting "
                                          "or cannot be reached; it did not take effect; "
                                          "try again");
        if (len > 0)
            room__add_reply(r, &q->who, ROOM_REPLY_PLAIN, text, (size_t)len);
    }
    return true;
}

/* ---- from the owner ---------------------------------------------------------------- */

void room_relay_frame(struct room *r, struct frame *f, uint32_t boids, bool paused)
{
    bool has_part = false;
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        has_part |= f->part[k].len > 0;
    room__show_frame(r, f, has_part, boids, paused); /* the parts' headers said so */
}

void room_relay_reply(struct room *r, uint64_t client, enum room_reply_kind kind, const char *text,
                      size_t len)
{
    /* Its arrival was timed on the node it came to, not here. */
    room__add_reply_now(r, &(struct room_actor){.client = client}, kind, text, len);
    room__wake(r);
}

struct tilestate *room__relay_tiles(struct room *r, unsigned audience)
{
    struct frame *f = room_latest(r);
    struct tileset *ts = f && audience < f->v3.count ? f->v3.sets[audience] : NULL;
    struct tilestate *s = ts ? tiles_state_ref(tiles_set_state(ts)) : NULL;
    frame_release(f);
    return s;
}

void room_relay_grid(const struct room *r, struct tiles_grid *out)
{
    *out = r->grid;
}

void room_relay_params(struct room *r, const struct sim_params values[SIM_GROUPS])
{
    struct room_relay *rl = r->relay;
    if (!rl)
        return;
    pthread_mutex_lock(&rl->lock);
    memcpy(rl->owner_values, values, sizeof rl->owner_values);
    rl->has_owner_values = true;
    pthread_mutex_unlock(&rl->lock);
}

bool room__relay_values(struct room *r, struct sim_params out[SIM_GROUPS])
{
    struct room_relay *rl = r->relay;
    if (!rl)
        return false;
    pthread_mutex_lock(&rl->lock);
    bool has = rl->has_owner_values && room__is_relay(r);
    if (has)
        memcpy(out, rl->owner_values, sizeof rl->owner_values);
    pthread_mutex_unlock(&rl->lock);
    return has;
}

/* ---- frames other nodes' clients take --------------------------------------------- */

unsigned room_relay_wanted(struct room *r)
{
    return room__wanted_kinds(r, room__latest_seq(r));
}

bool room_relay_is_watched(struct room *r, int64_t now)
{
    if (!r->relay)
        return false;
    int64_t at = atomic_load_explicit(&r->relay->watched_ns, memory_order_relaxed);
    return at != 0 && (double)(now - at) < ROOM_WATCHED_S * 1e9;
}

void room_relay_want(struct room *r, unsigned kinds, int64_t now)
{
    if (r->relay)
        atomic_store_explicit(&r->relay->watched_ns, now, memory_order_relaxed);
    uint64_t seq = room__latest_seq(r);
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        if (kinds & 1u << k)
            room_want(r, k, seq ? seq : 1);
}

/* ---- availability --------------------------------------------------------------- */

void room_relay_set_available(struct room *r, bool available, const char *reason)
{
    struct room_relay *rl = r->relay;
    if (!rl)
        return;
    pthread_mutex_lock(&rl->lock);
    bool changed = rl->unavailable == available;
    rl->unavailable = !available;
    snprintf(rl->unavailable_reason, sizeof rl->unavailable_reason, "%s",
             available || !reason ? "" : reason);
    if (changed)
        rl->availability_seq++;
    pthread_mutex_unlock(&rl->lock);
    if (!changed)
        return;
    news_post(&rl->availability_news);
    room__wake(r);
}

/* r's availability as it is now, read at once: true if unavailable, the
 * reason into reason[0..cap) ("" when available) and *seq the count of
 * changes it reflects. */
static bool read_availability(struct room *r, char *reason, size_t cap, uint32_t *seq)
{
    struct room_relay *rl = r->relay;
    reason[0] = '\0';
    *seq = 0;
    if (!rl)
        return false;
    pthread_mutex_lock(&rl->lock);
    bool unavailable = rl->unavailable;
    snprintf(reason, cap, "%s", rl->unavailable_reason);
    *seq = rl->availability_seq;
    pthread_mutex_unlock(&rl->lock);
    return unavailable;
}

bool room__relay_is_unavailable(struct room *r, char *reason, size_t cap)
{
    uint32_t seq;
    return read_availability(r, reason, cap, &seq);
}

uint32_t room_availability_seq(struct room *r)
{
    char reason[ROOM_REASON_MAX];
    uint32_t seq;
    read_availability(r, reason, sizeof reason, &seq);
    return seq;
}

int room_availability(struct room *r, char *buf, size_t cap, uint32_t *seq)
{
    char reason[ROOM_REASON_MAX];
    bool available = !read_availability(r, reason, sizeof reason, seq);
    int len = proto_reply_availability(buf, cap, r->name, available, reason);
    return len > 0 ? len : 0;
}

bool room_take_availability_news(struct room *r, unsigned thread)
{
    return r->relay && news_take(&r->relay->availability_news, thread);
}
