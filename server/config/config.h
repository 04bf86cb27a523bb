/*
 * config — every flockd setting, from one table.
 *
 * Each setting has one row (name, type, default, bounds, help) in config.c.
 * Command-line flags (--NAME VALUE), the optional JSON config file (the
 * same NAME as key) and --help are all generated from that table, so a
 * setting is added in exactly one place. Precedence: defaults, then the
 * file named by --config, then the other flags.
 *
 * Never: touches the network or a world (it only asks the flocking core
 * for the default world size, sim_world_for()); shows a secret's value
 * (admin-token, the NATS password and token, the --nats URL, which may
 * hold them) in a message. It reads the environment in cfg_apply_env()
 * and files in cfg_load_file() and cfg_check_files() only. Threading:
 * fill a struct cfg once at start-up; afterwards it is read-only.
 * Errors: functions return 0 on success, CFG_HELP when --help was given,
 * or a negative CFG_E* code with a message naming the setting in err.
 */
#ifndef FLOCKD_CONFIG_H
#define FLOCKD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto_command.h"

#define CFG_HELP   1
#define CFG_EINVAL (-1) /* bad flag, value, type or bounds */
#define CFG_EIO    (-2) /* config file missing or unreadable */

struct cfg {
    char host[256];            /* "host": numeric address to listen on, default "0.0.0.0" */
    int port;                  /* "port": 0..65535, 0 = ephemeral, default 8080 */
    uint32_t boids;            /* "boids": boids at start, 0..capacity, default 1000 */
    uint32_t capacity;         /* "capacity": max boids per room, 1..1048576, default 16384 */
    double tick_hz;            /* "tick-hz": 1..240, default 60 */
    double snapshot_hz;        /* "snapshot-hz": 1..60 (<= tick-hz), default 20 */
    uint64_t seed;             /* "seed": 0..2^53, default 1 */
    double width, height;      /* "width", "height": 100..100000, default 1600 x 1000, */
                               /* larger for more than 1000 boids (cfg_parse_args) */
    char edges[16];            /* "edges": "wrap" or "contain", default "wrap" */
    char room_mode[16];        /* "room-mode": the default room's, "sandbox" or "rts" */
    char scripts_dir[1024];    /* "scripts-dir": room scripts, NAME.lua */
    char room_script[64];      /* "room-script": the default room's script; "" = none */
    uint32_t script_memory;    /* "script-memory": MiB a room's script may hold */
    uint32_t script_budget;    /* "script-budget": instructions per hook call */
    uint32_t max_obstacles;    /* "max-obstacles": 0..4096, default 64 */
    char web_root[1024];       /* "web-root": directory served at /, default "client/web" */
    uint32_t max_message;      /* "max-message": bytes, 256..1048576, default 4096 */
    uint32_t queue_len;        /* "queue": pending commands per room, 16..65536, default 1024 */
    double stale_timeout;      /* "stale-timeout": seconds a client may lag, 1..600, default 10 */
    uint32_t max_clients;      /* "max-clients": 1..100000, default 10000 */
    uint32_t workers;          /* "workers": tick threads, 0 = one per core */
    uint32_t net_threads;      /* "net-threads": service threads, 0..64, 0 = one per core */
    uint32_t max_rooms;        /* "max-rooms": 1..1024, default 16 */
    uint32_t max_room_boids;   /* "max-room-boids": boids a created room may start with */
    int allow_create;          /* "allow-create": 0 or 1, default 1 */
    double room_expiry;        /* "room-expiry": seconds an empty room lives, default 60 */
    char admin_token[129];     /* "admin-token": "" = loopback clients are admins */
    uint32_t auth_tries;       /* "auth-tries": failed secrets per address before delays */
    uint32_t auth_tries_all;   /* "auth-tries-all": the same from all addresses together */
    double rate;               /* "rate": commands per second per connection */
    uint32_t burst;            /* "burst": commands a connection may send at once */
    uint32_t player_obstacles; /* "player-obstacles": obstacles per player or team */
    double tile_size;          /* "tile-size": version 3's tiles, world units */
    double spectator_delay;    /* "spectator-delay": seconds rts spectators lag, version 3 */
    double view_budget;        /* "view-budget": bytes per second per version 3 client */
    uint32_t max_teams;        /* "max-teams": RTS teams per room, 1..255 */
    uint32_t team_units;       /* "team-units": boids a new RTS team starts with */
    uint32_t team_cap;         /* "team-cap": most boids of one RTS team */
    double grace;              /* "grace": seconds a left RTS team waits for its player */
    uint32_t max_per_ip;       /* "max-per-ip": connections from one address */
    char origins[1024];        /* "origins": allowed browser Origins, comma-separated; "" = any */
    uint32_t ping_interval;    /* "ping-interval": seconds of silence before a ping */
    uint32_t idle_timeout;     /* "idle-timeout": seconds of silence before closing */
    char config_path[1024];    /* "config": file the settings came from, "" if none */
    char record_dir[1024];     /* "record": the rooms' command logs go here; "" = none */
    char record_fsync[16];     /* "record-fsync": never, interval (default) or always */
    uint32_t log_hash_every;   /* "record-hash-every": ticks between logged hashes */
    char checkpoint_dir[1024]; /* "checkpoint-dir": the rooms' checkpoints; "" = none */
    double checkpoint_every;   /* "checkpoint-every": seconds between them, default 5 */
    char tls_cert[1024];       /* "tls-cert": PEM certificate (chain) for https/wss; "" = plain */
    char tls_key[1024];        /* "tls-key": its PEM private key */
    int tls_redirect_port;     /* "tls-redirect-port": plain HTTP sent on to https; 0 = none */
    char nats_url[1024];       /* "nats": NATS server(s) of the cluster; "" = a single process */
    char node_id[PROTO_NODE_MAX +
                 1];         /* "node-id": this node's name in the cluster; "" = HOST-PORT */
    char nats_user[256];     /* "nats-user": signs in to NATS with nats-password */
    char nats_password[256]; /* "nats-password" (or FLOCKD_NATS_PASSWORD): a secret */
    char nats_token[256];    /* "nats-token" (or FLOCKD_NATS_TOKEN): a secret */
    char nats_creds[1024];   /* "nats-creds": a NATS credentials file (JWT and NKey seed) */
    char nats_ca[1024];      /* "nats-ca": PEM authority that signed NATS's certificate */
    char nats_cert[1024];    /* "nats-cert": PEM certificate flockd shows NATS */
    char nats_key[1024];     /* "nats-key": its PEM private key */
    char cluster_log[8];     /* "cluster-log": on (commands stored on NATS before acks), off */
};

/* Fills *c with every default from the table. */
void cfg_default(struct cfg *c);

/*
 * Applies argv (argv[0] is skipped): --config FILE first, then every other
 * flag in order. Flags take the form "--NAME VALUE" or "--NAME=VALUE".
 * When neither file nor flags set width or height and boids exceeds 1000,
 * the world is sized for the boids instead (sim_world_for(): 1600 square
 * units per boid, 16:10).
 * Returns 0, CFG_HELP (caller prints cfg_help and exits 0) or CFG_E*;
 * on error err (errlen bytes) holds a one-line message.
 */
int cfg_parse_args(struct cfg *c, int argc, char **argv, char *err, size_t errlen);

/*
 * Applies a JSON object file: keys are setting names, values of the row's
 * type (numbers for numbers, strings for strings). Unknown keys, wrong
 * types and out-of-bounds values are errors; on error *c is unchanged.
 */
int cfg_load_file(struct cfg *c, const char *path, char *err, size_t errlen);

/*
 * The secrets that may come from the environment instead (admin-token:
 * FLOCKD_ADMIN_TOKEN, nats-password: FLOCKD_NATS_PASSWORD, nats-token:
 * FLOCKD_NATS_TOKEN), each taken when neither a flag nor the file set it
 * and the variable is not empty. CFG_EINVAL for a value too long.
 */
int cfg_apply_env(struct cfg *c, char *err, size_t errlen);

/*
 * Checks cross-setting rules (snapshot-hz <= tick-hz, boids <= capacity,
 * the TLS pair; with --nats, the NATS pairs and one way of signing in).
 */
int cfg_validate(const struct cfg *c, char *err, size_t errlen);

/* Checks that every file a setting names for flockd to read (the NATS
 * credentials and TLS files) can be opened: 0, or CFG_EIO naming the
 * setting, the file and the system's reason. */
int cfg_check_files(const struct cfg *c, char *err, size_t errlen);

/* Writes usage and one line per setting (flag, default, bounds, help). */
void cfg_help(FILE *out, const char *prog);

#endif
