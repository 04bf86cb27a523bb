/*
 * metrics — process-wide counters, rendered as Prometheus text at /metrics.
 *
 * Counters are relaxed atomics: any thread may bump them, the service
 * thread renders them. Names are prefixed flockd_. Tick durations and
 * how long a command waits for its reply go into fixed-bucket histograms.
 *
 * Never: allocation after start, I/O. Threading: every function is safe
 * from any thread.
 */
#ifndef FLOCKD_METRICS_H
#define FLOCKD_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_BUCKETS     12 /* a histogram's finite buckets */
#define METRICS_MAX_CODES   24
#define METRICS_FRAME_KINDS 23 /* FRAME_KINDS (version 1, key, 20 deltas) and version 3 */
#define METRICS_NET_THREADS 64 /* service threads counted apart (LOBBY_THREADS_MAX) */

/* Counts of observations by upper bound (metrics.c has the bounds), the
 * last +Inf, and their sum. */
struct metrics_histogram {
    atomic_uint_fast64_t bucket[METRICS_BUCKETS + 1];
    atomic_uint_fast64_t sum_ns;
};

/* What one service thread did, on cache lines of its own: a frame written
 * touches no counter another thread writes. */
struct metrics_net_thread {
    _Alignas(64) atomic_int_fast64_t connections;          /* WebSocket clients it holds now */
    atomic_uint_fast64_t frames_sent[METRICS_FRAME_KINDS]; /* by kind (snapenc.h) */
    atomic_uint_fast64_t frame_bytes_sent[METRICS_FRAME_KINDS];
};

/* Every limit of the limits table whose hits are counted, by name in
 * /metrics as flockd_limit_hits_total{limit="NAME"}. */
enum metrics_limit {
    LIMIT_MESSAGE_SIZE,     /* max-message: closed with 1009 */
    LIMIT_RATE,             /* rate/burst: a command refused rate_limited */
    LIMIT_RATE_ABUSE,       /* rate/burst: closed with 1008 for going on */
    LIMIT_CONNECTIONS,      /* max-clients: a connection refused */
    LIMIT_CONNECTIONS_IP,   /* max-per-ip: a connection refused */
    LIMIT_ORIGIN,           /* origins: a browser connection refused */
    LIMIT_ROOMS,            /* max-rooms: a join could not create a room */
    LIMIT_ROOM_BOIDS,       /* max-room-boids: a join asked for too many */
    LIMIT_ROOM_CAPACITY,    /* capacity: spawn or reset refused */
    LIMIT_ROOM_OBSTACLES,   /* max-obstacles: obstacle_add refused */
    LIMIT_PLAYER_OBSTACLES, /* player-obstacles: obstacle_add refused */
    LIMIT_TEAMS,            /* max-teams: an RTS join refused */
    LIMIT_TEAM_CAP,         /* team-cap: spawn into a team refused */
    LIMIT_QUEUE,            /* queue: a command refused queue_full */
    LIMIT_STALE,            /* stale-timeout: a lagging client closed */
    LIMIT_UNREAD_REPLIES,   /* a client that does not read its replies closed */
    LIMIT_AUTH,             /* auth-tries: a token or password refused unchecked */
    LIMIT_COUNT
};

struct metrics {
    atomic_uint_fast64_t ticks;
    atomic_uint_fast64_t tick_overruns;
    atomic_uint_fast64_t split_ticks;   /* steps cut into pieces for several tick threads */
    struct metrics_histogram tick;      /* a room's period of work */
    struct metrics_histogram reply;     /* a command's arrival to its reply's write */
    struct metrics_histogram script;    /* one call of a room script's hook */
    atomic_uint_fast64_t script_errors; /* scripts disabled (error, budget, memory) */
    atomic_int_fast64_t script_memory;  /* bytes every room's script holds */
    atomic_int_fast64_t clients;
    atomic_uint_fast64_t connections_total;
    atomic_uint_fast64_t snapshots_encoded;
    atomic_uint_fast64_t snapshots_skipped;
    atomic_uint_fast64_t commands_accepted;
    atomic_uint_fast64_t keyframes_requested; /* keyframe commands applied */
    atomic_uint_fast64_t admin_denied;        /* joins as admin refused (bad or no token) */
    atomic_uint_fast64_t auth_failures;       /* wrong admin tokens and room passwords */
    atomic_uint_fast64_t limit_hits[LIMIT_COUNT];
    atomic_uint_fast64_t kicked;
    atomic_uint_fast64_t rooms_created; /* by joins */
    atomic_uint_fast64_t rooms_expired;
    atomic_uint_fast64_t logs_refused; /* command logs a room could not carry on from */
    atomic_int_fast64_t rooms;         /* gauge */
    atomic_uint_fast64_t commands_rejected[METRICS_MAX_CODES];
    /* Snapshot frames by kind (snapenc.h): encoded (once per room and
     * snapshot) and the time that took; those written to clients and
     * their bytes are counted per service thread (net[]). */
    atomic_uint_fast64_t frames_encoded[METRICS_FRAME_KINDS];
    atomic_uint_fast64_t encode_ns[METRICS_FRAME_KINDS];
    atomic_uint_fast64_t v2_state_ns; /* quantizing and hashing for version 2 */
    atomic_uint net_threads;          /* service threads running: the rows of net[] shown */
    struct metrics_net_thread net[METRICS_NET_THREADS];
};

/* The one metrics block of the process (zero-initialised static). */
extern struct metrics g_metrics;

/* Records how long one period of a room's work took (a paused room's
 * too): the tick-duration histogram. */
void metrics_tick(uint64_t ns);

/* Records how long a command waited from its arrival (its message read
 * whole) to its reply written to the client's socket: the reply-latency
 * histogram. */
void metrics_reply(uint64_t ns);

/* Counts one tick that stepped a world (flockd_ticks_total). */
void metrics_stepped(void);

/* A room script's hook call of `ms` milliseconds (flockd_script_hook_seconds). */
void metrics_script_hook(double ms);
/* A room script was disabled (flockd_script_errors_total). */
void metrics_script_error(void);
/* A room script's memory grew (or shrank) by delta bytes (flockd_script_memory_bytes). */
void metrics_script_memory(int64_t delta);

/* Counts one hit of a limit. */
void metrics_limit(enum metrics_limit which);

/* Counts a refused command under its stable error code. */
void metrics_reject(const char *code);

/* Counts `frames` frames of a kind encoded in `ns` nanoseconds. */
void metrics_frames_encoded(unsigned kind, uint64_t frames, uint64_t ns);

/* Counts one frame of a kind written to a client by service thread
 * `thread`: the frames and bytes of that kind. */
void metrics_frame_sent(unsigned thread, unsigned kind, size_t bytes);

/*
 * Renders every metric as Prometheus text exposition into buf (cap bytes).
 * Returns the length written, or PROTO_E_NOSPACE if cap was too small.
 */
int metrics_render(char *buf, size_t cap);

#endif
