/*
 * checkpoint — a room's complete state as bytes, and back (server/store/FILES.md
 * §2 is the normative layout).
 *
 * A checkpoint holds what a room needs to carry on where it was: its
 * identity as the lobby knows it (name, mode, player password, RTS teams
 * with their owners, rejoin tokens and what is left of a waiting team's
 * grace period), the room's own state (paused, steps still to run, who owns
 * each obstacle, a reset's boid count, the tick rate) and the world
 * (sim_state.h: boids, obstacles, targets, parameters, PRNG, tick, epoch).
 * It is versioned, carries its own length and a CRC-32 of everything
 * before it, and names the build that wrote it and its sequence number in
 * the room's life. flockd writes it to files (persist.h) and into the
 * command log (reclog.h); the same bytes can live anywhere else.
 *
 * Decoding checks everything before it reports success: length, magic,
 * version, checksum, every field's range, the strings, the world state
 * (sim_state_check), the owners against the world's obstacle count. A
 * decoded struct ckpt points into the bytes it came from (world, owners):
 * keep them while it is used.
 *
 * Never: I/O, clocks, allocation, globals. Threading: reentrant.
 * Errors: 0 (or a length) or a negative PROTO_E_* code; decode also names
 * the reason in *why (a static string).
 */
#ifndef FLOCKD_CHECKPOINT_H
#define FLOCKD_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "proto_command.h"
#include "secret.h"
#include "sim.h"

#define CKPT_VERSION         2   /* a reader also takes 1: no script section */
#define CKPT_BUILD_MAX       63  /* bytes of the build id */
#define CKPT_TEAMS_MAX       255 /* RTS teams 1..255 */
#define CKPT_SCRIPT_NAME_MAX 32
#define CKPT_SCRIPT_MAX      (128u << 10) /* bytes of a script's text, and of its state */

enum ckpt_team_state { CKPT_TEAM_FREE, CKPT_TEAM_PLAYING, CKPT_TEAM_WAITING };

struct ckpt_team {
    enum ckpt_team_state state;
    uint64_t owner;                    /* key of its obstacles; not 0 unless free */
    char rejoin[SECRET_TOKEN_LEN + 1]; /* 32 lowercase hex digits; "" if free */
    char name[PROTO_NAME_MAX + 1];
    int64_t grace_left_ns; /* waiting: what was left of its grace period */
};

/* Who added an obstacle (struct room's owner records). */
struct ckpt_owner {
    uint32_t id;
    uint64_t owner;
};

struct ckpt {
    /* The room as the lobby knows it. */
    char room[PROTO_ROOM_MAX + 1]; /* 1..32 of [A-Za-z0-9_-] */
    enum proto_mode mode;          /* sandbox or rts */
    char password[PROTO_TOKEN_MAX + 1];
    uint32_t max_teams;                 /* teams[1..max_teams] are meaningful */
    struct ckpt_team teams[SIM_GROUPS]; /* [0] unused */
    /* Which checkpoint. */
    uint32_t seq;    /* 1, 2, ... in the room's life, restores included */
    int64_t wall_us; /* when it was taken, server wall clock */
    char build[CKPT_BUILD_MAX + 1];
    /* The room. */
    double tick_hz; /* [1, 1000]; the world's dt is 1 / tick_hz */
    uint32_t boids; /* what a reset without `boids` scatters */
    int paused;
    uint32_t steps_pending;
    uint32_t owner_count;
    const struct ckpt_owner *owners; /* encode: owner_count records, ids ascending */
    const uint8_t *owner_bytes;      /* decode: where ckpt_owner() reads them */
    /* The world: a sim_state. */
    const uint8_t *world;
    size_t world_len;
    /* The room's script (FILES.md §2.3): its name ("" for none), its text
     * and its saved state (script.h's bytes). */
    char script[CKPT_SCRIPT_NAME_MAX + 1];
    const char *script_text;
    size_t script_len;
    const uint8_t *script_state;
    size_t script_state_len;
};

/* Bytes ckpt_encode(c) writes; and the most any checkpoint of a world of
 * this capacity and obstacle count takes. */
size_t ckpt_size(const struct ckpt *c);
size_t ckpt_max_size(uint32_t capacity, uint32_t max_obstacles);

/*
 * Writes c into buf[0..cap), checksum included. Returns the length, or
 * PROTO_E_NOSPACE (cap too small) or PROTO_E_BAD_VALUE (a string too long
 * or a count beyond its limit).
 */
int ckpt_encode(const struct ckpt *c, uint8_t *buf, size_t cap);

/*
 * Reads buf[0..len) into *out (pointing into buf). Returns 0, or
 * PROTO_E_TRUNCATED (shorter than it says), PROTO_E_BAD_LENGTH (longer),
 * PROTO_E_BAD_MAGIC (not a checkpoint), PROTO_E_BAD_VERSION (another
 * format version), PROTO_E_HASH_MISMATCH (the checksum differs: corrupt)
 * or PROTO_E_BAD_VALUE (a field breaks its rule, the world state
 * included), with the reason in *why (may be NULL).
 */
int ckpt_decode(const uint8_t *buf, size_t len, struct ckpt *out, const char **why);

/* The i-th owner record (i < c->owner_count) of an encoded or decoded c. */
void ckpt_owner(const struct ckpt *c, uint32_t i, struct ckpt_owner *out);

#endif
