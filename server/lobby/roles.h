/*
 * roles — what each role may do (PROTOCOL.md §5.6): the permission table
 * for commands, and who may become an admin.
 *
 * Viewers only watch (ping and join aside); players steer (seek, clear
 * their target, add and remove obstacles), an RTS player only its own
 * team's group; admins may do everything. Obstacle quotas and ownership
 * are the room's to check.
 *
 * Never: state of its own, I/O. Threading: reentrant.
 */
#ifndef FLOCKD_ROLES_H
#define FLOCKD_ROLES_H

#include <stdbool.h>

#include "proto_command.h"

/*
 * 0 if a member with `role` (and, for an RTS player, `team` > 0; else -1)
 * may send cmd, else PROTO_E_FORBIDDEN with the reason in *why.
 */
int roles_check(enum proto_role role, int team, const struct proto_command *cmd, const char **why);

/*
 * 0 if a join may ask for `a->role`; only a join as admin can be refused:
 * with an admin token set (admin_token not "") it must come with that
 * token, without one only a loopback client may be admin. Else
 * PROTO_E_FORBIDDEN with the reason in *why.
 */
int roles_check_join(const struct proto_join_args *a, const char *admin_token, bool loopback,
                     const char **why);

#endif
