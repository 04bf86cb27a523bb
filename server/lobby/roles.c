/*
 * roles.c — the permission table of §5.6 (see roles.h).
 */
#include "roles.h"

#include "secret.h"

_Static_assert(SECRET_MAX >= PROTO_TOKEN_MAX, "secrets of the protocol must fit");

/* Players steer: seeking (their own team's group in RTS) and obstacles. */
static int player_check(int team, const struct proto_command *cmd, const char **why)
{
    switch (cmd->kind) {
    case PROTO_CMD_SEEK:
    case PROTO_CMD_SEEK_CLEAR: {
        int group = cmd->kind == PROTO_CMD_SEEK ? cmd->args.seek.group : cmd->args.seek_clear.group;
        if (team > 0 && group != team) {
            *why = "players steer only their own team's group";
            return PROTO_E_FORBIDDEN;
        }
        return 0;
    }
    case PROTO_CMD_OBSTACLE_ADD:
    case PROTO_CMD_OBSTACLE_REMOVE:
        return 0; /* quota and ownership: the room checks */
    default:
        *why = "only admins may change the whole room";
        return PROTO_E_FORBIDDEN;
    }
}

int roles_check(enum proto_role role, int team, const struct proto_command *cmd, const char **why)
{
    if (role == PROTO_ROLE_ADMIN || cmd->kind == PROTO_CMD_PING || cmd->kind == PROTO_CMD_JOIN ||
        cmd->kind == PROTO_CMD_KEYFRAME || cmd->kind == PROTO_CMD_STATS ||
        cmd->kind == PROTO_CMD_VIEW)
        return 0;
    if (role == PROTO_ROLE_VIEWER) {
        *why = "viewers may only watch; join as a player to steer";
        return PROTO_E_FORBIDDEN;
    }
    return player_check(team, cmd, why);
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
