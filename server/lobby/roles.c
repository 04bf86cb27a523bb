/*
 * roles.c — the permission table of §5.6 (see roles.h).
 */
#include "roles.h"

#include "secret.h"

#include <stddef.h>

_Static_assert(SECRET_MAX >= PROTO_TOKEN_MAX, "secrets of the protocol must fit");

/* Who may send a command besides admins, who may send every one. */
enum senders {
    ADMINS,  /* no row: admins only (they change the whole room) */
    PLAYERS, /* players steer: seeking, obstacles (quota and ownership: the room's) */
    ANYONE,  /* viewers too: what only watches */
};

/* The place of args.m (an int) in struct proto_command: the group a
 * command steers, which an RTS player's must be its team's. */
#define GROUP(m)                                                                                   \
    _Generic(((struct proto_command *)0)->args.m, int : offsetof(struct proto_command, args.m))

/* The permission table of §5.6, by command kind. Every command has its
 * row; one left out would be for admins only (ADMINS is 0). */
static const struct permission {
    enum senders senders;
    size_t group; /* players: where the group it steers is (-1 there: its own); 0: none */
} permissions[PROTO_CMD_COUNT] = {
    [PROTO_CMD_PING] = {ANYONE, 0},
    [PROTO_CMD_JOIN] = {ANYONE, 0},
    [PROTO_CMD_KEYFRAME] = {ANYONE, 0},
    [PROTO_CMD_STATS] = {ANYONE, 0},
    [PROTO_CMD_VIEW] = {ANYONE, 0},
    [PROTO_CMD_SEEK] = {PLAYERS, GROUP(seek.group)},
    [PROTO_CMD_SEEK_CLEAR] = {PLAYERS, GROUP(seek_clear.group)},
    [PROTO_CMD_OBSTACLE_ADD] = {PLAYERS, 0},
    [PROTO_CMD_OBSTACLE_REMOVE] = {PLAYERS, 0},
    [PROTO_CMD_OBSTACLE_CLEAR] = {ADMINS, 0},
    [PROTO_CMD_SPAWN] = {ADMINS, 0},
    [PROTO_CMD_DESPAWN] = {ADMINS, 0},
    [PROTO_CMD_PARAMS] = {ADMINS, 0},
    [PROTO_CMD_PAUSE] = {ADMINS, 0},
    [PROTO_CMD_RESUME] = {ADMINS, 0},
    [PROTO_CMD_STEP] = {ADMINS, 0},
    [PROTO_CMD_RESET] = {ADMINS, 0},
    [PROTO_CMD_KICK] = {ADMINS, 0},
    [PROTO_CMD_GOTO] = {ADMINS, 0},
    [PROTO_CMD_SELECT] = {PLAYERS, GROUP(select.team)},
    [PROTO_CMD_MOVE] = {PLAYERS, GROUP(order.team)},
    [PROTO_CMD_PATROL] = {PLAYERS, GROUP(order.team)},
    [PROTO_CMD_FOLLOW] = {PLAYERS, GROUP(order.team)},
    [PROTO_CMD_HOLD] = {PLAYERS, GROUP(order.team)},
    [PROTO_CMD_STOP] = {PLAYERS, GROUP(order.team)},
    [PROTO_CMD_FORMATION] = {PLAYERS, GROUP(formation.team)},
    [PROTO_CMD_GAME] = {ANYONE, 0}, /* the room's script decides */
    [PROTO_CMD_SCRIPT] = {ADMINS, 0},
};

int roles_check(enum proto_role role, int team, const struct proto_command *cmd, const char **why)
{
    struct permission p = {ADMINS, 0};
    if ((unsigned)cmd->kind < PROTO_CMD_COUNT)
        p = permissions[cmd->kind];
    if (role == PROTO_ROLE_ADMIN || p.senders == ANYONE)
        return 0;
    if (role == PROTO_ROLE_VIEWER) {
        *why = "viewers may only watch; join as a player to steer";
        return PROTO_E_FORBIDDEN;
    }
    if (p.senders == ADMINS) {
        *why = "only admins may change the whole room";
        return PROTO_E_FORBIDDEN;
    }
    int group = p.group ? *(const int *)((const char *)cmd + p.group) : team;
    if (team > 0 && group != team && group >= 0) {
        *why = "players steer only their own team's group";
        return PROTO_E_FORBIDDEN;
    }
    return 0;
}

int roles_check_join(const struct proto_join_args *a, const char *admin_token, bool loopback,
                     const char **why)
{
    if (a->role != PROTO_ROLE_ADMIN)
        return 0;
    if (admin_token[0]) {
        if (a->has_token && secret_matches(a->token, admin_token))
            return 0;
        *why = "join: wrong or missing admin token";
    } else {
        if (loopback)
            return 0;
        *why = "join: this server has no admin token; only local clients may be admins";
    }
    return PROTO_E_FORBIDDEN;
}
