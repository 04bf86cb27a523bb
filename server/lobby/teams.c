/*
 * teams.c — RTS team slots, rejoin tokens and grace periods (see teams.h).
 */
#include "teams.h"

#include <stdio.h>

void teams_init(struct teams *ts, uint32_t max)
{
    *ts = (struct teams){.max = max < SIM_GROUPS ? max : SIM_GROUPS - 1};
}

int teams_pick(const struct teams *ts, const char *rejoin, bool *reclaim)
{
    *reclaim = false;
    if (rejoin && rejoin[0])
        for (uint32_t t = 1; t <= ts->max; t++) {
            const struct team *team = &ts->slot[t];
            if (team->state != TEAM_FREE && secret_matches(rejoin, team->rejoin)) {
                *reclaim = true;
                return (int)t;
            }
        }
    for (uint32_t t = 1; t <= ts->max; t++)
        if (ts->slot[t].state == TEAM_FREE)
            return (int)t;
    return 0;
}

uint64_t teams_take(struct teams *ts, int t, const void *player, bool reclaim, uint64_t owner,
                    const char *name, int64_t now)
{
    struct team *team = &ts->slot[t];
    if (!reclaim)
        *team = (struct team){.owner = owner};
    team->state = TEAM_PLAYING;
    team->player = player;
    snprintf(team->name, sizeof team->name, "%s", name);
    secret_token(team->rejoin, now);
    return team->owner;
}

void teams_wait(struct teams *ts, int t, int64_t grace_end_ns)
{
    ts->slot[t].state = TEAM_WAITING;
    ts->slot[t].player = NULL;
    ts->slot[t].grace_end_ns = grace_end_ns;
}

void teams_free(struct teams *ts, int t)
{
    ts->slot[t] = (struct team){.state = TEAM_FREE};
}

int teams_expired(const struct teams *ts, int64_t now)
{
    for (uint32_t t = 1; t <= ts->max; t++)
        if (ts->slot[t].state == TEAM_WAITING && now >= ts->slot[t].grace_end_ns)
            return (int)t;
    return 0;
}

bool teams_is_any_waiting(const struct teams *ts)
{
    for (uint32_t t = 1; t <= ts->max; t++)
        if (ts->slot[t].state == TEAM_WAITING)
            return true;
    return false;
}

uint32_t teams_taken(const struct teams *ts)
{
    uint32_t n = 0;
    for (uint32_t t = 1; t <= ts->max; t++)
        n += ts->slot[t].state != TEAM_FREE;
    return n;
}
