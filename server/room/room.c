/*
 * room.c — tick thread, command queue, replies and frames (see room.h).
 *
 * It holds the sequence of a tick and calls the room's other files for
 * their parts (room_internal.h): the cluster's switch and the relay
 * (room_relay.c), each command's turn (room_apply.c), the log and
 * checkpoints (room_persist.c).
 *
 * Locking: `lock` guards the command ring, the reply list, the latest
 * frame pointer and the info copy. The world itself is touched only by the
 * tick thread (and by room_create before the thread starts), so the
 * simulation never runs under the lock.
 */
#define _POSIX_C_SOURCE 200809L

#include "room_internal.h"

#include "apply.h"
#include "clock.h"
#include "fog.h"
#include "metrics.h"
#include "reclog.h"
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESERVE 256 /* queue slots only the server's own commands may use */

/* ---- replies -------------------------------------------------------------- */

/* What a welcome's client knew of the room as it was written: the
 * counts a later change is told against. */
struct welcome_marks {
    uint32_t availability_seq;
    uint64_t dilation_seen;
};

/* A reply of a batch held until the cluster's log has the batch's records
 * (room_internal.h, `staging`): `logged` if its command is one of them. */
struct staged {
    struct staged *next;
    struct room_reply *rep;
    bool logged;
    bool forwarded; /* another node's command: a refusal is not sent (it sends it again) */
    char id[PROTO_ID_TEXT_MAX];
};

static struct room_reply *make_reply(const struct room_actor *who, enum room_reply_kind kind,
                                     const char *text, size_t len, struct welcome_marks marks,
                                     const struct proto_view_args *view)
{
    struct room_reply *rep = malloc(sizeof *rep + len + 1);
    if (!rep) { /* out of memory: the client sees no reply; count it */
        metrics_reject("internal");
        return NULL;
    }
    rep->next = NULL;
    rep->client = who->client;
    rep->kind = kind;
    rep->availability_seq = marks.availability_seq;
    rep->dilation_seen = marks.dilation_seen;
    rep->at_ns = who->at_ns;
    rep->view = view ? *view : (struct proto_view_args){0};
    rep->len = len;
    memcpy(rep->text, text, len);
    rep->text[len] = '\0';
    return rep;
}

/* Sends rep: to the link if it is another node's client, else into the
 * room's replies for the service threads. Takes rep. */
static void post_reply(struct room *r, struct room_reply *rep)
{
    const struct room_link *l = r->cfg.link;
    if (l && l->reply(l->arg, rep->client, rep->kind, rep->text, rep->len)) {
        free(rep); /* another node's client */
        return;
    }
    pthread_mutex_lock(&r->lock);
    *r->replies_tail = rep;
    r->replies_tail = &rep->next;
    pthread_mutex_unlock(&r->lock);
}

/* Holds rep among the batch's staged replies. Tick thread. */
static void stage_reply(struct room *r, struct room_reply *rep)
{
    struct staged *st = calloc(1, sizeof *st);
    if (!st) {
        post_reply(r, rep);
        return;
    }
    st->rep = rep;
    *r->staged_tail = st;
    r->staged_tail = &st->next;
    r->staged_last = st;
}

/* A reply (staged while the tick thread runs a batch: `may_stage`, which
 * only the tick thread's own callers pass). */
static void add_reply(struct room *r, const struct room_actor *who, enum room_reply_kind kind,
                      const char *text, size_t len, struct welcome_marks marks,
                      const struct proto_view_args *view, bool may_stage)
{
    if (who->client == 0) /* the server's own command: nobody to answer */
        return;
    struct room_reply *rep = make_reply(who, kind, text, len, marks, view);
    if (rep && may_stage && r->staging)
        stage_reply(r, rep);
    else if (rep)
        post_reply(r, rep);
}

void room__add_reply_now(struct room *r, const struct room_actor *who, enum room_reply_kind kind,
                         const char *text, size_t len)
{
    add_reply(r, who, kind, text, len, (struct welcome_marks){0}, NULL, false);
}

/* The batch's replies leave, in order: as they are if the log has its
 * records (stored 0), else a logged command's ack becomes a refusal that
 * says whether the log surely lacks it (PROTO_E_UNAVAILABLE) or may hold
 * it (any other code: a write whose answer was lost). */
static void release_staged(struct room *r, int stored)
{
    const char *why = stored == PROTO_E_UNAVAILABLE
                          ? "the room's command log could not store it: it did not take effect; "
                            "retry"
                          : "the room's command log did not answer: its outcome is unknown (the "
                            "node that takes the room over applies it if the log has it)";
    struct staged *st = r->staged;
    r->staged = r->staged_last = NULL;
    r->staged_tail = &r->staged;
    while (st) {
        struct staged *next = st->next;
        struct room_reply *rep = st->rep;
        char text[PROTO_REPLY_BYTES];
        int len = stored < 0 && st->logged
                      ? proto_reply_error(text, sizeof text, st->id, PROTO_E_UNAVAILABLE, why)
                      : 0;
        if (len > 0 && st->forwarded) { /* its node sends it again, to the owner of then */
            free(rep);
            rep = NULL;
        } else if (len > 0) {
            struct room_reply *err =
                make_reply(&(struct room_actor){.client = rep->client}, ROOM_REPLY_PLAIN, text,
                           (size_t)len, (struct welcome_marks){0}, NULL);
            free(rep);
            rep = err;
        }
        if (rep)
            post_reply(r, rep);
        free(st);
        st = next;
    }
}

void room__add_reply(struct room *r, const struct room_actor *who, enum room_reply_kind kind,
                     const char *text, size_t len)
{
    add_reply(r, who, kind, text, len, (struct welcome_marks){0}, NULL, true);
}

void room__add_view_reply(struct room *r, const struct room_actor *who, const char *text,
                          size_t len, const struct proto_view_args *view)
{
    add_reply(r, who, ROOM_REPLY_VIEW, text, len, (struct welcome_marks){0}, view, true);
}

void room__send_welcome(struct room *r, const struct room_actor *who)
{
    char welcome[PROTO_WELCOME_BYTES];
    room__refresh_welcome(r);
    struct welcome_marks seen = {/* before: a change meanwhile is news */
                                 .availability_seq = room_availability_seq(r),
                                 .dilation_seen = room_dilation_version(r)};
    int len = room_welcome(r, who, welcome, sizeof welcome);
    if (len > 0)
        add_reply(r, who, ROOM_REPLY_WELCOME, welcome, (size_t)len, seen, NULL, true);
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

struct room_reply *room_take_replies_of(struct room *r, unsigned thread, unsigned threads)
{
    if (threads <= 1)
        return room_take_replies(r);
    struct room_reply *mine = NULL, **tail = &mine;
    pthread_mutex_lock(&r->lock);
    struct room_reply **at = &r->replies;
    while (*at) {
        struct room_reply *rep = *at;
        if (rep->client % threads == thread) {
            *at = rep->next; /* unlinked from the room's list, onto mine */
            rep->next = NULL;
            *tail = rep;
            tail = &rep->next;
        } else {
            at = &rep->next;
        }
    }
    r->replies_tail = at; /* the last link left */
    pthread_mutex_unlock(&r->lock);
    return mine;
}

int room_take_dirty(struct room *r, unsigned thread)
{
    return news_take(&r->dirty, thread);
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

/* What a push into slot q (NULL: the queue was full) returns; a queued
 * item has a free worker apply it without waiting for the next tick
 * (apply_queued). */
static int pushed(struct room *r, const struct queued *q)
{
    if (!q)
        return PROTO_E_QUEUE_FULL;
    struct pool *p = atomic_load_explicit(&r->pool, memory_order_acquire);
    if (p)
        pool_poke(p, &r->task);
    return 0;
}

int room_push(struct room *r, const struct room_actor *who, const struct proto_command *cmd)
{
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r, who->client == 0);
    if (q) {
        q->who = *who;
        q->refused = 0;
        q->cmd = *cmd;
        q->checkpoint = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    return pushed(r, q);
}

int room_checkpoint(struct room *r, const struct ckpt *id)
{
    struct ckpt *copy = malloc(sizeof *copy);
    if (!copy)
        return PROTO_E_INTERNAL;
    *copy = *id;
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r, 1);
    if (q) {
        q->who = (struct room_actor){.client = 0, .role = PROTO_ROLE_ADMIN, .team = -1};
        q->refused = 0;
        q->checkpoint = copy;
    }
    pthread_mutex_unlock(&r->lock);
    if (!q)
        free(copy);
    return pushed(r, q);
}

int room_push_refusal(struct room *r, uint64_t client, const char *id, int code,
                      const char *message)
{
    pthread_mutex_lock(&r->lock);
    struct queued *q = ring_slot(r, 0);
    if (q) {
        q->who = (struct room_actor){.client = client, .role = PROTO_ROLE_VIEWER, .team = -1};
        q->refused = code;
        q->checkpoint = NULL;
        snprintf(q->cmd.id, sizeof q->cmd.id, "%s", id ? id : "");
        snprintf(q->message, sizeof q->message, "%s", message);
    }
    pthread_mutex_unlock(&r->lock);
    return pushed(r, q);
}

/* Moves every queued item into r->batch; returns how many. The empty ring
 * starts again at its first slot: a head that went round would in time
 * write every slot of it (about 2 KB each, 2 MiB at the default --queue)
 * and so make all of it resident, however short the room's backlog; this
 * way only as many slots as the deepest backlog are ever touched. */
static uint32_t take_batch(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    uint32_t n = r->count;
    for (uint32_t k = 0; k < n; k++)
        r->batch[k] = r->ring[(r->head + k) % ring_len(r)];
    r->head = 0;
    r->count = 0;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* Every group's parameters into r->values. Lock held. */
static void copy_values(struct room *r)
{
    for (int g = 0; g < SIM_GROUPS; g++)
        r->values[g] = *sim_group_params(r->world, g);
}

void room__refresh_welcome(struct room *r)
{
    struct sim_view v;
    sim_view(r->world, &v);
    pthread_mutex_lock(&r->lock);
    r->info.tick = v.tick;
    copy_values(r);
    pthread_mutex_unlock(&r->lock);
    if (!room__is_relay(r) && r->cfg.link && r->cfg.link->params)
        r->cfg.link->params(r->cfg.link->arg, r);
}

/* A relay shows the owner's parameters once it has them, else the room's. */
void room_values(struct room *r, struct sim_params out[SIM_GROUPS])
{
    if (room__relay_values(r, out))
        return;
    pthread_mutex_lock(&r->lock);
    memcpy(out, r->values, sizeof r->values);
    pthread_mutex_unlock(&r->lock);
}

/* ---- snapshots ---------------------------------------------------------------- */

/* The kinds some client took within the last r->linger snapshots. */
unsigned room__wanted_kinds(struct room *r, uint64_t seq)
{
    unsigned want = 0;
    for (unsigned k = 0; k <= FRAME_WANT_V3; k++) {
        uint64_t at = atomic_load_explicit(&r->wanted[k], memory_order_relaxed);
        if (at && seq - at <= r->linger)
            want |= 1u << k;
    }
    return want;
}

void room_want(struct room *r, unsigned kind, uint64_t seq)
{
    /* At least the newest snapshot's: a client that comes to a room nobody
     * watched may hold an old announcement, and a want that old would have
     * lingered out already (and the room, with nobody to wake, never
     * announces a newer one). */
    uint64_t newest = atomic_load_explicit(&r->published_seq, memory_order_relaxed);
    if (seq < newest)
        seq = newest;
    if (kind <= FRAME_WANT_V3 && atomic_load_explicit(&r->wanted[kind], memory_order_relaxed) < seq)
        atomic_store_explicit(&r->wanted[kind], seq, memory_order_relaxed);
}

/* What this snapshot's encodings cost, into /metrics; returns the
 * nanoseconds they took together. */
static int64_t count_encodings(struct room *r)
{
    struct snapenc_stats now;
    snapenc_stats(r->enc, &now);
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        metrics_frames_encoded(k, now.frames[k] - r->stats.frames[k], now.ns[k] - r->stats.ns[k]);
    metrics_frames_encoded(FRAME_WANT_V3, now.v3_snapshots - r->stats.v3_snapshots,
                           now.v3_ns - r->stats.v3_ns);
    atomic_fetch_add_explicit(&g_metrics.v2_state_ns, now.prepare_ns - r->stats.prepare_ns,
                              memory_order_relaxed);
    uint64_t ns = now.v3_ns - r->stats.v3_ns + now.prepare_ns - r->stats.prepare_ns;
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        ns += now.ns[k] - r->stats.ns[k];
    r->stats = now;
    return (int64_t)ns;
}

/* Encodes the world into a new latest frame stamped with t's wall clock
 * (the tick wakes the service threads after); a room whose steps are split
 * cuts its tiles over the same threads. r->snapshot_ns says what the
 * encodings took. */
static void publish(struct room *r, const struct pool_time *t)
{
    struct sim_fork fork = stepper_fork(t->pool, SIM_PARTS);
    bool split = t->pool && stepper_is_split(&r->stepper);
    uint64_t seq = ++r->frame_seq;
    atomic_store_explicit(&r->published_seq, seq, memory_order_relaxed);
    struct snapenc_input in = {.world = r->world,
                               .seq = seq,
                               .wall_us = t->wall_us,
                               .paused = r->paused,
                               .want = room__wanted_kinds(r, seq),
                               .teams = r->cfg.mode == PROTO_MODE_RTS ? r->cfg.max_teams : 0,
                               .fork = split ? &fork : NULL};
    struct frame *f = snapenc_encode(r->enc, &in);
    r->snapshot_ns = count_encodings(r);
    if (!f)
        return;
    if (r->cfg.link)
        r->cfg.link->frame(r->cfg.link->arg, r, f);
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

uint64_t room__latest_seq(struct room *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t seq = r->latest ? r->latest->seq : 0;
    pthread_mutex_unlock(&r->lock);
    return seq;
}

void room__show_frame(struct room *r, struct frame *f, bool has_counts, uint32_t boids, bool paused)
{
    pthread_mutex_lock(&r->lock);
    struct frame *old = r->latest;
    r->latest = f;
    r->info.tick = f->tick;
    if (has_counts) {
        r->info.boids = boids;
        r->info.paused = paused;
    }
    pthread_mutex_unlock(&r->lock);
    frame_release(old);
    room__wake(r);
}

void room__update_info(struct room *r)
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
    if (r->cfg.replay) /* a recording's params commands change them as it plays */
        copy_values(r);
    pthread_mutex_unlock(&r->lock);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The pc-th percentile of n samples sorted in order; 0 for none. */
static double percentile(const float *v, uint32_t n, uint32_t pc)
{
    return n ? v[(n * pc + 99) / 100 - 1] : 0;
}

void room_info(struct room *r, struct room_info *out)
{
    float late[LATE_SAMPLES], run[LATE_SAMPLES];
    pthread_mutex_lock(&r->lock);
    *out = r->info;
    uint32_t n = r->late_count;
    memcpy(late, r->late_ms, n * sizeof *late);
    memcpy(run, r->run_ms, n * sizeof *run);
    pthread_mutex_unlock(&r->lock);
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += run[i];
    out->tick_ms_mean = n ? sum / n : 0;
    qsort(run, n, sizeof *run, cmp_float);
    qsort(late, n, sizeof *late, cmp_float);
    out->tick_ms_p99 = percentile(run, n, 99);
    out->late_p99_ms = percentile(late, n, 99);
    out->late_p50_ms = percentile(late, n, 50);
    out->late_max_ms = percentile(late, n, 100);
}

/* The measure cfg.measure took (its thread): kept for room_info. */
static void flock_measured(void *arg, const struct flockstats_result *res, uint64_t tick, double ms)
{
    struct room *r = arg;
    pthread_mutex_lock(&r->lock);
    r->info.has_flock = 1;
    r->info.flock = *res;
    r->info.flock_tick = tick;
    r->info.flock_ms = ms;
    pthread_mutex_unlock(&r->lock);
}

/* Every measure_every ticks, if the world stepped or a command changed it
 * since the last measure, offers it to be measured; a busy measurer is
 * asked again next tick. */
static void offer_measure(struct room *r, bool changed)
{
    r->unmeasured |= changed;
    if (!r->cfg.measure || !r->unmeasured || ++r->since_measure < r->measure_every)
        return;
    struct flockstats_frame f;
    flockstats_frame_of(r->world, &f);
    struct sim_view v;
    sim_view(r->world, &v);
    if (f.count == 0 && r->offered_empty) { /* an empty world stays empty: measured */
        r->unmeasured = false;
        return;
    }
    r->offered_empty = f.count == 0;
    if (measure_offer(r->cfg.measure, &r->measurer, &f, v.tick) != 0) {
        r->since_measure = 0; /* taken, or it never will be */
        r->unmeasured = false;
    }
}

void room_flock(const struct room_info *info, struct proto_flock *out)
{
    const struct flockstats_result *f = &info->flock;
    *out = (struct proto_flock){.tick = info->flock_tick,
                                .ms = info->flock_ms,
                                .boids = f->count,
                                .local_polarization = f->local_polarization,
                                .global_polarization = f->global_polarization,
                                .nn_p5 = f->nn_p5,
                                .nn_median = f->nn_median,
                                .mean_speed = f->mean_speed,
                                .clusters = f->clusters,
                                .largest_cluster = f->largest_cluster,
                                .flocks = f->flocks,
                                .mills = f->mills,
                                .mill_fraction = f->mill_fraction};
}

void room_limits(const struct room *r, size_t max_message, struct proto_limits *out)
{
    *out = (struct proto_limits){.width = r->cfg.sim.width,
                                 .height = r->cfg.sim.height,
                                 .capacity = r->cfg.sim.capacity,
                                 .max_message = max_message};
}

void room_view_pacing(const struct room *r, double *budget, double *snapshot_hz)
{
    *budget = r->info.view_budget; /* both set by room_create() alone */
    *snapshot_hz = r->info.snapshot_hz;
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

enum room_audience room_audience(const struct room *r, const struct room_actor *who)
{
    if (r->cfg.mode != PROTO_MODE_RTS || who->role == PROTO_ROLE_ADMIN)
        return ROOM_AUDIENCE_ALL;
    if (who->role == PROTO_ROLE_PLAYER && who->team > 0 && who->team <= FOG_MAX_TEAMS)
        return ROOM_AUDIENCE_TEAM;
    return who->role == PROTO_ROLE_VIEWER && r->cfg.spectator_delay > 0 ? ROOM_AUDIENCE_DELAYED
                                                                        : ROOM_AUDIENCE_ALL;
}

/* A version 3 welcome's "stream" for who (PROTOCOL.md §12.3). */
static struct proto_welcome_stream stream_of(const struct room *r, const struct room_actor *who)
{
    static const char *const names[] = {"all", "team", "delayed"};
    enum room_audience a = room_audience(r, who);
    return (struct proto_welcome_stream){
        .cols = r->grid.cols,
        .rows = r->grid.rows,
        .max_shift = PROTO_V3_MAX_SHIFT,
        .max_sample = PROTO_V3_MAX_SAMPLE,
        .field_cells = PROTO_V3_FIELD_CELLS,
        .vscale = r->grid.vscale,
        .budget = r->info.view_budget,
        .audience = names[a],
        .delay_s = a == ROOM_AUDIENCE_DELAYED ? r->cfg.spectator_delay : 0.0};
}

int room_welcome(struct room *r, const struct room_actor *who, char *buf, size_t cap)
{
    struct sim_params values[SIM_GROUPS];
    struct proto_group_values groups[SIM_GROUPS];
    size_t n_groups = 0;
    struct proto_flock flock;
    char reason[ROOM_REASON_MAX];
    bool unavailable = room__relay_is_unavailable(r, reason, sizeof reason);
    room_values(r, values);
    pthread_mutex_lock(&r->lock);
    if (r->info.has_flock)
        room_flock(&r->info, &flock);
    struct proto_welcome w = {
        .protocol = who->protocol,
        .client = who->client,
        .room = r->name,
        .mode = r->cfg.mode,
        .role = who->role,
        .team = who->team,
        .rate = r->cfg.rate,
        .burst = r->cfg.burst,
        .player_obstacles = r->cfg.player_obstacles,
        .max_teams = r->cfg.mode == PROTO_MODE_RTS ? r->cfg.max_teams : 0,
        .team_units = r->cfg.team_units,
        .team_cap = r->cfg.team_cap,
        .replay = r->cfg.replay != NULL,
        .tick = r->info.tick,
        .tick_hz = r->info.tick_hz,
        .snapshot_hz = r->info.snapshot_hz,
        .width = r->info.width,
        .height = r->info.height,
        .wrap = r->cfg.sim.edges == SIM_EDGES_WRAP,
        .capacity = r->info.capacity,
        .max_obstacles = r->info.max_obstacles,
        .max_message = r->cfg.max_message,
        .values = &values[0],
        .flock = r->info.has_flock ? &flock : NULL,
        .unavailable = unavailable,
        .unavailable_reason = reason,
        .dilation = r->info.dilation,
    };
    char script[SCRIPT_NAME_MAX + 1];
    if (room_script_info(r, script, &w.script_hash, NULL))
        w.script = script;
    struct proto_welcome_stream stream = stream_of(r, who);
    if (who->protocol == PROTO_V3_VERSION)
        w.stream = &stream;
    pthread_mutex_unlock(&r->lock);
    for (unsigned g = 1; g < SIM_GROUPS; g++)
        if (memcmp(&values[g], &values[0], sizeof values[0]))
            groups[n_groups++] = (struct proto_group_values){g, &values[g]};
    w.groups = groups;
    w.n_groups = n_groups;
    if (w.replay)
        replay_tick_range(r->cfg.replay, &w.replay_first, &w.replay_last);
    return proto_reply_welcome(buf, cap, &w);
}

/* ---- the tick ------------------------------------------------------------------ */

/* Keeps how late this tick started and how long the one before took, for
 * room_info. */
static void record_lateness(struct room *r, int64_t late_ns, int64_t run_ns)
{
    pthread_mutex_lock(&r->lock);
    r->late_ms[r->late_next] = (float)((double)late_ns / 1e6);
    r->run_ms[r->late_next] = (float)((double)run_ns / 1e6);
    r->late_next = (r->late_next + 1) % LATE_SAMPLES;
    if (r->late_count < LATE_SAMPLES)
        r->late_count++;
    pthread_mutex_unlock(&r->lock);
}

void room__wake(struct room *r)
{
    news_post(&r->dirty);
    if (r->cfg.notify)
        r->cfg.notify(r->cfg.notify_arg);
}

/* One queued item at its turn: a checkpoint taken (it reflects every
 * command before it), or a command applied and, if it changed the room,
 * logged. */
static void apply_one(struct room *r, const struct queued *q)
{
    if (q->checkpoint) {
        room__take_checkpoint(r, q->checkpoint);
        free(q->checkpoint);
        return;
    }
    struct room_applied a;
    struct staged *before = r->staged_last;
    if (!room__apply_command(r, q, &a))
        return;
    room__record_command(r, q->who.origin ? q->who.origin : q->who.client, &a);
    if (reclog_is_recorded(a.cmd.kind))
        room__origin_note(r, q->who.origin, a.tick, a.obstacle);
    if (r->staging && r->staged_last != before && reclog_is_recorded(a.cmd.kind)) {
        r->staged_last->logged = true; /* its reply waits for the log */
        r->staged_last->forwarded = q->who.origin != 0;
        snprintf(r->staged_last->id, sizeof r->staged_last->id, "%s", q->cmd.id);
    }
}

/* The cluster's command log cannot take records now (NATS lost, or the
 * lease not renewed lately): the batch's commands that would change the
 * room are refused in their turn, unapplied. */
static void refuse_unloggable(struct room *r, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        struct queued *q = &r->batch[k];
        if (q->checkpoint || q->refused || !reclog_is_recorded(q->cmd.kind))
            continue;
        q->refused = PROTO_E_UNAVAILABLE;
        snprintf(q->message, sizeof q->message,
                 "the room's command log cannot be reached: it did not take effect; retry");
        if (q->who.origin) /* not answered: its node sends it again, to the owner of then */
            q->who.client = 0;
    }
}

/* At the start of a tick, the switch the cluster asked for: to ticking,
 * from the checkpoint it came with (also if it replaced a step down not
 * taken: the world ticked since may hold what the log lacks), the frame
 * numbers carried on past every base a client of this node may hold; or
 * to relaying. */
static void take_switch(struct room *r)
{
    struct room_switch sw;
    if (!room__relay_take_switch(r, &sw))
        return;
    room__clog_reset(r);
    if (sw.owner && (room__is_relay(r) || sw.stepped_down)) {
        /* A batch its log refused may have noted origins it never applied
         * for good: the log's (read by the resume) are the ones. */
        room__origin_forget(r);
        if (sw.from.ck)
            room__resume_from(r, &sw.from);
        uint64_t last_seq = room__latest_seq(r);
        if (r->frame_seq < last_seq + PROTO_V2_HISTORY + 1)
            r->frame_seq = last_seq + PROTO_V2_HISTORY + 1;
        r->snapshot_phase = r->cfg.tick_hz - r->cfg.snapshot_hz; /* a frame at once */
    }
    room__relay_become(r, sw.owner);
    if (sw.owner) /* its own world's parameters from now on, told to the relays */
        room__refresh_welcome(r);
    room_takeover_free(&sw.from);
}

/*
 * Applies (or, in a relay, forwards) every queued item and wakes the
 * service threads for the replies: what a poke runs between ticks, and
 * each tick before its step. Returns true for a relay, whose tick ends
 * there.
 */
static bool apply_queued(struct room *r)
{
    if (r->relay)
        take_switch(r);
    bool is_relay = room__is_relay(r);
    uint32_t n = take_batch(r);
    if (!is_relay)
        room__hash_for_pings(r, n);
    r->staging = n > 0 && !is_relay && room__logs_to_cluster(r);
    if (r->staging && !r->cfg.link->can_log(r->cfg.link->arg, r))
        refuse_unloggable(r, n);
    for (uint32_t k = 0; k < n; k++)
        if (!is_relay || !room__relay_forward(r, &r->batch[k]))
            apply_one(r, &r->batch[k]);
    if (n > 0) {               /* the replies go now, not after the step and the frame, */
        room__record_flush(r); /* and not before what they ack is in the logs */
        if (r->staging) {
            r->staging = false;
            release_staged(r, room__clog_flush(r));
        }
        room__wake(r);
    }
    return is_relay;
}

void room_checkpoint_now(struct room *r, const struct ckpt *id)
{
    if (apply_queued(r)) /* a relay's checkpoint is nobody's state */
        return;
    room__take_checkpoint(r, id);
    if (room__logs_to_cluster(r))
        room__clog_flush(r); /* its mark, then the copy to the writer */
    room__record_flush(r);
}

/* One step of the world: the simulation's (on the pool's idle workers too
 * when the room's ticks are long: stepper.h; t as the tick was handed
 * it), or the recording's next tick, which pauses the room at its end. */
static void step(struct room *r, const struct pool_time *t)
{
    if (!r->cfg.replay) {
        stepper_step(&r->stepper, r->world, t, r->task.period_ns);
        return;
    }
    if (replay_advance(r->cfg.replay, UINT64_MAX) != 1) {
        r->paused = 1; /* the recording's end: hold its last state */
        r->steps_pending = 0;
    }
}

void room_tick(struct room *r, const struct pool_time *t)
{
    room__pace_tick(r, t, r->snapshot_ns);
    r->snapshot_ns = -1;
    if (apply_queued(r))
        return;
    int stepping = !r->paused || r->steps_pending > 0;
    if (stepping) {
        room__script_tick(r); /* the rules' turn, after the commands, before the step */
        step(r, t);
        metrics_stepped();
        if (r->paused && r->steps_pending > 0)
            r->steps_pending--;
    }
    room__record_tick(r, stepping, t->now_ns);
    if (room__logs_to_cluster(r))
        room__clog_flush(r); /* records of the tick's own (a script reloaded) */
    room__squads_after_step(r, t->now_ns);
    bool is_published = false;
    r->snapshot_phase += room__snapshot_step(r);
    if (r->snapshot_phase >= r->cfg.tick_hz * (1.0 - 1e-9)) {
        r->snapshot_phase = fmax(0.0, r->snapshot_phase - r->cfg.tick_hz);
        room__update_info(r);
        publish(r, t);
        is_published = true; /* a client that comes takes its first want from the announcement */
    }
    offer_measure(r, stepping);
    record_lateness(r, t->late_ns, t->last_ns);
    if (is_published)
        room__wake(r);
}

/* The room's pool task: its ticks, and between them what was queued. */
static void run_tick(void *arg, const struct pool_time *t)
{
    room_tick(arg, t);
}

static void run_queued(void *arg)
{
    apply_queued(arg);
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
    r->world = cfg->replay ? replay_world(cfg->replay) : sim_create(&cfg->sim, err);
    struct snapenc_config ec = {.capacity = cfg->sim.capacity,
                                .max_obstacles = cfg->sim.max_obstacles,
                                .pre = cfg->frame_pre,
                                .clock_ns = clock_mono_ns, /* durations: /metrics, the pace */
                                .delay =
                                    cfg->mode == PROTO_MODE_RTS
                                        ? (uint32_t)llround(cfg->spectator_delay * cfg->snapshot_hz)
                                        : 0};
    if (r->world) { /* the world's own size: a recording's may differ from cfg */
        const struct sim_config *w = sim_config(r->world);
        tiles_grid_for(w->width, w->height, cfg->tile > 0.0f ? cfg->tile : ROOM_TILE,
                       sim_group_params(r->world, 0)->max_speed, &ec.grid);
        r->grid = ec.grid;
    }
    r->enc = r->world ? snapenc_create(&ec, err) : NULL;
    r->ring = calloc(cfg->queue_len + RESERVE, sizeof *r->ring);
    r->batch = calloc(cfg->queue_len + RESERVE, sizeof *r->batch);
    r->owners = calloc(cfg->sim.max_obstacles + 1, sizeof *r->owners);
    if (!r->world || !r->enc || !r->ring || !r->batch || !r->owners) {
        if (r->world && r->enc)
            *err = "out of memory";
        room_destroy(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    r->replies_tail = &r->replies;
    r->staged_tail = &r->staged;
    r->snapshot_phase = cfg->tick_hz - cfg->snapshot_hz; /* the first tick publishes */
    r->snapshot_ns = -1;
    r->linger = (uint64_t)ceil(ROOM_WANT_LINGER_S * cfg->snapshot_hz);
    if (!cfg->replay) { /* its mode's parameters and its boids, spread over the world */
        apply_mode_params(r->world, cfg->mode);
        sim_scatter(r->world, cfg->boids, 0);
    }
    r->paused = cfg->replay != NULL; /* a recording waits for a viewer's resume */
    copy_values(r);
    r->measurer = (struct measure_client){.done = flock_measured, .arg = r};
    r->measure_every = (uint64_t)fmax(1, llround(cfg->tick_hz / ROOM_MEASURE_HZ));
    r->unmeasured = true;
    r->task = (struct pool_task){
        .run = run_tick, .poke = run_queued, .arg = r, .period_ns = (int64_t)(1e9 / cfg->tick_hz)};
    r->info = (struct room_info){
        .width = cfg->sim.width,
        .height = cfg->sim.height,
        .tick_hz = cfg->tick_hz,
        .snapshot_hz = cfg->snapshot_hz,
        .view_budget = cfg->view_budget > 0 ? cfg->view_budget : 2e6,
        .capacity = cfg->sim.capacity,
        .max_obstacles = cfg->sim.max_obstacles,
        .wrap = cfg->sim.edges == SIM_EDGES_WRAP,
        .boids = cfg->boids,
        .dilation = 1.0,
        .snapshot_hz_now = cfg->snapshot_hz,
    };
    if (room__pace_create(r) < 0 || room__relay_create(r) < 0) {
        *err = "out of memory";
        room_destroy(r);
        return NULL;
    }
    static _Thread_local char why[SCRIPT_REASON_MAX];
    if (cfg->script && !cfg->replay && room__script_create(r, cfg->script, NULL, 0, why) < 0) {
        *err = why;
        room_destroy(r);
        return NULL;
    }
    return r;
}

int room_schedule(struct room *r, struct pool *p)
{
    int rc = pool_add(p, &r->task);
    if (rc < 0)
        return rc;
    r->scheduled = 1;
    atomic_store_explicit(&r->pool, p, memory_order_release);
    return 0;
}

void room_unschedule(struct room *r, struct pool *p)
{
    atomic_store_explicit(&r->pool, NULL, memory_order_release);
    if (r->scheduled)
        pool_remove(p, &r->task);
    r->scheduled = 0;
}

/* Checkpoint requests still queued, which no tick will take. */
static void drop_queued(struct room *r)
{
    if (!r->replies_tail || !r->ring || !r->batch) /* not made whole */
        return;
    uint32_t n = take_batch(r);
    for (uint32_t k = 0; k < n; k++)
        free(r->batch[k].checkpoint);
}

void room_destroy(struct room *r)
{
    if (!r)
        return;
    room__relay_destroy(r);
    room__squads_destroy(r);
    if (r->cfg.measure)
        measure_forget(r->cfg.measure, &r->measurer);
    struct room_reply *rep = r->replies;
    while (rep) {
        struct room_reply *next = rep->next;
        free(rep);
        rep = next;
    }
    frame_release(r->latest);
    drop_queued(r);
    room__store_close(r);
    room__script_destroy(r); /* its end hook after the log's END: the room is gone */
    room__pace_destroy(r);
    if (r->replies_tail)
        pthread_mutex_destroy(&r->lock);
    if (!r->cfg.replay) /* a recording's world is the replay's */
        sim_destroy(r->world);
    snapenc_destroy(r->enc);
    free(r->ring);
    free(r->batch);
    free(r->owners);
    free(r);
}
