/*
 * script — a room's rules as a Lua 5.4 script (README "Writing a room
 * script"): one sandboxed Lua state per room, driven by the room's tick,
 * acting on the room's world through a bulk API (script_api.c) and telling
 * clients its state through the publish hook.
 *
 * A script is deterministic: it sees the world, the tick and the events
 * the room hands it (joins, leaves, custom commands, all in the command
 * log), draws random numbers only from a stream of the room's seed, and
 * iterates tables in a fixed order (`pairs` visits keys sorted). Replaying
 * a room's log with the same script gives the same world bit for bit.
 *
 * Safe: no io, os, debug, package, load or dofile; every hook runs within
 * an instruction budget (script_limits) counted by Lua's count hook plus a
 * cost per API call, and the Lua state allocates within a memory cap. A
 * hook that errs, runs over its budget or its memory disables the script:
 * the reason is kept (script_status) and the room carries on without it.
 *
 * Never: sockets, files (the caller reads the source), clocks for logic
 * (only to measure hooks). Threading: one thread at a time per script (the
 * room's tick); scripts of different rooms are independent.
 */
#ifndef FLOCKD_SCRIPT_H
#define FLOCKD_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define SCRIPT_NAME_MAX     32          /* bytes of a script's name: [A-Za-z0-9_-] */
#define SCRIPT_SOURCE_MAX   (128 << 10) /* bytes of a script's source */
#define SCRIPT_STATE_MAX    (128 << 10) /* bytes of a script's saved state */
#define SCRIPT_PUBLISH_MAX  16384       /* bytes of one published state, as JSON */
#define SCRIPT_INSTRUCTIONS 1000000     /* default budget of one hook call */
#define SCRIPT_MEMORY       (64u << 20) /* default memory cap of one room's script */
#define SCRIPT_REASON_MAX   256
#define SCRIPT_WALL_MS      100 /* a hook still running after this long is stopped */

/* A script's source as the room holds it: its name, its text and the hash
 * of the text (FNV-1a, 64 bits) that the welcome and the log show. */
struct script_source {
    char name[SCRIPT_NAME_MAX + 1];
    uint64_t hash;
    char *text; /* malloc'd, NUL-terminated */
    size_t len;
};

/* Fills src from text[0..len) (copied) under name. 0, or PROTO-style
 * negative codes: -EINVAL (a bad name, too long, a NUL inside), -ENOMEM. */
int script_source_set(struct script_source *src, const char *name, const char *text, size_t len);
void script_source_free(struct script_source *src);
uint64_t script_hash(const char *text, size_t len);

struct script_limits {
    uint64_t instructions; /* per hook call; 0: SCRIPT_INSTRUCTIONS */
    size_t memory;         /* bytes; 0: SCRIPT_MEMORY */
};

/* What the script acts on and tells. The callbacks run on the caller's
 * thread, inside a hook. */
struct script_env {
    struct sim_world *world;
    uint64_t seed;  /* of the script's random stream */
    double tick_hz; /* the world's ticks per second */
    int max_teams;  /* rts: teams 1..max_teams; 0: a sandbox */
    const char *room;
    /* The script's state for everyone (team 0) or for one team, as JSON. */
    void (*publish)(void *arg, int team, const char *json, size_t len);
    void *arg;
};

/* A player's event for the script. */
enum script_event { SCRIPT_JOIN = 1, SCRIPT_LEAVE = 2, SCRIPT_COMMAND = 3 };

struct script_player {
    uint64_t id; /* the client's id */
    int role;    /* enum proto_role */
    int team;    /* rts: 1..; -1: none */
    const char *name;
};

/* What a script has cost. */
struct script_stats {
    uint64_t hooks, errors;
    double last_ms, max_ms; /* the last hook call's wall time, the longest */
    size_t memory;          /* bytes the Lua state holds now */
};

struct script;

/*
 * A script for one room: a fresh Lua state with the sandbox and the API,
 * src's text run once (its top level defines the hooks), then, if saved
 * is not NULL, the state restored from saved[0..saved_len) (a checkpoint,
 * or the previous version's on a reload). Returns NULL and a reason in
 * why[0..SCRIPT_REASON_MAX) on a syntax error, an error at the top level
 * or a bad saved state.
 */
struct script *script_create(const struct script_source *src, const struct script_env *env,
                             const struct script_limits *lim, const uint8_t *saved,
                             size_t saved_len, char *why);
void script_destroy(struct script *s);

/* The hooks. Each returns true if the script is still running after it. */
bool script_start(struct script *s);
bool script_tick(struct script *s); /* every tick, or at the rate the script set */
bool script_player_event(struct script *s, enum script_event ev, const struct script_player *p);

/*
 * A custom command: json[0..len) (an object's members as JSON text, the
 * command without cmd and id) from player p. Returns 0 if the script took
 * it, or -EPERM with its reason in why (the script refused it, or is not
 * running).
 */
int script_command(struct script *s, const struct script_player *p, const char *json, size_t len,
                   char *why);

/* The end hook: the room closes or the script is replaced. */
void script_end(struct script *s);

/* True if the script allows a new version now (between matches, or it
 * says `reload = "now"`). */
bool script_is_reloadable(struct script *s);

/*
 * The script's state (its `state` table, its match and players, its
 * random stream) as bytes into a malloc'd *out: its length, or a negative
 * code (-ENOMEM, -E2BIG above SCRIPT_STATE_MAX, -EINVAL: a value that
 * cannot be saved, such as a function, named in why).
 */
int script_save(struct script *s, uint8_t **out, char *why);

/* Running, or disabled with the reason into why. */
bool script_is_running(const struct script *s, char *why, size_t cap);
void script_stats(const struct script *s, struct script_stats *out);
const struct script_source *script_source(const struct script *s);

#endif
