/*
 * room.c — tick thread, command queue, replies and frames (see room.h).
 *
 * Locking: `lock` guards the command ring, the reply list, the latest
 * frame pointer and the info copy. The world itself is touched only by the
 * tick thread (and by room_create before the thread starts), so the
 * simulation never runs under the lock.
 */
#define _POSIX_C_SOURCE 200809L

#include "room.h"

#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A queued command, or a refusal found while parsing (refused != 0): both
 * wait their turn so each client's replies leave in the order it sent. */
struct queued {
    uint64_t client;
    int refused; /* a PROTO_E_* code, 0 for a command */
    struct proto_command cmd;
    char message[PROTO_MESSAGE_MAX];
};

struct room {
    struct room_config cfg;
    char name[64];
    struct sim_world *world;
    pthread_t thread;
    int running;
    atomic_int stop;

    /* Tick-thread state. */
    int paused;
    uint32_t steps_pending;  /* ticks to run while paused (step command) */
    uint64_t snapshot_every; /* ticks per snapshot */
    uint64_t since_snapshot;
    uint64_t frame_seq;
    unsigned char *scratch; /* snapshot encode buffer */
    size_t scratch_cap;
    struct queued *batch; /* commands taken off the ring this tick */

    pthread_mutex_t lock;
    struct queued *ring; /* bounded command queue */
    uint32_t head, count;
    struct room_reply *replies, **replies_tail;
    struct frame *latest;
    struct room_info info;
    struct sim_params values; /* group 0's parameters, for the welcome */
};

struct frame *frame_ref(struct frame *f)
{
    if (f)
        atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    return f;
}

void frame_release(struct frame *f)
{
    if (f && atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1)
        free(f);
}

static int64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- replies -------------------------------------------------------------- */

static void add_reply(struct room *r, uint64_t client, const char *text, size_t len)
{
    struct room_reply *rep = malloc(sizeof *rep + len + 1);
    if (!rep) { /* out of memory: the client sees no reply; count it */
        metrics_reject("internal");
        return;
    }
    rep->next = NULL;
    rep->client = client;
    rep->len = len;
    memcpy(rep->text, text, len);
    rep->text[len] = '\0';
    pthread_mutex_lock(&r->lock);
    *r->replies_tail = rep;
    r->replies_tail = &rep->next;
    pthread_mutex_unlock(&r->lock);
}

struct room_reply *room_take_replies(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    struct room_reply *list = r->replies;
    r->replies = NULL;
    r->replies_tail = &r->replies;
    pthread_mutex_unlock(&r->lock);
    return list;
}

/* ---- commands --------------------------------------------------------------- */

/* Takes a free ring slot under the lock, or NULL if the queue is full. */
static struct queued *ring_slot(struct room *r)
{
    if (r->count == r->cfg.queue_len)
        return NULL;
    return &r->ring[(r->head + r->count++) % r->cfg.queue_len];
}

int room_push(struct room *r, uint64_t client, const struct proto_command *cmd)
{
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r);
    if (q) {
        q->client = client;
        q->refused = 0;
        q->cmd = *cmd;
    }
    pthread_mutex_unlock(&r->lock);
    return q ? 0 : -1;
}

int room_push_refusal(struct room *r, uint64_t client, const char *id, int code,
                      const char *message)
{
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r);
    if (q) {
        q->client = client;
        q->refused = code;
        snprintf(q->cmd.id, sizeof q->cmd.id, "%s", id ? id : "");
        snprintf(q->message, sizeof q->message, "%s", message);
    }
    pthread_mutex_unlock(&r->lock);
    return q ? 0 : -1;
}

/* Moves every queued command into r->batch; returns how many. */
static uint32_t take_batch(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    uint32_t n = r->count;
    for (uint32_t k = 0; k < n; k++)
        r->batch[k] = r->ring[(r->head + k) % r->cfg.queue_len];
    r->head = (r->head + n) % r->cfg.queue_len;
    r->count = 0;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* Spreads n boids of group 0 uniformly over the world. */
static void scatter(struct room *r, uint32_t n)
{
    sim_scatter(r->world, n, 0);
}

/* Ack with the fields an outcome carries (see room_apply.inc). */
struct outcome;
static size_t reply_ack(char *buf, size_t cap, const struct proto_command *c, uint64_t tick,
                        const struct outcome *o);

static size_t reply_error(char *buf, size_t cap, const char *id, int code, const char *message)
{
    int len = proto_reply_error(buf, cap, id, code, message);
    return len > 0 ? (size_t)len : 0;
}

#include "room_apply.inc"

static size_t reply_ack(char *buf, size_t cap, const struct proto_command *c, uint64_t tick,
                        const struct outcome *o)
{
    struct proto_ack_field extra[3];
    size_t n = 0;
    if (c->kind == PROTO_CMD_OBSTACLE_ADD)
        extra[n++] = (struct proto_ack_field){"obstacle", o->obstacle};
    if (o->count >= 0)
        extra[n++] = (struct proto_ack_field){"count", o->count};
    if (o->until >= 0)
        extra[n++] = (struct proto_ack_field){"until", o->until};
    int len = proto_reply_ack(buf, cap, c->id, tick, extra, n);
    return len > 0 ? (size_t)len : 0;
}

/* ---- snapshots ---------------------------------------------------------------- */

static void publish(struct room *r)
{
    struct sim_view v;
    sim_view(r->world, &v);
    struct proto_snapshot_meta meta = {
        .server_time_us = (uint64_t)(now_ns(CLOCK_REALTIME) / 1000),
        .paused = r->paused,
        .wrap = sim_config(r->world)->edges == SIM_EDGES_WRAP,
    };
    ptrdiff_t len = proto_snapshot_encode(&v, &meta, r->scratch, r->scratch_cap);
    if (len < 0)
        return;
    struct frame *f = malloc(sizeof *f + r->cfg.frame_pre + (size_t)len);
    if (!f)
        return;
    atomic_init(&f->refs, 1);
    f->seq = ++r->frame_seq;
    f->tick = v.tick;
    f->time_us = (int64_t)meta.server_time_us;
    f->pre = r->cfg.frame_pre;
    f->len = (size_t)len;
    memcpy(f->data + f->pre, r->scratch, (size_t)len);
    pthread_mutex_lock(&r->lock);
    struct frame *old = r->latest;
    r->latest = f;
    pthread_mutex_unlock(&r->lock);
    frame_release(old);
    atomic_fetch_add_explicit(&g_metrics.snapshots_encoded, 1, memory_order_relaxed);
}

struct frame *room_latest(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    struct frame *f = frame_ref(r->latest);
    pthread_mutex_unlock(&r->lock);
    return f;
}

static void update_info(struct room *r)
{
    struct sim_stats st;
    sim_stats(r->world, &st);
    struct sim_view v;
    sim_view(r->world, &v);
    pthread_mutex_lock(&r->lock);
    r->info.tick = v.tick;
    r->info.boids = v.count;
    r->info.paused = r->paused;
    r->info.polarization = st.polarization;
    r->values = *sim_group_params(r->world, 0);
    pthread_mutex_unlock(&r->lock);
}

void room_info(struct room *r, struct room_info *out)
{
    pthread_mutex_lock(&r->lock);
    *out = r->info;
    pthread_mutex_unlock(&r->lock);
}

const struct sim_config *room_sim_config(const struct room *r)
{
    return &r->cfg.sim;
}

int room_welcome(struct room *r, uint64_t client, size_t max_message, char *buf, size_t cap)
{
    pthread_mutex_lock(&r->lock);
    struct sim_params values = r->values;
    struct proto_welcome w = {
        .client = client,
        .tick = r->info.tick,
        .tick_hz = r->info.tick_hz,
        .snapshot_hz = r->info.snapshot_hz,
        .width = r->info.width,
        .height = r->info.height,
        .edges = r->cfg.sim.edges,
        .capacity = r->info.capacity,
        .max_obstacles = r->info.max_obstacles,
        .max_message = max_message,
        .values = &values,
    };
    pthread_mutex_unlock(&r->lock);
    return proto_reply_welcome(buf, cap, &w);
}

/* ---- the tick ------------------------------------------------------------------ */

/* One tick boundary: apply commands, step, maybe publish. */
static void tick_once(struct room *r)
{
    uint32_t n = take_batch(r);
    for (uint32_t k = 0; k < n; k++)
        apply_command(r, &r->batch[k]);
    int stepping = !r->paused || r->steps_pending > 0;
    if (stepping) {
        sim_step(r->world);
        if (r->paused)
            r->steps_pending--;
    }
    int notify = n > 0;
    if (++r->since_snapshot >= r->snapshot_every) {
        r->since_snapshot = 0;
        update_info(r);
        publish(r);
        notify = 1;
    }
    if (notify && r->cfg.notify)
        r->cfg.notify(r->cfg.notify_arg);
}

static void *room_main(void *arg)
{
    struct room *r = arg;
    int64_t period = (int64_t)(1e9 / r->cfg.tick_hz);
    int64_t deadline = now_ns(CLOCK_MONOTONIC);
    while (!atomic_load(&r->stop)) {
        int64_t t0 = now_ns(CLOCK_MONOTONIC);
        tick_once(r);
        int64_t t1 = now_ns(CLOCK_MONOTONIC);
        metrics_tick((uint64_t)(t1 - t0));
        deadline += period;
        if (t1 > deadline) {
            /* Late: count it and start again from now instead of
             * bursting to catch up. */
            atomic_fetch_add_explicit(&g_metrics.tick_overruns, 1, memory_order_relaxed);
            deadline = t1;
            continue;
        }
        struct timespec ts = {(time_t)(deadline / 1000000000LL), (long)(deadline % 1000000000LL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    return NULL;
}

/* ---- life cycle ------------------------------------------------------------------- */

struct room *room_create(const struct room_config *cfg, const char **err)
{
    if (!(cfg->tick_hz >= 1 && cfg->tick_hz <= 1000) || !(cfg->snapshot_hz > 0) ||
        cfg->snapshot_hz > cfg->tick_hz || cfg->queue_len < 1 || cfg->boids > cfg->sim.capacity) {
        *err = "room: bad rates, queue length or boid count";
        return NULL;
    }
    struct room *r = calloc(1, sizeof *r);
    if (!r) {
        *err = "out of memory";
        return NULL;
    }
    r->cfg = *cfg;
    snprintf(r->name, sizeof r->name, "%s", cfg->name ? cfg->name : "default");
    r->cfg.name = r->name;
    r->world = sim_create(&cfg->sim, err);
    r->scratch_cap = proto_snapshot_max_size(cfg->sim.capacity, cfg->sim.max_obstacles);
    r->scratch = malloc(r->scratch_cap);
    r->ring = calloc(cfg->queue_len, sizeof *r->ring);
    r->batch = calloc(cfg->queue_len, sizeof *r->batch);
    if (!r->world || !r->scratch || !r->ring || !r->batch) {
        if (r->world)
            *err = "out of memory";
        room_destroy(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    r->replies_tail = &r->replies;
    r->snapshot_every = (uint64_t)llround(cfg->tick_hz / cfg->snapshot_hz);
    if (r->snapshot_every < 1)
        r->snapshot_every = 1;
    r->since_snapshot = r->snapshot_every - 1; /* first tick publishes */
    scatter(r, cfg->boids);
    r->values = *sim_group_params(r->world, 0);
    r->info = (struct room_info){
        .width = cfg->sim.width,
        .height = cfg->sim.height,
        .tick_hz = cfg->tick_hz,
        .snapshot_hz = cfg->tick_hz / (double)r->snapshot_every,
        .capacity = cfg->sim.capacity,
        .max_obstacles = cfg->sim.max_obstacles,
        .wrap = cfg->sim.edges == SIM_EDGES_WRAP,
        .boids = cfg->boids,
    };
    return r;
}

int room_start(struct room *r)
{
    atomic_store(&r->stop, 0);
    if (pthread_create(&r->thread, NULL, room_main, r) != 0)
        return -1;
    r->running = 1;
    return 0;
}

void room_stop(struct room *r)
{
    if (!r->running)
        return;
    atomic_store(&r->stop, 1);
    pthread_join(r->thread, NULL);
    r->running = 0;
}

void room_destroy(struct room *r)
{
    if (!r)
        return;
    room_stop(r);
    struct room_reply *rep = r->replies;
    while (rep) {
        struct room_reply *next = rep->next;
        free(rep);
        rep = next;
    }
    frame_release(r->latest);
    if (r->replies_tail)
        pthread_mutex_destroy(&r->lock);
    sim_destroy(r->world);
    free(r->scratch);
    free(r->ring);
    free(r->batch);
    free(r);
}
