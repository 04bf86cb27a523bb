/*
 * config.c — the settings table and everything generated from it.
 *
 * Each row below names one field of struct cfg: its flag and JSON key, its
 * type, its default (written as the text a user would type, so defaults go
 * through the same parser as flags and --help prints them verbatim), its
 * bounds and its help line. Flags, the JSON config file, cfg_validate and
 * cfg_help all walk this table; adding a setting means adding one row.
 *
 * Values travel as doubles between parsing and storing: every integer
 * bound is at most 2^53, so an in-range integer is always exact. Integer
 * text longer than that is refused before it could round into range.
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include "sim.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFG_FILE_MAX (1024 * 1024)      /* a config file larger than this is refused */
#define EXACT_MAX    9007199254740992.0 /* 2^53: largest integer range a double holds exactly */

enum cfg_type {
    T_INT,    /* int */
    T_UINT,   /* uint32_t */
    T_U64,    /* uint64_t */
    T_DOUBLE, /* double */
    T_STRING, /* char[N]: min and max bound the length */
};

/* Names the config file: applied before other flags, not allowed inside a file. */
#define ROW_CONFIG_FILE 1u
/* Is or may hold a secret: messages never show its value. */
#define ROW_SECRET 2u
/* Names a file flockd reads: cfg_check_files() opens it. */
#define ROW_FILE 4u

struct cfg_row {
    const char *name; /* flag without "--", and JSON key */
    enum cfg_type type;
    size_t offset, size;        /* where the field lives in struct cfg */
    const char *def;            /* default, as text */
    double min, max;            /* inclusive value bounds; for strings, length bounds */
    const char *const *choices; /* strings only: the allowed values, NULL-terminated */
    const char *meta;           /* value placeholder in --help */
    unsigned flags;
    const char *help;
};

#define FIELD(f) offsetof(struct cfg, f), sizeof(((struct cfg *)0)->f)
/* Longest string a char array field holds, leaving room for the NUL. */
#define LEN(f) ((double)sizeof(((struct cfg *)0)->f) - 1)

static const char *const edge_modes[] = {"wrap", "contain", NULL};
static const char *const room_modes[] = {"sandbox", "rts", NULL};
static const char *const fsync_modes[] = {"never", "interval", "always", NULL};
static const char *const on_off[] = {"on", "off", NULL};

static const struct cfg_row rows[] = {
    {"config", T_STRING, FIELD(config_path), "", 0, LEN(config_path), NULL, "FILE", ROW_CONFIG_FILE,
     "JSON file of settings, applied before every other flag"},
    {"host", T_STRING, FIELD(host), "0.0.0.0", 1, LEN(host), NULL, "ADDR", 0,
     "numeric address of this machine to listen on: 0.0.0.0 is every IPv4 address, :: every "
     "IPv4 and IPv6 address"},
    {"port", T_INT, FIELD(port), "8080", 0, 65535, NULL, "PORT", 0,
     "TCP port for HTTP and WebSocket; 0 picks a free one"},
    {"boids", T_UINT, FIELD(boids), "1000", 0, 1048576, NULL, "N", 0,
     "boids in the room at start (at most --capacity)"},
    {"capacity", T_UINT, FIELD(capacity), "16384", 1, 1048576, NULL, "N", 0,
     "most boids a room can hold"},
    {"tick-hz", T_DOUBLE, FIELD(tick_hz), "60", 1, 240, NULL, "HZ", 0,
     "simulation steps per second"},
    {"snapshot-hz", T_DOUBLE, FIELD(snapshot_hz), "20", 1, 60, NULL, "HZ", 0,
     "snapshots sent to each client per second (at most --tick-hz; spread over the ticks "
     "when it does not divide them)"},
    {"seed", T_U64, FIELD(seed), "1", 0, EXACT_MAX, NULL, "N", 0,
     "random seed of the starting flock"},
    {"width", T_DOUBLE, FIELD(width), "1600", 100, 100000, NULL, "UNITS", 0,
     "world width; with neither width nor height given, the world grows past 1000 boids to "
     "keep 1600 square units per boid"},
    {"height", T_DOUBLE, FIELD(height), "1000", 100, 100000, NULL, "UNITS", 0, "world height"},
    {"edges", T_STRING, FIELD(edges), "wrap", 1, LEN(edges), edge_modes, "MODE", 0,
     "at the world's edges boids wrap around or are contained"},
    {"max-obstacles", T_UINT, FIELD(max_obstacles), "64", 0, 4096, NULL, "N", 0,
     "most obstacles a room can hold"},
    {"web-root", T_STRING, FIELD(web_root), "client/web", 1, LEN(web_root), NULL, "DIR", 0,
     "directory of the web client, served at /"},
    {"max-message", T_UINT, FIELD(max_message), "4096", 256, 1048576, NULL, "BYTES", 0,
     "largest WebSocket message accepted from a client"},
    {"queue", T_UINT, FIELD(queue_len), "1024", 16, 65536, NULL, "N", 0,
     "commands a room holds pending before it refuses more"},
    {"stale-timeout", T_DOUBLE, FIELD(stale_timeout), "10", 1, 600, NULL, "SECONDS", 0,
     "how long a client may lag before it is dropped"},
    {"max-clients", T_UINT, FIELD(max_clients), "10000", 1, 100000, NULL, "N", 0,
     "most clients connected at once"},
    {"workers", T_UINT, FIELD(workers), "0", 0, 256, NULL, "N", 0,
     "threads that tick the rooms; 0: one per CPU core"},
    {"net-threads", T_UINT, FIELD(net_threads), "0", 0, 64, NULL, "N", 0,
     "service threads that serve the connections, each with its own listening socket on the "
     "port; 0: one per CPU core"},
    {"max-rooms", T_UINT, FIELD(max_rooms), "16", 1, 1024, NULL, "N", 0,
     "most rooms at once, the default room included"},
    {"max-room-boids", T_UINT, FIELD(max_room_boids), "20000", 0, 1048576, NULL, "N", 0,
     "most boids a room created by a join may start with"},
    {"allow-create", T_INT, FIELD(allow_create), "1", 0, 1, NULL, "0|1", 0,
     "1: joining an unknown room name creates it"},
    {"room-expiry", T_DOUBLE, FIELD(room_expiry), "60", 0, 86400, NULL, "SECONDS", 0,
     "an empty room other than the default one is removed after this long"},
    {"admin-token", T_STRING, FIELD(admin_token), "", 0, LEN(admin_token), NULL, "TOKEN",
     ROW_SECRET,
     "token that makes a join an admin (also FLOCKD_ADMIN_TOKEN); empty: loopback clients are "
     "admins, remote ones never"},
    {"auth-tries", T_UINT, FIELD(auth_tries), "5", 1, 1000, NULL, "N", 0,
     "wrong admin tokens or room passwords one address may give (one forgotten a minute) before "
     "each further one makes it wait: 1 s, doubling up to 5 minutes"},
    {"auth-tries-all", T_UINT, FIELD(auth_tries_all), "50", 1, 1000000, NULL, "N", 0,
     "the same from all addresses together (one forgotten a second) before every address waits: "
     "1 s, doubling up to 1 minute"},
    {"rate", T_DOUBLE, FIELD(rate), "100", 1, 100000, NULL, "N", 0,
     "commands per second one connection may send, on average"},
    {"burst", T_UINT, FIELD(burst), "200", 1, 100000, NULL, "N", 0,
     "commands one connection may send at once"},
    {"player-obstacles", T_UINT, FIELD(player_obstacles), "8", 0, 4096, NULL, "N", 0,
     "obstacles one player (in RTS, one team) may hold"},
    {"tile-size", T_DOUBLE, FIELD(tile_size), "300", 16, 100000, NULL, "UNITS", 0,
     "version 3 clients get the world in tiles of about this many units (at most 255 across: a "
     "bigger world's tiles grow)"},
    {"spectator-delay", T_DOUBLE, FIELD(spectator_delay), "5", 0, 60, NULL, "SECONDS", 0,
     "how far behind the room an RTS room's spectators (viewers) see it, so a second connection "
     "cannot scout (version 3)"},
    {"view-budget", T_DOUBLE, FIELD(view_budget), "2000000", 1000, 100000000, NULL, "BYTES", 0,
     "bytes per second a version 3 client's view is held to when it names no budget (the welcome's "
     "stream.budget)"},
    {"max-teams", T_UINT, FIELD(max_teams), "8", 1, 255, NULL, "N", 0,
     "teams, and so players, an RTS room takes"},
    {"team-units", T_UINT, FIELD(team_units), "30", 0, 100000, NULL, "N", 0,
     "boids a new RTS team starts with, at its base"},
    {"team-cap", T_UINT, FIELD(team_cap), "100", 1, 1048576, NULL, "N", 0,
     "most boids one RTS team may have"},
    {"room-mode", T_STRING, FIELD(room_mode), "sandbox", 1, LEN(room_mode), room_modes, "MODE", 0,
     "the default room's mode: a sandbox flock, or an RTS room of teams"},
    {"scripts-dir", T_STRING, FIELD(scripts_dir), "server/scripts", 0, LEN(scripts_dir), NULL,
     "DIR", 0,
     "directory of the room scripts (NAME.lua) a join's 'script' and --room-script may name; "
     "SIGHUP reads it again"},
    {"room-script", T_STRING, FIELD(room_script), "", 0, LEN(room_script), NULL, "NAME", 0,
     "the script (from --scripts-dir) the default room runs its rules with"},
    {"script-memory", T_UINT, FIELD(script_memory), "64", 1, 4096, NULL, "MIB", 0,
     "memory one room's script may hold; past it, the script is stopped"},
    {"script-budget", T_UINT, FIELD(script_budget), "1000000", 10000, 1000000000, NULL, "N", 0,
     "instructions one call of a script's hook may run; past them, the script is stopped"},
    {"grace", T_DOUBLE, FIELD(grace), "30", 0, 3600, NULL, "SECONDS", 0,
     "how long a left RTS player's units wait for it to rejoin"},
    {"max-per-ip", T_UINT, FIELD(max_per_ip), "256", 1, 100000, NULL, "N", 0,
     "most WebSocket connections from one IP address"},
    {"origins", T_STRING, FIELD(origins), "", 0, LEN(origins), NULL, "LIST", 0,
     "browser Origins allowed to connect, comma-separated (https://example.org,...); "
     "empty: any. Clients that send no Origin are not browsers and are let in"},
    {"ping-interval", T_UINT, FIELD(ping_interval), "30", 1, 3600, NULL, "SECONDS", 0,
     "a connection that sent nothing this long is pinged"},
    {"idle-timeout", T_UINT, FIELD(idle_timeout), "60", 2, 7200, NULL, "SECONDS", 0,
     "a connection that sent nothing this long (no message, no pong) is closed"},
    {"record", T_STRING, FIELD(record_dir), "", 0, LEN(record_dir), NULL, "DIR", 0,
     "directory where every room appends its command log, ROOM.flog, for --replay; empty: none"},
    {"record-fsync", T_STRING, FIELD(record_fsync), "interval", 1, LEN(record_fsync), fsync_modes,
     "MODE", 0,
     "when the logs reach the disk: never (the kernel decides), interval (at most a second "
     "behind), always (every tick that logged something; costs a disk flush per tick)"},
    {"record-hash-every", T_UINT, FIELD(log_hash_every), "60", 1, 1000000, NULL, "TICKS", 0,
     "a log records the room's state hash every this many ticks, for --replay --verify"},
    {"tls-cert", T_STRING, FIELD(tls_cert), "", 0, LEN(tls_cert), NULL, "FILE", 0,
     "PEM certificate (with its chain) to serve https:// and wss:// on --port instead of "
     "http:// and ws://; needs --tls-key. SIGHUP reloads both files; empty: plain"},
    {"tls-key", T_STRING, FIELD(tls_key), "", 0, LEN(tls_key), NULL, "FILE", 0,
     "PEM private key of --tls-cert (not encrypted)"},
    {"tls-redirect-port", T_INT, FIELD(tls_redirect_port), "0", 0, 65535, NULL, "PORT", 0,
     "with --tls-cert: also listen on this port in plain HTTP and answer every request with a "
     "301 to the same path on https; 0: none"},
    {"checkpoint-dir", T_STRING, FIELD(checkpoint_dir), "", 0, LEN(checkpoint_dir), NULL, "DIR", 0,
     "directory of the rooms' checkpoints, ROOM.ckpt, restored at start; empty: none"},
    {"checkpoint-every", T_DOUBLE, FIELD(checkpoint_every), "5", 0, 86400, NULL, "SECONDS", 0,
     "with --checkpoint-dir, seconds between checkpoints of every room; 0: only when flockd "
     "stops (SIGTERM)"},
    /* A cluster of nodes on NATS (server/cluster/cluster.h, server/cluster/CLUSTER.md). */
    {"nats", T_STRING, FIELD(nats_url), "", 0, LEN(nats_url), NULL, "URL", ROW_SECRET,
     "join a cluster of flockd nodes on this NATS server with JetStream (nats://HOST:PORT, "
     "tls://HOST:PORT for TLS, nats://USER:PASSWORD@HOST:PORT or nats://TOKEN@HOST:PORT to sign "
     "in; or several separated by commas); empty: a single process"},
    {"node-id", T_STRING, FIELD(node_id), "", 0, LEN(node_id), NULL, "ID", 0,
     "with --nats, this node's name in the cluster ([A-Za-z0-9_-]); empty: HOST-PORT"},
    /* Signing in to NATS, one way of the three, and TLS to it (server/cluster/CLUSTER.md §8). */
    {"nats-user", T_STRING, FIELD(nats_user), "", 0, LEN(nats_user), NULL, "USER", 0,
     "with --nats, sign in to NATS as this user, with --nats-password"},
    {"nats-password", T_STRING, FIELD(nats_password), "", 0, LEN(nats_password), NULL, "PASSWORD",
     ROW_SECRET, "the password of --nats-user (also FLOCKD_NATS_PASSWORD)"},
    {"nats-token", T_STRING, FIELD(nats_token), "", 0, LEN(nats_token), NULL, "TOKEN", ROW_SECRET,
     "with --nats, sign in to NATS with this token (also FLOCKD_NATS_TOKEN)"},
    {"nats-creds", T_STRING, FIELD(nats_creds), "", 0, LEN(nats_creds), NULL, "FILE", ROW_FILE,
     "with --nats, sign in to NATS with this credentials file (.creds: a user JWT and its NKey "
     "seed)"},
    {"nats-ca", T_STRING, FIELD(nats_ca), "", 0, LEN(nats_ca), NULL, "FILE", ROW_FILE,
     "with --nats, TLS to NATS, trusting these PEM authorities (besides the system's) to have "
     "signed its server's certificate, which must name the URL's host"},
    {"nats-cert", T_STRING, FIELD(nats_cert), "", 0, LEN(nats_cert), NULL, "FILE", ROW_FILE,
     "with --nats, TLS to NATS, showing it this PEM certificate (with its chain) when it verifies "
     "its clients; needs --nats-key"},
    {"nats-key", T_STRING, FIELD(nats_key), "", 0, LEN(nats_key), NULL, "FILE", ROW_FILE,
     "PEM private key of --nats-cert (not encrypted)"},
    {"cluster-log", T_STRING, FIELD(cluster_log), "on", 1, LEN(cluster_log), on_off, "on|off", 0,
     "with --nats: on, every command a room applies is stored in the cluster's command log on "
     "NATS before its ack, so a node taking the room over carries it on with nothing acked "
     "lost; off, a failover goes back to the room's last checkpoint"},
};

#define ROW_COUNT (sizeof rows / sizeof rows[0])

/* Cross-setting rules checked by cfg_validate: `lo` must not exceed `hi`. */
static const struct {
    const char *lo, *hi;
} order_rules[] = {
    {"snapshot-hz", "tick-hz"},
    {"boids", "capacity"},
    {"team-units", "team-cap"},
    {"ping-interval", "idle-timeout"},
};

/* The secrets the environment may give instead of a flag or the file
 * (cfg_apply_env). */
static const struct {
    const char *row, *env;
} env_rules[] = {
    {"admin-token", "FLOCKD_ADMIN_TOKEN"},
    {"nats-password", "FLOCKD_NATS_PASSWORD"},
    {"nats-token", "FLOCKD_NATS_TOKEN"},
};

#if defined(__GNUC__)
#define CFG_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CFG_PRINTF(fmt, args)
#endif

/* Writes the message to err (if there is room) and returns code. */
static int fail(char *err, size_t errlen, int code, const char *fmt, ...) CFG_PRINTF(4, 5);

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Returns the row called name[0..len), or NULL. */
static const struct cfg_row *find_row(const char *name, size_t len)
{
    for (size_t i = 0; i < ROW_COUNT; i++)
        if (strlen(rows[i].name) == len && memcmp(rows[i].name, name, len) == 0)
            return &rows[i];
    return NULL;
}

static int is_integer_type(enum cfg_type t)
{
    return t == T_INT || t == T_UINT || t == T_U64;
}

/* Formats a value of row r the way --help and messages show it. */
static void format_number(const struct cfg_row *r, double v, char *buf, size_t n)
{
    if (is_integer_type(r->type) && isfinite(v))
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%g", v);
}

/* Describes what r accepts: "[0, 65535]", "length [1, 255]" or "wrap|contain". */
static void bounds_text(const struct cfg_row *r, char *buf, size_t n)
{
    char lo[32], hi[32];

    if (r->choices) {
        size_t used = 0;
        buf[0] = '\0';
        for (const char *const *ch = r->choices; *ch && used < n; ch++) {
            int w = snprintf(buf + used, n - used, "%s%s", ch == r->choices ? "" : "|", *ch);
            used += w > 0 ? (size_t)w : 0;
        }
        return;
    }
    if (r->type == T_STRING) {
        snprintf(buf, n, "length [%.0f, %.0f]", r->min, r->max);
        return;
    }
    format_number(r, r->min, lo, sizeof lo);
    format_number(r, r->max, hi, sizeof hi);
    snprintf(buf, n, "[%s, %s]", lo, hi);
}

static void put_number(struct cfg *c, const struct cfg_row *r, double v)
{
    char *p = (char *)c + r->offset;
    switch (r->type) {
    case T_INT:
        *(int *)p = (int)v;
        break;
    case T_UINT:
        *(uint32_t *)p = (uint32_t)v;
        break;
    case T_U64:
        *(uint64_t *)p = (uint64_t)v;
        break;
    case T_DOUBLE:
        *(double *)p = v;
        break;
    case T_STRING:
        assert(!"put_number on a string row");
        break;
    }
}

/* Reads a numeric field. A u64 past 2^53 reads as +inf, so that rounding to
 * double cannot bring it back inside the bounds. */
static double get_number(const struct cfg *c, const struct cfg_row *r)
{
    const char *p = (const char *)c + r->offset;
    switch (r->type) {
    case T_INT:
        return *(const int *)p;
    case T_UINT:
        return *(const uint32_t *)p;
    case T_U64: {
        uint64_t u = *(const uint64_t *)p;
        return u > (uint64_t)EXACT_MAX ? INFINITY : (double)u;
    }
    case T_DOUBLE:
        return *(const double *)p;
    case T_STRING:
        break;
    }
    assert(!"get_number on a string row");
    return NAN;
}

/*
 * Checks v against r's bounds, and wholeness for integer rows. `label`
 * names the setting, `shown` is the value as the user wrote it.
 */
static int check_number(const struct cfg_row *r, double v, const char *label, const char *shown,
                        char *err, size_t errlen)
{
    char range[64];

    bounds_text(r, range, sizeof range);
    if (!(v >= r->min && v <= r->max)) /* also refuses NaN */
        return fail(err, errlen, CFG_EINVAL, "%s: %s is out of range %s", label, shown, range);
    /* In bounds, so |v| <= 2^53 and the cast is exact for whole numbers. */
    if (is_integer_type(r->type) && v != (double)(long long)v)
        return fail(err, errlen, CFG_EINVAL, "%s: %s is not an integer in %s", label, shown, range);
    return 0;
}

static int set_number(struct cfg *c, const struct cfg_row *r, double v, const char *label,
                      const char *shown, char *err, size_t errlen)
{
    int rc = check_number(r, v, label, shown, err, errlen);
    if (rc == 0)
        put_number(c, r, v);
    return rc;
}

/* Checks s against r's allowed values or length bounds. */
static int check_text(const struct cfg_row *r, const char *s, const char *label, char *err,
                      size_t errlen)
{
    char range[64];
    size_t len = strlen(s);

    bounds_text(r, range, sizeof range);
    if (r->choices) {
        for (const char *const *ch = r->choices; *ch; ch++)
            if (strcmp(*ch, s) == 0)
                return 0;
        return fail(err, errlen, CFG_EINVAL, "%s: \"%s\" is not one of %s", label, s, range);
    }
    if (((double)len < r->min || (double)len > r->max) && (r->flags & ROW_SECRET))
        return fail(err, errlen, CFG_EINVAL, "%s: the value has length %zu, allowed %s", label, len,
                    range);
    if ((double)len < r->min || (double)len > r->max)
        return fail(err, errlen, CFG_EINVAL, "%s: \"%.40s%s\" has length %zu, allowed %s", label, s,
                    len > 40 ? "..." : "", len, range);
    return 0;
}

static int set_text(struct cfg *c, const struct cfg_row *r, const char *s, const char *label,
                    char *err, size_t errlen)
{
    int rc = check_text(r, s, label, err, errlen);
    if (rc == 0)
        memcpy((char *)c + r->offset, s, strlen(s) + 1); /* fits: max < size */
    return rc;
}

/*
 * Parses a whole decimal integer into *out: 0, or CFG_EINVAL if s is not
 * one. A magnitude past 2^53 (beyond every row's bounds) reads as
 * INFINITY, which the bounds then refuse.
 */
static int parse_integer(const char *s, double *out)
{
    char *end;

    if (s[0] == '\0' || s[strspn(s, "+-0123456789")] != '\0')
        return CFG_EINVAL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0')
        return CFG_EINVAL;
    bool is_exact = errno != ERANGE && v <= (long long)EXACT_MAX && v >= -(long long)EXACT_MAX;
    *out = is_exact ? (double)v : INFINITY;
    return 0;
}

/*
 * Parses a whole decimal real into *out: digits, sign, point and exponent
 * only, so "nan", "inf", hex floats and surrounding spaces are refused.
 * 0, or CFG_EINVAL if s is not a number. One that overflows reads as
 * INFINITY, which the bounds then refuse.
 */
static int parse_real(const char *s, double *out)
{
    char *end;

    if (s[0] == '\0' || s[strspn(s, "+-.0123456789eE")] != '\0')
        return CFG_EINVAL;
    double v = strtod(s, &end);
    if (*end != '\0')
        return CFG_EINVAL;
    *out = isfinite(v) ? v : INFINITY;
    return 0;
}

/* Applies one flag's text value to row r. */
static int apply_text(struct cfg *c, const struct cfg_row *r, const char *text, char *err,
                      size_t errlen)
{
    char label[64], shown[128], range[64];
    double v = 0;
    int integer = is_integer_type(r->type);

    snprintf(label, sizeof label, "--%s", r->name);
    if (r->type == T_STRING)
        return set_text(c, r, text, label, err, errlen);

    snprintf(shown, sizeof shown, "\"%s\"", text);
    int rc = integer ? parse_integer(text, &v) : parse_real(text, &v);
    if (rc < 0) {
        bounds_text(r, range, sizeof range);
        return fail(err, errlen, CFG_EINVAL, "%s: %s is not %s in %s", label, shown,
                    integer ? "an integer" : "a number", range);
    }
    return set_number(c, r, v, label, shown, err, errlen);
}

static const char *json_type_name(const cJSON *item)
{
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsArray(item))
        return "an array";
    return "an object";
}

/* Applies one JSON value to row r; the value's type must match the row's. */
static int apply_json(struct cfg *c, const struct cfg_row *r, const cJSON *item, const char *label,
                      char *err, size_t errlen)
{
    char shown[64], range[64];
    int want_string = r->type == T_STRING;

    if (want_string ? !cJSON_IsString(item) : !cJSON_IsNumber(item)) {
        bounds_text(r, range, sizeof range);
        return fail(err, errlen, CFG_EINVAL, "%s: expected %s in %s, got %s", label,
                    want_string ? "a string" : "a number", range, json_type_name(item));
    }
    if (want_string)
        return set_text(c, r, item->valuestring, label, err, errlen);
    snprintf(shown, sizeof shown, "%.15g", item->valuedouble);
    return set_number(c, r, item->valuedouble, label, shown, err, errlen);
}

void cfg_default(struct cfg *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < ROW_COUNT; i++) {
        /* Defaults are constants covered by the unit tests: failing is a bug in the table. */
        int rc = apply_text(c, &rows[i], rows[i].def, NULL, 0);
        assert(rc == 0);
        (void)rc;
    }
}

/*
 * Reads argv[*i] as one flag, consuming the next argument as its value
 * unless the flag has the form --NAME=VALUE. Returns 0 with *row and
 * *value set, CFG_HELP, or CFG_EINVAL.
 */
static int next_flag(int argc, char **argv, int *i, const struct cfg_row **row, const char **value,
                     char *err, size_t errlen)
{
    const char *arg = argv[*i];

    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
        return CFG_HELP;
    if (arg[0] != '-')
        return fail(err, errlen, CFG_EINVAL, "unexpected argument \"%s\" (see --help)", arg);
    if (arg[1] != '-')
        return fail(err, errlen, CFG_EINVAL, "unknown option %s (see --help)", arg);

    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    *row = find_row(name, len);
    if (!*row)
        return fail(err, errlen, CFG_EINVAL, "unknown option --%.*s (see --help)", (int)len, name);
    if (eq) {
        *value = eq + 1;
        return 0;
    }
    /* A following "--flag" is taken as a forgotten value, not as the value. */
    if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
        return fail(err, errlen, CFG_EINVAL, "--%s: missing value", (*row)->name);
    *value = argv[++*i];
    return 0;
}

/* Walks argv applying either only the config-file flags or only the others. */
static int apply_args(struct cfg *c, int argc, char **argv, int config_pass, char *err,
                      size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const struct cfg_row *r = NULL;
        const char *value = NULL;
        int rc = next_flag(argc, argv, &i, &r, &value, err, errlen);
        if (rc != 0)
            return rc;
        if (!!(r->flags & ROW_CONFIG_FILE) != config_pass)
            continue;
        rc = apply_text(c, r, value, err, errlen);
        if (rc == 0 && config_pass)
            rc = cfg_load_file(c, value, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*
 * A world packed denser than 1600 square units per boid cannot keep its
 * boids half a separation radius apart, so when neither width nor height
 * was set the world follows --boids (sim_world_for). 0 marks "not set":
 * it is below every valid size.
 */
int cfg_parse_args(struct cfg *c, int argc, char **argv, char *err, size_t errlen)
{
    double width = c->width, height = c->height;
    c->width = c->height = 0.0;
    int rc = apply_args(c, argc, argv, 1, err, errlen);
    if (rc == 0)
        rc = apply_args(c, argc, argv, 0, err, errlen);
    if (rc == 0 && c->width == 0.0 && c->height == 0.0 && c->boids > 1000) {
        float w, h;
        sim_world_for(c->boids, &w, &h);
        c->width = w;
        c->height = h;
    }
    if (c->width == 0.0)
        c->width = width;
    if (c->height == 0.0)
        c->height = height;
    return rc;
}

/*
 * Reads all of path into a NUL-terminated buffer the caller frees.
 * Returns 0, CFG_EIO (cannot open or read) or CFG_EINVAL (too large).
 */
static int read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, errlen, CFG_EIO, "%s: %s", path, strerror(errno));

    char *buf = malloc(CFG_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return fail(err, errlen, CFG_EIO, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, CFG_FILE_MAX + 1, f);
    int read_errno = ferror(f) ? errno : 0;
    fclose(f);
    if (read_errno != 0 || n > CFG_FILE_MAX) {
        free(buf);
        if (read_errno != 0)
            return fail(err, errlen, CFG_EIO, "%s: %s", path, strerror(read_errno));
        return fail(err, errlen, CFG_EINVAL, "%s: larger than %d bytes", path, CFG_FILE_MAX);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Applies every member of a JSON object to *c, all or nothing. */
static int apply_object(struct cfg *c, const cJSON *root, const char *path, char *err,
                        size_t errlen)
{
    struct cfg tmp = *c;
    const cJSON *item;

    if (!cJSON_IsObject(root))
        return fail(err, errlen, CFG_EINVAL, "%s: top level must be a JSON object, not %s", path,
                    json_type_name(root));
    cJSON_ArrayForEach(item, root)
    {
        char label[1280];
        const struct cfg_row *r = find_row(item->string, strlen(item->string));
        if (!r)
            return fail(err, errlen, CFG_EINVAL, "%s: unknown setting \"%s\"", path, item->string);
        if (r->flags & ROW_CONFIG_FILE)
            return fail(err, errlen, CFG_EINVAL, "%s: \"%s\" cannot be set inside a config file",
                        path, item->string);
        if (cJSON_GetObjectItemCaseSensitive(root, item->string) != item)
            return fail(err, errlen, CFG_EINVAL, "%s: \"%s\" is given twice", path, item->string);
        snprintf(label, sizeof label, "%s: \"%s\"", path, r->name);
        int rc = apply_json(&tmp, r, item, label, err, errlen);
        if (rc != 0)
            return rc;
    }
    *c = tmp;
    return 0;
}

int cfg_load_file(struct cfg *c, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    const char *end = NULL;

    int rc = read_file(path, &text, &len, err, errlen);
    if (rc != 0)
        return rc;
    /* len + 1 includes the NUL: cJSON needs it to accept the end of input. */
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!root) {
        size_t line = 1, col = 1;
        for (const char *p = text; end && p < end; p++, col++)
            if (*p == '\n')
                line++, col = 0;
        rc = fail(err, errlen, CFG_EINVAL, "%s: invalid JSON at line %zu, column %zu", path, line,
                  col);
    } else {
        rc = apply_object(c, root, path, err, errlen);
    }
    cJSON_Delete(root);
    free(text);
    return rc;
}

/* The first of the NATS URLs, user, password and token that holds a '"',
 * a '\\' or a control character, which libnats (3.4.1) cannot send: it
 * writes them into its JSON CONNECT line unescaped. NULL if none does. */
static const char *unsendable(const struct cfg *c)
{
    const struct {
        const char *name, *value;
    } sent[] = {{"--nats", c->nats_url},
                {"--nats-user", c->nats_user},
                {"--nats-password (or FLOCKD_NATS_PASSWORD)", c->nats_password},
                {"--nats-token (or FLOCKD_NATS_TOKEN)", c->nats_token}};
    for (size_t i = 0; i < sizeof sent / sizeof sent[0]; i++)
        for (const char *p = sent[i].value; *p; p++)
            if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
                return sent[i].name;
    return NULL;
}

/*
 * With --nats: the URLs, user, password and token sendable, the
 * certificate with its key, the user with a password, and one way of
 * signing in (a user and password or a token in a URL of the list, which
 * is what an '@' there is, --nats-user, --nats-token or --nats-creds).
 * Without --nats these settings are not used.
 */
static int validate_nats(const struct cfg *c, char *err, size_t errlen)
{
    if (!c->nats_url[0])
        return 0;
    const char *bad = unsendable(c);
    if (bad)
        return fail(err, errlen, CFG_EINVAL,
                    "%s: holds a \", a \\ or a control character, which libnats cannot send to "
                    "NATS",
                    bad);
    if (!c->nats_cert[0] != !c->nats_key[0])
        return fail(err, errlen, CFG_EINVAL,
                    "--nats-cert and --nats-key go together: give both or neither");
    if (!c->nats_user[0] != !c->nats_password[0])
        return fail(err, errlen, CFG_EINVAL,
                    "--nats-user and --nats-password (or FLOCKD_NATS_PASSWORD) go together: "
                    "give both or neither");
    const char *ways[4];
    size_t n = 0;
    if (strchr(c->nats_url, '@'))
        ways[n++] = "credentials in the --nats URL";
    if (c->nats_user[0])
        ways[n++] = "--nats-user";
    if (c->nats_token[0])
        ways[n++] = "--nats-token (or FLOCKD_NATS_TOKEN)";
    if (c->nats_creds[0])
        ways[n++] = "--nats-creds";
    if (n > 1)
        return fail(err, errlen, CFG_EINVAL, "NATS sign-in given twice, by %s and by %s: give one",
                    ways[0], ways[1]);
    return 0;
}

int cfg_apply_env(struct cfg *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof env_rules / sizeof env_rules[0]; i++) {
        const struct cfg_row *r = find_row(env_rules[i].row, strlen(env_rules[i].row));
        assert(r && r->type == T_STRING);
        char *field = (char *)c + r->offset;
        const char *value = getenv(env_rules[i].env);
        if (field[0] || !value || !value[0])
            continue;
        if ((double)strlen(value) > r->max)
            return fail(err, errlen, CFG_EINVAL, "%s is longer than %.0f bytes", env_rules[i].env,
                        r->max);
        memcpy(field, value, strlen(value) + 1);
    }
    return 0;
}

/* 0 if path names something that can be opened for reading and is not a
 * directory, else a negative errno. */
static int check_readable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : 0;
    close(fd);
    return rc;
}

int cfg_check_files(const struct cfg *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < ROW_COUNT; i++) {
        const char *path = (const char *)c + rows[i].offset;
        if (!(rows[i].flags & ROW_FILE) || !path[0])
            continue;
        int rc = check_readable(path);
        if (rc < 0)
            return fail(err, errlen, CFG_EIO, "--%s %s: %s", rows[i].name, path, strerror(-rc));
    }
    return 0;
}

/* Checks one stored field against its row, as if it had just been set. */
static int validate_row(const struct cfg *c, const struct cfg_row *r, char *err, size_t errlen)
{
    char label[64], shown[64];

    snprintf(label, sizeof label, "--%s", r->name);
    if (r->type == T_STRING) {
        const char *s = (const char *)c + r->offset;
        if (!memchr(s, '\0', r->size))
            return fail(err, errlen, CFG_EINVAL, "%s: not NUL-terminated", label);
        return check_text(r, s, label, err, errlen);
    }
    double v = get_number(c, r);
    format_number(r, v, shown, sizeof shown);
    return check_number(r, v, label, shown, err, errlen);
}

int cfg_validate(const struct cfg *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < ROW_COUNT; i++) {
        int rc = validate_row(c, &rows[i], err, errlen);
        if (rc != 0)
            return rc;
    }
    if (!c->tls_cert[0] != !c->tls_key[0])
        return fail(err, errlen, CFG_EINVAL,
                    "--tls-cert and --tls-key go together: give both or neither");
    if (c->tls_redirect_port && !c->tls_cert[0])
        return fail(err, errlen, CFG_EINVAL, "--tls-redirect-port needs --tls-cert");
    if (c->tls_redirect_port && c->tls_redirect_port == c->port)
        return fail(err, errlen, CFG_EINVAL, "--tls-redirect-port must differ from --port");
    if (validate_nats(c, err, errlen) < 0)
        return CFG_EINVAL;
    for (size_t i = 0; i < sizeof order_rules / sizeof order_rules[0]; i++) {
        const struct cfg_row *lo = find_row(order_rules[i].lo, strlen(order_rules[i].lo));
        const struct cfg_row *hi = find_row(order_rules[i].hi, strlen(order_rules[i].hi));
        assert(lo && hi);
        double a = get_number(c, lo), b = get_number(c, hi);
        if (a > b) {
            char sa[32], sb[32];
            format_number(lo, a, sa, sizeof sa);
            format_number(hi, b, sb, sizeof sb);
            return fail(err, errlen, CFG_EINVAL, "--%s (%s) must not exceed --%s (%s)", lo->name,
                        sa, hi->name, sb);
        }
    }
    return 0;
}

/* The "--name META" column of --help. */
static void flag_text(const struct cfg_row *r, char *buf, size_t n)
{
    snprintf(buf, n, "--%s %s", r->name, r->meta);
}

static void default_text(const struct cfg_row *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s", r->def[0] ? r->def : "none");
}

static int max_int(int a, size_t b)
{
    return (size_t)a > b ? a : (int)b;
}

void cfg_help(FILE *out, const char *prog)
{
    char text[128];
    int wflag = 0, wdef = 0, wbounds = 0;

    /* Column widths from the table, so every line stays aligned. */
    for (size_t i = 0; i < ROW_COUNT; i++) {
        flag_text(&rows[i], text, sizeof text);
        wflag = max_int(wflag, strlen(text));
        default_text(&rows[i], text, sizeof text);
        wdef = max_int(wdef, strlen(text));
        bounds_text(&rows[i], text, sizeof text);
        wbounds = max_int(wbounds, strlen(text));
    }

    fprintf(out, "usage: %s [options]\n", prog ? prog : "flockd");
    fprintf(out, "Authoritative flocking simulation server: one shared flock, streamed to "
                 "browsers over WebSocket.\n\n");
    fprintf(out, "  %-*s  %-*s  %-*s  %s\n", wflag, "option", wdef, "default", wbounds, "allowed",
            "meaning");
    for (size_t i = 0; i < ROW_COUNT; i++) {
        char flag[128], def[128], bounds[128];
        flag_text(&rows[i], flag, sizeof flag);
        default_text(&rows[i], def, sizeof def);
        bounds_text(&rows[i], bounds, sizeof bounds);
        fprintf(out, "  %-*s  %-*s  %-*s  %s\n", wflag, flag, wdef, def, wbounds, bounds,
                rows[i].help);
    }
    fprintf(out, "  %-*s  %s\n\n", wflag, "-h, --help", "print this help and exit");
    fprintf(out, "Flags take the form --name VALUE or --name=VALUE. The --config file is a JSON "
                 "object\nwhose keys are the same names without \"--\", e.g. {\"port\": 9000, "
                 "\"edges\": \"contain\"};\nflags on the command line override it.\n");
    fprintf(out,
            "\nReplaying a command log (--record) instead of running rooms:\n"
            "  %s --replay FILE [--until TICK] [--verify]\n"
            "      runs it headless as fast as it can; the last line is one JSON object\n"
            "      {\"ticks\":N,\"hash\":\"...\",\"verified\":K,\"first_divergence\":null|TICK}\n"
            "  %s --replay FILE --serve [--port PORT --host ADDR --web-root DIR ...]\n"
            "      plays it to browsers at http://HOST:PORT/ (pause, step, go to a tick)\n",
            prog ? prog : "flockd", prog ? prog : "flockd");
}
