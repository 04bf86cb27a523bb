/*
 * lobby — the rooms of one flockd and who is in them (PROTOCOL.md §5.6).
 *
 * The lobby owns the registry of rooms (the default room and those created
 * by joins), every connection's membership record (room, role, team,
 * name), the RTS teams with their rejoin tokens and grace periods, and the
 * decisions: may this join happen, may this member send this command. It
 * tells each room who sent what (struct room_actor) and queues the room's
 * own bookkeeping commands (team units spawned, despawned). Rooms tick on
 * the pool; the lobby creates, schedules and removes them.
 *
 * Never: sockets (the network side owns connections and hands the lobby a
 * member record per connection, with an opaque session pointer).
 * Threading: one thread only (the network service thread).
 */
#ifndef FLOCKD_LOBBY_H
#define FLOCKD_LOBBY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "proto_command.h"
#include "room.h"

struct lobby_room;
struct pool;

/* One connection's membership, embedded in the network's session. */
struct lobby_member {
    uint64_t client;
    int loopback; /* the peer address is a loopback address */
    void *session;
    /* Set by the lobby. */
    struct lobby_room *room;
    enum proto_role role;
    int team;       /* RTS player's group, -1: none */
    int joined;     /* came by a join (listed in the roster), not by connecting */
    uint64_t owner; /* key of the obstacles it adds */
    char name[PROTO_NAME_MAX + 1];
    struct lobby_member *prev, *next; /* in its room */
};

struct lobby;

/*
 * Creates the lobby and its default room (from `tmpl`, named "default",
 * sandbox) and schedules it on the pool. NULL and a static *err on failure.
 * Rooms created later copy tmpl with their own name, mode and boid count.
 */
struct lobby *lobby_create(const struct cfg *cfg, const struct room_config *tmpl, struct pool *pool,
                           const char **err);
/* Unschedules and frees every room. Members must have left. */
void lobby_destroy(struct lobby *l);

/* 1 when joins as admin need a token, 0 when loopback clients are admins. */
int lobby_has_admin_token(const struct lobby *l);

/* Puts a new connection into the default room: admin if it comes from
 * loopback and the server has no admin token, else player. */
void lobby_enter(struct lobby *l, struct lobby_member *m);

/*
 * Decides a join (all of §5.6). On success the member has moved (its old
 * room's team, if any, waits out its grace period), the join is queued in
 * the new room, which acks it and sends the welcome, and 0 is returned. On
 * refusal nothing changed and a negative wire code is returned with a
 * message for the client in *why.
 */
int lobby_join(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
               const char **why);

/* Takes the member out of its room (a connection closed). kicked: its RTS
 * team, if any, is despawned at once instead of waiting for a rejoin. */
void lobby_leave(struct lobby *l, struct lobby_member *m, int kicked);

/* 0 if the member's role may send cmd in its room, else PROTO_E_FORBIDDEN
 * with the reason in *why (ownership of obstacles is the room's to check). */
int lobby_allowed(const struct lobby_member *m, const struct proto_command *cmd, const char **why);

/* The sender description a room needs for a member's command. */
struct room_actor lobby_actor(const struct lobby_member *m);

/* Ends grace periods and removes rooms empty for longer than the expiry. */
void lobby_housekeep(struct lobby *l);

/* Rooms, for the network side to route frames and replies. */
size_t lobby_count(const struct lobby *l);
struct lobby_room *lobby_at(const struct lobby *l, size_t i);
struct room *lobby_room_room(const struct lobby_room *lr);
const struct proto_limits *lobby_room_limits(const struct lobby_room *lr);
struct lobby_member *lobby_room_members(const struct lobby_room *lr);
/* The member of lr with this client id, or NULL. */
struct lobby_member *lobby_room_find(const struct lobby_room *lr, uint64_t client);
/* Where the network keeps the frame it last announced to lr's members. */
struct frame **lobby_room_frame(struct lobby_room *lr);

#define LOBBY_ROSTER_MAX 100 /* entries a roster lists; "more" counts the rest */

/* 1 once if lr's roster changed since the last call. */
int lobby_room_take_roster_change(struct lobby_room *lr);
/* lr's roster message (§6.4) into buf; its length, or <= 0. */
int lobby_roster(const struct lobby_room *lr, char *buf, size_t cap);

/* GET /api/rooms (§10) into buf; its length, or PROTO_E_NOSPACE if cap is
 * too small. */
int lobby_rooms_json(const struct lobby *l, char *buf, size_t cap);

#endif
