/*
 * metrics.c — counters and their Prometheus rendering (see metrics.h).
 */
#include "metrics.h"

#include "frame.h"

#include "textbuf.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <string.h>

struct metrics g_metrics;

/* Upper bounds of the tick-duration buckets, in seconds. */
static const double tick_bounds[METRICS_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                    0.01,   0.025,   0.05,   0.1,   0.25,   1};

/* Upper bounds of the reply-latency buckets, in seconds: a command is
 * applied as soon as a tick worker is free, so most take a millisecond or
 * less; one tick at 60 Hz (16.7 ms) and one tick + 2 ms still mark the
 * worst a command should wait. */
static const double reply_bounds[METRICS_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.0167,
                                                     0.0187, 0.025, 0.05,   0.1,   0.25, 1};

/* Error codes counted separately; anything else lands on "other". The
 * list is fixed so the metric's label set is bounded. */
static const char *const codes[] = {
    "bad_json",   "unknown_cmd",  "bad_arg",   "out_of_range", "capacity", "not_found", "too_large",
    "queue_full", "rate_limited", "forbidden", "internal",     "refused",  "other",
};
#define NCODES (sizeof codes / sizeof codes[0])
_Static_assert(NCODES <= METRICS_MAX_CODES, "too many error codes");

static void observe(struct metrics_histogram *h, const double *bounds, uint64_t ns)
{
    double s = (double)ns * 1e-9;
    size_t b = 0;
    while (b < METRICS_BUCKETS && s > bounds[b])
        b++;
    atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

void metrics_tick(uint64_t ns)
{
    observe(&g_metrics.tick, tick_bounds, ns);
}

void metrics_reply(uint64_t ns)
{
    observe(&g_metrics.reply, reply_bounds, ns);
}

void metrics_script_hook(double ms)
{
    observe(&g_metrics.script, tick_bounds, (uint64_t)(ms * 1e6));
}

void metrics_script_error(void)
{
    atomic_fetch_add_explicit(&g_metrics.script_errors, 1, memory_order_relaxed);
}

void metrics_script_memory(int64_t delta)
{
    atomic_fetch_add_explicit(&g_metrics.script_memory, delta, memory_order_relaxed);
}

void metrics_stepped(void)
{
    atomic_fetch_add_explicit(&g_metrics.ticks, 1, memory_order_relaxed);
}

void metrics_reject(const char *code)
{
    size_t i = 0;
    while (i < NCODES - 1 && strcmp(codes[i], code) != 0)
        i++;
    atomic_fetch_add_explicit(&g_metrics.commands_rejected[i], 1, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* flockd_NAME, a counter. */
static void render_total(struct textbuf *t, const char *name, const char *help, uint64_t v)
{
    textbuf_printf(t, "# HELP flockd_%s %s\n# TYPE flockd_%s counter\nflockd_%s %llu\n", name, help,
                   name, name, (unsigned long long)v);
}

static void render_counters(struct textbuf *t)
{
    static const struct {
        const char *name, *help;
        size_t offset;
    } rows[] = {
        {"ticks_total",
         "Simulation ticks run (a paused room's periods, which step nothing, are not counted).",
         offsetof(struct metrics, ticks)},
        {"tick_overruns_total", "Ticks that finished after their deadline.",
         offsetof(struct metrics, tick_overruns)},
        {"split_ticks_total", "Ticks whose step was cut into pieces for several tick threads.",
         offsetof(struct metrics, split_ticks)},
        {"connections_total", "WebSocket connections accepted.",
         offsetof(struct metrics, connections_total)},
        {"snapshots_encoded_total", "Snapshots encoded (once per room).",
         offsetof(struct metrics, snapshots_encoded)},
        {"snapshots_skipped_total", "Snapshots a slow client never got.",
         offsetof(struct metrics, snapshots_skipped)},
        {"commands_accepted_total", "Commands applied.",
         offsetof(struct metrics, commands_accepted)},
        {"keyframes_requested_total",
         "keyframe commands applied (a client's decoder refused a frame).",
         offsetof(struct metrics, keyframes_requested)},
        {"admin_denied_total", "Joins as admin refused for a wrong or missing token.",
         offsetof(struct metrics, admin_denied)},
        {"auth_failures_total",
         "Wrong admin tokens and room passwords (past auth-tries, each delays its address's "
         "next attempts).",
         offsetof(struct metrics, auth_failures)},
        {"kicked_total", "Clients kicked by an admin.", offsetof(struct metrics, kicked)},
        {"rooms_created_total", "Rooms created by joins.", offsetof(struct metrics, rooms_created)},
        {"rooms_expired_total", "Empty rooms removed.", offsetof(struct metrics, rooms_expired)},
        {"command_logs_refused_total",
         "Command logs (a file at start, a cluster's at a takeover) refused as corrupt, foreign or "
         "not replaying: the room carried on from its checkpoint alone.",
         offsetof(struct metrics, logs_refused)},
        {"script_errors_total",
         "Room scripts disabled by an error, their budget or their memory cap.",
         offsetof(struct metrics, script_errors)},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        atomic_uint_fast64_t *v = (atomic_uint_fast64_t *)((char *)&g_metrics + rows[i].offset);
        render_total(t, rows[i].name, rows[i].help, get(v));
    }
}

static const char *const limit_names[LIMIT_COUNT] = {
    [LIMIT_MESSAGE_SIZE] = "message_size",
    [LIMIT_RATE] = "rate",
    [LIMIT_RATE_ABUSE] = "rate_abuse",
    [LIMIT_CONNECTIONS] = "connections",
    [LIMIT_CONNECTIONS_IP] = "connections_per_ip",
    [LIMIT_ORIGIN] = "origin",
    [LIMIT_ROOMS] = "rooms",
    [LIMIT_ROOM_BOIDS] = "room_boids",
    [LIMIT_ROOM_CAPACITY] = "room_capacity",
    [LIMIT_ROOM_OBSTACLES] = "room_obstacles",
    [LIMIT_PLAYER_OBSTACLES] = "player_obstacles",
    [LIMIT_TEAMS] = "teams",
    [LIMIT_TEAM_CAP] = "team_cap",
    [LIMIT_QUEUE] = "queue",
    [LIMIT_STALE] = "stale",
    [LIMIT_UNREAD_REPLIES] = "unread_replies",
    [LIMIT_AUTH] = "auth",
};

void metrics_limit(enum metrics_limit which)
{
    if ((unsigned)which < LIMIT_COUNT)
        atomic_fetch_add_explicit(&g_metrics.limit_hits[which], 1, memory_order_relaxed);
}

_Static_assert(METRICS_FRAME_KINDS == FRAME_WANT_V3 + 1, "one counter per kind of frame");

void metrics_frames_encoded(unsigned kind, uint64_t frames, uint64_t ns)
{
    if (kind >= METRICS_FRAME_KINDS)
        return;
    atomic_fetch_add_explicit(&g_metrics.frames_encoded[kind], frames, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_metrics.encode_ns[kind], ns, memory_order_relaxed);
}

void metrics_frame_sent(unsigned thread, unsigned kind, size_t bytes)
{
    if (kind >= METRICS_FRAME_KINDS)
        return;
    struct metrics_net_thread *nt = &g_metrics.net[thread % METRICS_NET_THREADS];
    atomic_fetch_add_explicit(&nt->frames_sent[kind], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&nt->frame_bytes_sent[kind], bytes, memory_order_relaxed);
}

static void render_gauges(struct textbuf *t)
{
    textbuf_printf(t,
                   "# HELP flockd_clients Connected WebSocket clients.\n"
                   "# TYPE flockd_clients gauge\nflockd_clients %lld\n",
                   (long long)atomic_load_explicit(&g_metrics.clients, memory_order_relaxed));
    textbuf_printf(t,
                   "# HELP flockd_rooms Rooms running.\n"
                   "# TYPE flockd_rooms gauge\nflockd_rooms %lld\n",
                   (long long)atomic_load_explicit(&g_metrics.rooms, memory_order_relaxed));
    textbuf_printf(t,
                   "# HELP flockd_script_memory_bytes Memory the rooms' scripts hold.\n"
                   "# TYPE flockd_script_memory_bytes gauge\nflockd_script_memory_bytes %lld\n",
                   (long long)atomic_load_explicit(&g_metrics.script_memory, memory_order_relaxed));
#ifdef __GLIBC__
    /* What malloc has handed out and what it keeps free: a leak grows the
     * first, while RSS also follows what the heaps keep after a peak. (A
     * sanitizer's allocator is not glibc's: there these count little.) */
    struct mallinfo2 mi = mallinfo2();
    textbuf_printf(
        t,
        "# HELP flockd_heap_in_use_bytes Bytes malloc has handed out (glibc's mallinfo2: "
        "uordblks + hblkhd).\n"
        "# TYPE flockd_heap_in_use_bytes gauge\nflockd_heap_in_use_bytes %zu\n"
        "# HELP flockd_heap_free_bytes Bytes free in malloc's arenas, kept by the "
        "process (fordblks).\n"
        "# TYPE flockd_heap_free_bytes gauge\nflockd_heap_free_bytes %zu\n",
        mi.uordblks + mi.hblkhd, mi.fordblks);
#endif
}

/* The two labelled counters: refusals by code, limit hits by limit. */
static void render_labelled(struct textbuf *t)
{
    textbuf_printf(t, "# HELP flockd_commands_rejected_total Commands refused, by error code.\n"
                      "# TYPE flockd_commands_rejected_total counter\n");
    for (size_t i = 0; i < NCODES; i++)
        textbuf_printf(t, "flockd_commands_rejected_total{code=\"%s\"} %llu\n", codes[i],
                       (unsigned long long)get(&g_metrics.commands_rejected[i]));
    textbuf_printf(
        t, "# HELP flockd_limit_hits_total Times a limit of the limits table was hit, by name.\n"
           "# TYPE flockd_limit_hits_total counter\n");
    for (size_t i = 0; i < LIMIT_COUNT; i++)
        textbuf_printf(t, "flockd_limit_hits_total{limit=\"%s\"} %llu\n", limit_names[i],
                       (unsigned long long)get(&g_metrics.limit_hits[i]));
}

/* One counter per frame kind, from METRICS_FRAME_KINDS values. */
static void render_by_kind(struct textbuf *t, const char *name, const char *help, const uint64_t *v,
                           double scale)
{
    textbuf_printf(t, "# HELP flockd_%s %s\n# TYPE flockd_%s counter\n", name, help, name);
    for (unsigned k = 0; k < METRICS_FRAME_KINDS; k++)
        textbuf_printf(t, "flockd_%s{kind=\"%s\"} %.12g\n", name, frame_kind_name(k),
                       (double)v[k] * scale);
}

static void render_frames(struct textbuf *t)
{
    uint64_t encoded[METRICS_FRAME_KINDS], ns[METRICS_FRAME_KINDS];
    uint64_t sent[METRICS_FRAME_KINDS] = {0}, bytes[METRICS_FRAME_KINDS] = {0};
    uint64_t all_sent = 0, all_bytes = 0;
    for (unsigned k = 0; k < METRICS_FRAME_KINDS; k++) {
        encoded[k] = get(&g_metrics.frames_encoded[k]);
        ns[k] = get(&g_metrics.encode_ns[k]);
        for (unsigned i = 0; i < METRICS_NET_THREADS; i++) {
            sent[k] += get(&g_metrics.net[i].frames_sent[k]);
            bytes[k] += get(&g_metrics.net[i].frame_bytes_sent[k]);
        }
        all_sent += sent[k];
        all_bytes += bytes[k];
    }
    render_total(t, "snapshots_sent_total", "Snapshot frames written to clients.", all_sent);
    render_total(t, "bytes_sent_total", "Snapshot bytes written to clients.", all_bytes);
    render_by_kind(t, "frames_encoded_total", "Snapshot frames encoded, by kind (once per room).",
                   encoded, 1);
    render_by_kind(t, "frame_encode_seconds_total", "Time spent encoding frames, by kind.", ns,
                   1e-9);
    textbuf_printf(t,
                   "# HELP flockd_v2_state_seconds_total Time spent quantizing and hashing "
                   "snapshots for version 2 frames.\n"
                   "# TYPE flockd_v2_state_seconds_total counter\n"
                   "flockd_v2_state_seconds_total %.12g\n",
                   (double)get(&g_metrics.v2_state_ns) * 1e-9);
    render_by_kind(t, "frames_sent_total", "Snapshot frames written to clients, by kind.", sent, 1);
    render_by_kind(t, "frame_bytes_sent_total", "Snapshot bytes written to clients, by kind.",
                   bytes, 1);
}

/* Deliveries and connections per service thread: each one's share. */
static void render_net_threads(struct textbuf *t)
{
    unsigned n = atomic_load_explicit(&g_metrics.net_threads, memory_order_relaxed);
    n = n > METRICS_NET_THREADS ? METRICS_NET_THREADS : n;
    textbuf_printf(t, "# HELP flockd_net_deliveries_total Snapshot frames written to clients, by "
                      "service thread.\n# TYPE flockd_net_deliveries_total counter\n");
    for (unsigned i = 0; i < n; i++) {
        uint64_t sent = 0;
        for (unsigned k = 0; k < METRICS_FRAME_KINDS; k++)
            sent += get(&g_metrics.net[i].frames_sent[k]);
        textbuf_printf(t, "flockd_net_deliveries_total{thread=\"%u\"} %llu\n", i,
                       (unsigned long long)sent);
    }
    textbuf_printf(t, "# HELP flockd_net_connections WebSocket clients, by service thread.\n"
                      "# TYPE flockd_net_connections gauge\n");
    for (unsigned i = 0; i < n; i++)
        textbuf_printf(
            t, "flockd_net_connections{thread=\"%u\"} %lld\n", i,
            (long long)atomic_load_explicit(&g_metrics.net[i].connections, memory_order_relaxed));
}

/* flockd_NAME_seconds as a Prometheus histogram. */
static void render_histogram(struct textbuf *t, const char *name, const char *help,
                             struct metrics_histogram *h, const double *bounds)
{
    textbuf_printf(t, "# HELP flockd_%s_seconds %s\n# TYPE flockd_%s_seconds histogram\n", name,
                   help, name);
    uint64_t cum = 0;
    for (size_t b = 0; b < METRICS_BUCKETS; b++) {
        cum += get(&h->bucket[b]);
        textbuf_printf(t, "flockd_%s_seconds_bucket{le=\"%g\"} %llu\n", name, bounds[b],
                       (unsigned long long)cum);
    }
    cum += get(&h->bucket[METRICS_BUCKETS]);
    textbuf_printf(t, "flockd_%s_seconds_bucket{le=\"+Inf\"} %llu\n", name,
                   (unsigned long long)cum);
    textbuf_printf(t, "flockd_%s_seconds_sum %.9f\n", name, (double)get(&h->sum_ns) * 1e-9);
    textbuf_printf(t, "flockd_%s_seconds_count %llu\n", name, (unsigned long long)cum);
}

int metrics_render(char *buf, size_t cap)
{
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    render_counters(&t);
    render_gauges(&t);
    render_labelled(&t);
    render_frames(&t);
    render_net_threads(&t);
    render_histogram(&t, "tick_duration",
                     "Time to run one period of a room (its commands, its tick unless paused, "
                     "its snapshot).",
                     &g_metrics.tick, tick_bounds);
    render_histogram(&t, "command_reply",
                     "Time from a command's arrival to its reply written to the client's socket.",
                     &g_metrics.reply, reply_bounds);
    render_histogram(&t, "script_hook", "Time one call of a room script's hook took.",
                     &g_metrics.script, tick_bounds);
    return textbuf_finish(&t);
}
