/*
 * room.c — tick thread, command queue, replies and frames (see room.h).
 *
 * Locking: `lock` guards the command ring, the reply list, the latest
 * frame pointer and the info copy. The world itself is touched only by the
 * tick thread (and by room_create before the thread starts), so the
 * simulation never runs under the lock.
 */
#define _POSIX_C_SOURCE 200809L

#include "room_internal.h"

#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(PROTO_GROUPS == SIM_GROUPS, "the wire's group ids are the world's");

#define RESERVE 256 /* queue slots only the server's own commands may use */

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

/* ---- replies -------------------------------------------------------------- */

void room__add_reply(struct room *r, uint64_t client, int welcome, const char *text, size_t len)
{
    if (client == 0) /* the server's own command: nobody to answer */
        return;
    struct room_reply *rep = malloc(sizeof *rep + len + 1);
    if (!rep) { /* out of memory: the client sees no reply; count it */
        metrics_reject("internal");
        return;
    }
    rep->next = NULL;
    rep->client = client;
    rep->welcome = welcome;
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

int room_take_dirty(struct room *r)
{
    return atomic_exchange_explicit(&r->dirty, 0, memory_order_acq_rel);
}

/* ---- commands --------------------------------------------------------------- */

static uint32_t ring_len(const struct room *r)
{
    return r->cfg.queue_len + RESERVE;
}

/* Takes a free ring slot under the lock, or NULL if the queue is full;
 * the last RESERVE slots are for the server's own commands. */
static struct queued *ring_slot(struct room *r, int reserve)
{
    if (r->count >= r->cfg.queue_len + (reserve ? RESERVE : 0))
        return NULL;
    return &r->ring[(r->head + r->count++) % ring_len(r)];
}

int room_push(struct room *r, const struct room_actor *who, const struct proto_command *cmd)
{
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r, who->client == 0);
    if (q) {
        q->who = *who;
        q->refused = 0;
        q->cmd = *cmd;
    }
    pthread_mutex_unlock(&r->lock);
    return q ? 0 : PROTO_E_QUEUE_FULL;
}

int room_push_refusal(struct room *r, uint64_t client, const char *id, int code,
                      const char *message)
{
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r, 0);
    if (q) {
        q->who = (struct room_actor){.client = client, .role = PROTO_ROLE_VIEWER, .team = -1};
        q->refused = code;
        snprintf(q->cmd.id, sizeof q->cmd.id, "%s", id ? id : "");
        snprintf(q->message, sizeof q->message, "%s", message);
    }
    pthread_mutex_unlock(&r->lock);
    return q ? 0 : PROTO_E_QUEUE_FULL;
}

/* Moves every queued command into r->batch; returns how many. */
static uint32_t take_batch(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    uint32_t n = r->count;
    for (uint32_t k = 0; k < n; k++)
        r->batch[k] = r->ring[(r->head + k) % ring_len(r)];
    r->head = (r->head + n) % ring_len(r);
    r->count = 0;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void room__populate(struct room *r, uint32_t n)
{
    if (r->cfg.mode == PROTO_MODE_RTS) /* every group flocks with its own kind only */
        sim_param_set(r->world, -1, "own_group_only", 1.0f);
    sim_scatter(r->world, n, 0);
}

void room__refresh_welcome(struct room *r)
{
    struct sim_view v;
    sim_view(r->world, &v);
    pthread_mutex_lock(&r->lock);
    r->info.tick = v.tick;
    r->values = *sim_group_params(r->world, 0);
    pthread_mutex_unlock(&r->lock);
}

/* ---- snapshots ---------------------------------------------------------------- */

/*
 * The world as the snapshot codec sees it: the boids' arrays as they are,
 * obstacles and active targets copied into the room's arrays (the codec
 * has types of its own). Valid until the world or those arrays change.
 */
static void snapshot_view(struct room *r, const struct sim_view *v, uint64_t wall_us,
                          struct proto_snapshot_view *out)
{
    uint32_t targets = 0;
    for (uint32_t k = 0; k < v->obstacle_count; k++) {
        const struct sim_obstacle *o = &v->obstacles[k];
        r->view_obstacles[k] = (struct proto_obstacle){o->id, o->x, o->y, o->r};
    }
    for (int g = 0; g < SIM_GROUPS; g++)
        if (v->targets[g].active)
            r->view_targets[targets++] =
                (struct proto_target){(uint8_t)g, v->targets[g].x, v->targets[g].y};
    *out = (struct proto_snapshot_view){
        .tick = v->tick,
        .server_time_us = wall_us,
        .epoch = v->epoch,
        .width = v->width,
        .height = v->height,
        .paused = r->paused,
        .wrap = r->cfg.sim.edges == SIM_EDGES_WRAP,
        .count = v->count,
        .x = v->x,
        .y = v->y,
        .vx = v->vx,
        .vy = v->vy,
        .group = v->group,
        .obstacle_count = v->obstacle_count,
        .obstacles = r->view_obstacles,
        .target_count = targets,
        .targets = r->view_targets,
    };
}

/* Encodes the world into a new latest frame stamped with wall_us. */
static void publish(struct room *r, int64_t wall_us)
{
    struct sim_view v;
    struct proto_snapshot_view view;
    sim_view(r->world, &v);
    snapshot_view(r, &v, (uint64_t)wall_us, &view);
    ptrdiff_t len = proto_snapshot_encode(&view, r->scratch, r->scratch_cap);
    if (len < 0)
        return;
    struct frame *f = malloc(sizeof *f + r->cfg.frame_pre + (size_t)len);
    if (!f)
        return;
    atomic_init(&f->refs, 1);
    f->seq = ++r->frame_seq;
    f->tick = v.tick;
    f->time_us = (int64_t)view.server_time_us;
    f->pre = r->cfg.frame_pre;
    f->len = (size_t)len;
    memcpy(f->data + f->pre, r->scratch, (size_t)len);
    pthread_mutex_lock(&r->lock);
    struct frame *old = r->latest;
    r->latest = f;
    pthread_mutex_unlock(&r->lock);
    frame_release(old);
    atomic_store_explicit(&r->dirty, 1, memory_order_release);
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

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void room_info(struct room *r, struct room_info *out)
{
    float late[LATE_SAMPLES];
    pthread_mutex_lock(&r->lock);
    *out = r->info;
    uint32_t n = r->late_count;
    memcpy(late, r->late_ms, n * sizeof *late);
    pthread_mutex_unlock(&r->lock);
    out->late_p99_ms = 0;
    if (n) {
        qsort(late, n, sizeof *late, cmp_float);
        out->late_p99_ms = late[(n * 99 + 99) / 100 - 1];
    }
}

void room_limits(const struct room *r, size_t max_message, struct proto_limits *out)
{
    *out = (struct proto_limits){.width = r->cfg.sim.width,
                                 .height = r->cfg.sim.height,
                                 .capacity = r->cfg.sim.capacity,
                                 .max_message = max_message};
}

int room_status_from_sim(int sim_result)
{
    switch (sim_result) {
    case SIM_ERANGE:
        return PROTO_E_OUT_OF_RANGE;
    case SIM_ECAPACITY:
        return PROTO_E_CAPACITY;
    case SIM_ENOENT:
        return PROTO_E_NOT_FOUND;
    case SIM_EINVAL:
        return PROTO_E_BAD_ARG;
    default:
        return sim_result < 0 ? PROTO_E_INTERNAL : PROTO_OK;
    }
}

const char *room_name(const struct room *r)
{
    return r->name;
}

enum proto_mode room_mode(const struct room *r)
{
    return r->cfg.mode;
}

int room_welcome(struct room *r, const struct room_actor *who, char *buf, size_t cap)
{
    pthread_mutex_lock(&r->lock);
    struct sim_params values = r->values;
    struct proto_welcome w = {
        .client = who->client,
        .room = r->name,
        .mode = r->cfg.mode,
        .role = who->role,
        .team = who->team,
        .rate = r->cfg.rate,
        .burst = r->cfg.burst,
        .player_obstacles = r->cfg.player_obstacles,
        .tick = r->info.tick,
        .tick_hz = r->info.tick_hz,
        .snapshot_hz = r->info.snapshot_hz,
        .width = r->info.width,
        .height = r->info.height,
        .wrap = r->cfg.sim.edges == SIM_EDGES_WRAP,
        .capacity = r->info.capacity,
        .max_obstacles = r->info.max_obstacles,
        .max_message = r->cfg.max_message,
        .values = &values,
    };
    pthread_mutex_unlock(&r->lock);
    return proto_reply_welcome(buf, cap, &w);
}

/* ---- the tick ------------------------------------------------------------------ */

/* Keeps how late this tick started, for room_info's p99. */
static void record_lateness(struct room *r, int64_t late_ns)
{
    pthread_mutex_lock(&r->lock);
    r->late_ms[r->late_next] = (float)((double)late_ns / 1e6);
    r->late_next = (r->late_next + 1) % LATE_SAMPLES;
    if (r->late_count < LATE_SAMPLES)
        r->late_count++;
    pthread_mutex_unlock(&r->lock);
}

void room_tick(struct room *r, const struct pool_time *t)
{
    uint32_t n = take_batch(r);
    for (uint32_t k = 0; k < n; k++)
        room__apply_command(r, &r->batch[k]);
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
        publish(r, t->wall_us);
        notify = 1;
    }
    record_lateness(r, t->late_ns);
    if (n > 0)
        atomic_store_explicit(&r->dirty, 1, memory_order_release);
    if (notify && r->cfg.notify)
        r->cfg.notify(r->cfg.notify_arg);
}

/* The room's pool task. */
static void run_tick(void *arg, const struct pool_time *t)
{
    room_tick(arg, t);
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
    r->ring = calloc(cfg->queue_len + RESERVE, sizeof *r->ring);
    r->batch = calloc(cfg->queue_len + RESERVE, sizeof *r->batch);
    r->owners = calloc(cfg->sim.max_obstacles + 1, sizeof *r->owners);
    r->view_obstacles = calloc(cfg->sim.max_obstacles + 1, sizeof *r->view_obstacles);
    if (!r->world || !r->scratch || !r->ring || !r->batch || !r->owners || !r->view_obstacles) {
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
    room__populate(r, cfg->boids);
    r->values = *sim_group_params(r->world, 0);
    r->task =
        (struct pool_task){.run = run_tick, .arg = r, .period_ns = (int64_t)(1e9 / cfg->tick_hz)};
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

int room_schedule(struct room *r, struct pool *p)
{
    int rc = pool_add(p, &r->task);
    if (rc < 0)
        return rc;
    r->scheduled = 1;
    return 0;
}

void room_unschedule(struct room *r, struct pool *p)
{
    if (r->scheduled)
        pool_remove(p, &r->task);
    r->scheduled = 0;
}

void room_destroy(struct room *r)
{
    if (!r)
        return;
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
    free(r->owners);
    free(r->view_obstacles);
    free(r);
}
