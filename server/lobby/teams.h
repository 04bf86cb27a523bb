/*
 * teams — the RTS team slots of one room (PROTOCOL.md §5.6): which group
 * each player steers, the rejoin token that gives a team back to its
 * player, and the grace period a team waits for a player who left.
 *
 * Group t (1..max) is FREE, PLAYING (its player is in the room) or WAITING
 * (its player left; its units stay until the grace period ends or the
 * player rejoins with the team's token). Spawning and removing the units
 * is the lobby's (it queues those commands to the room); this module only
 * keeps the slots.
 *
 * Never: touches rooms or reads the clock (time comes in as `now`).
 * Threading: the lobby's thread only.
 */
#ifndef FLOCKD_TEAMS_H
#define FLOCKD_TEAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto_command.h"
#include "secret.h"
#include "sim.h"

enum team_state { TEAM_FREE, TEAM_PLAYING, TEAM_WAITING };

struct team {
    enum team_state state;
    const void *player; /* TEAM_PLAYING: its member (compared, never dereferenced) */
    uint64_t owner;     /* key of its obstacles, kept across a rejoin */
    char rejoin[SECRET_TOKEN_LEN + 1];
    char name[PROTO_NAME_MAX + 1];
    int64_t grace_end_ns; /* TEAM_WAITING */
};

struct teams {
    struct team slot[SIM_GROUPS]; /* [0] unused: group 0 is nobody's */
    uint32_t max;                 /* teams 1..max may be used */
};

/* Every team free; max is clamped to SIM_GROUPS - 1. */
void teams_init(struct teams *ts, uint32_t max);

/*
 * The team for a joining player: the one `rejoin` (may be NULL or "")
 * names, if it is taken (*reclaim = true): waiting for its player, or
 * playing, by the joining connection or by another one that the token's
 * holder takes over; else the lowest free one; 0 if none is free.
 */
int teams_pick(const struct teams *ts, const char *rejoin, bool *reclaim);

/*
 * Gives team t to player under a fresh rejoin token (in ts->slot[t].rejoin).
 * A reclaimed team keeps its owner key; a new one gets `owner`. Returns the
 * team's owner key.
 */
uint64_t teams_take(struct teams *ts, int t, const void *player, bool reclaim, uint64_t owner,
                    const char *name, int64_t now);

/* Team t's player left: it waits until grace_end_ns. */
void teams_wait(struct teams *ts, int t, int64_t grace_end_ns);

/* Team t is free again. */
void teams_free(struct teams *ts, int t);

/* The lowest waiting team whose grace period is over at `now`, or 0. */
int teams_expired(const struct teams *ts, int64_t now);

/* True if any team waits for its player. */
bool teams_is_any_waiting(const struct teams *ts);

/* Teams not free (playing or waiting). */
uint32_t teams_taken(const struct teams *ts);

#endif
