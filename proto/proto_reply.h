/*
 * proto_reply — JSON messages from the server to a client (PROTOCOL.md §6):
 * the welcome sent once on connect, the ack of an applied command and the
 * error of a refused one.
 *
 * Every builder writes into a caller buffer and returns the text's length
 * (NUL-terminated, NUL not counted) or PROTO_E_NOSPACE if it did not fit
 * (the buffer then holds ""). Nothing is allocated, nothing must be freed.
 * The output is always valid JSON in valid UTF-8: message texts are
 * escaped, and an id that is not exactly one JSON null, number or string
 * is sent as null.
 *
 * Never: I/O, clocks (ticks and times are passed in), allocation, globals.
 * Threading: reentrant.
 */
#ifndef FLOCKD_PROTO_REPLY_H
#define FLOCKD_PROTO_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "proto.h"
#include "proto_command.h"

#define PROTO_SERVER_NAME "flockd"
/* Enough for the welcome of the current registry with every group's own
 * values (at most 512 bytes a group) and the flock's measures. */
#define PROTO_WELCOME_BYTES (8192 + 256 * 512)
#define PROTO_REPLY_BYTES   1024 /* enough for any ack or error */

/* The flock's measures as the server last took them (PROTOCOL.md §6.5),
 * plain figures: the codec knows nothing of how they were measured. */
struct proto_flock {
    uint64_t tick; /* the tick they were measured at */
    double ms;     /* how long measuring took */
    uint32_t boids;
    float local_polarization, global_polarization; /* [0, 1] */
    float nn_p5, nn_median;                        /* nearest-neighbour distance, units */
    float mean_speed;                              /* units/s */
    uint32_t clusters, largest_cluster, flocks, mills;
    float mill_fraction; /* [0, 1] */
};

/* A group whose parameters differ from group 0's: the welcome lists the
 * members that differ. */
struct proto_group_values {
    unsigned group; /* 1..255 */
    const struct sim_params *values;
};

/* What the stats command reports (PROTOCOL.md §5.4, §6.5). */
struct proto_stats {
    uint32_t boids;
    int paused;
    double tick_ms_mean, tick_ms_p99; /* how long recent ticks took */
    double late_ms_p99;               /* how late recent ticks started */
    double dilation;                  /* ticks a second over tick_hz, (0, 1] (§6.7) */
    double snapshot_hz;               /* snapshots a second now */
    const struct proto_flock *flock;  /* NULL: not measured yet ("flock":null) */
};

/* Everything the welcome tells a new client. */
/* A version 3 connection's "stream" (PROTOCOL.md §12.3). */
struct proto_welcome_stream {
    uint8_t cols, rows; /* the tile grid */
    uint8_t max_shift, max_sample;
    uint8_t field_cells;  /* a field's cells across a super-tile */
    float vscale;         /* units/s per step of a field cell's mean velocity */
    double budget;        /* bytes per second until the client's view says */
    const char *audience; /* "all", "team" or "delayed" */
    double delay_s;       /* the delayed audience's lag, seconds; else 0 */
};

struct proto_welcome {
    unsigned protocol;           /* the version the connection speaks (§2); 0: PROTO_VERSION */
    uint64_t client;             /* connection id assigned by the server */
    uint64_t tick;               /* the room's current tick */
    double tick_hz, snapshot_hz; /* simulation and broadcast rates */
    float width, height;         /* world size, world units */
    int wrap;                    /* edges wrap (torus); 0 = contain */
    uint32_t capacity, max_obstacles;
    size_t max_message;              /* bytes */
    const struct sim_params *values; /* group 0's current values; NULL = registry defaults */
    const struct proto_group_values *groups; /* groups whose values differ from values */
    size_t n_groups;
    const struct proto_flock *flock; /* NULL: left out (not measured yet) */
    const char *version;             /* server version; NULL = this build's */
    const char *room;                /* NULL: the members room, mode, role, team are left out */
    enum proto_mode mode;
    enum proto_role role;
    int team;                  /* RTS player's group; < 0: none */
    double rate;               /* commands per second; 0: left out with burst */
    uint32_t burst;            /* commands */
    uint32_t player_obstacles; /* obstacles per player or team */
    /* An rts room: "teams" with these; max_teams 0: left out. */
    uint32_t max_teams, team_units, team_cap;

    /* A room that plays a recording: "replay" with its lowest and highest tick. */
    int replay;
    uint64_t replay_first, replay_last;

    /* A relayed room that cannot be reached now (§6.6): "available":false
     * with why; 0: the member is left out (available). */
    int unavailable;
    const char *unavailable_reason; /* NULL: "" */

    /* A room whose clock runs slow (§6.7): "dilation" when below 1; 0 or
     * 1: left out. */
    double dilation;

    const struct proto_welcome_stream *stream; /* version 3: "stream"; NULL: left out */

    /* A room that runs a script (§14): "script" with its name and hash. */
    const char *script; /* NULL: left out */
    uint64_t script_hash;
};

/* One extra member of an ack: an integer, e.g. {"obstacle", 7}, or a
 * string when text is not NULL, e.g. {"room", 0, "arena"}. */
struct proto_ack_field {
    const char *key;
    int64_t value;
    const char *text;
};

/* One player or admin of a roster (PROTOCOL.md §6.4). */
struct proto_roster_entry {
    uint64_t client; /* 0: an RTS team whose player left */
    const char *name;
    enum proto_role role;
    int team; /* < 0: none */
    int connected;
};

/*
 * {"type":"welcome","protocol":1,"server":"flockd","version":..,"client":..,
 *  "tick":..,"tick_hz":..,"snapshot_hz":..,"world":{..},"limits":{..},
 *  "params":[{..},..],"values":{..}}
 */
int proto_reply_welcome(char *buf, size_t cap, const struct proto_welcome *w);

/*
 * {"type":"ack","id":ID,"tick":T,...extra}. id is the JSON text of the
 * command's id (struct proto_command.id); NULL or "" sends null. extra may
 * be NULL when n_extra is 0; keys must not be "type", "id" or "tick".
 */
int proto_reply_ack(char *buf, size_t cap, const char *id, uint64_t tick,
                    const struct proto_ack_field *extra, size_t n_extra);

/* What the ack of view says the client's frames will hold (§12.4). */
struct proto_view_ack {
    uint8_t shift, sample;
    uint32_t rect[4]; /* first column, first row, columns, rows (super-tiles) */
    uint64_t boids, bytes;
    double rate; /* frames per second */
};

/* The ack of view: {"type":"ack","id":ID,"tick":T,"shift":...,"rate":R}. */
int proto_reply_view(char *buf, size_t cap, const char *id, uint64_t tick,
                     const struct proto_view_ack *v);

/*
 * The ack of stats: {"type":"ack","id":ID,"tick":T,"stats":{...}}
 * (PROTOCOL.md §6.5).
 */
int proto_reply_stats(char *buf, size_t cap, const char *id, uint64_t tick,
                      const struct proto_stats *s);

/*
 * {"type":"error","id":ID|null,"code":CODE,"message":TEXT}. code is a wire
 * error code (anything else is sent as "internal"); message may be NULL.
 */
int proto_reply_error(char *buf, size_t cap, const char *id, int code, const char *message);

/*
 * {"type":"roster","room":R,"mode":M,"viewers":V,"players":[{..},..]}: the
 * entries in the order given, then "more":K when more > 0 (entries left out).
 */
int proto_reply_roster(char *buf, size_t cap, const char *room, enum proto_mode mode,
                       uint32_t viewers, const struct proto_roster_entry *players, size_t n,
                       size_t more);

/*
 * {"type":"availability","room":R,"available":B[,"reason":TEXT]} (§6.6):
 * reason is written when not available (NULL: "").
 */
int proto_reply_availability(char *buf, size_t cap, const char *room, int available,
                             const char *reason);

/* What a dilation message says (§6.7). */
struct proto_dilation {
    const char *room;
    double factor;      /* (0, 1]: ticks a second over the welcome's tick_hz */
    double tick_hz;     /* ticks a second now */
    double snapshot_hz; /* snapshots a second now */
};

/* {"type":"dilation","room":R,"factor":F,"tick_hz":T,"snapshot_hz":S}
 * (§6.7). */
int proto_reply_dilation(char *buf, size_t cap, const struct proto_dilation *d);

#endif
