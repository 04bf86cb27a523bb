/*
 * lobby_room — one room of the lobby: the running room (room.h) with its
 * name, mode, player password and command limits; who is in it (the
 * members' records in a list, counted by role); its RTS team slots
 * (teams.h) and the commands that spawn and remove a team's units; its
 * roster and what the room list shows of it; and the frame the network
 * last announced to its members.
 *
 * Never: decides joins or permissions (lobby.h, roles.h); sockets; reads
 * the clock (`now` comes in). Threading: under the lobby's lock (lobby.h),
 * but for what a service thread reads of its own: its members' list, its
 * announced frame and its roster flag, which only it changes.
 */
#ifndef FLOCKD_LOBBY_ROOM_H
#define FLOCKD_LOBBY_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "news.h"
#include "proto_command.h"
#include "room.h"
#include "teams.h"

struct lobby_room;
struct pool;

/* Service threads a room keeps members and announced frames apart for. */
#define LOBBY_THREADS_MAX NEWS_THREADS

/* Why the lobby took a member out of its room; the network closes its
 * connection with the code PROTOCOL.md §7.2 gives: kicked 1008, replaced
 * (its player rejoined on another connection) 4009. */
enum lobby_eviction { LOBBY_KICKED, LOBBY_REPLACED };

/* One connection's membership, embedded in the network's session. */
struct lobby_member {
    uint64_t client;
    unsigned thread;        /* the service thread owning the connection, 0..63 */
    bool loopback;          /* the peer address is a loopback address */
    unsigned char addr[16]; /* the peer address (IPv4 mapped), zeros if unknown */
    unsigned protocol;      /* the version its connection speaks (its welcomes say so); 0: 1 */
    void *session;
    /* Set by the lobby. */
    struct lobby_room *room; /* NULL once it left (closed or kicked) */
    enum proto_role role;
    int team;                    /* RTS player's group, -1: none */
    bool joined;                 /* came by a join (listed in the roster), not by connecting */
    enum lobby_eviction evicted; /* why, once the lobby took it out (lobby_submit's *kicked) */
    uint64_t owner;              /* key of the obstacles it adds */
    char name[PROTO_NAME_MAX + 1];
    struct lobby_member *prev, *next; /* in its room */
};

/* A new room's world and rts teams, beyond its template. */
struct lobby_room_shape {
    float width, height; /* world units */
    enum sim_edges edges;
    uint32_t max_teams;  /* rts */
    uint32_t team_units; /* rts: units a new team gets */
};

struct lobby_room_config {
    const struct room_config *tmpl; /* copied with the fields below */
    const char *name;
    enum proto_mode mode;
    uint32_t boids;
    const char *password; /* for players; NULL or "": none */
    uint32_t max_message; /* the command limit */
    struct lobby_room_shape shape;
    /* Restoring: the room carries on from this checkpoint (its name, mode,
     * password, world and teams win over the fields above); a team whose
     * player was playing waits for it grace_ns from now. NULL: a new room. */
    const struct ckpt *restore;
    bool resumed; /* restore is where the room's command log ends (room_resume_log) */
    int64_t grace_ns;
    const struct script_source *script; /* the room's rules (§14); NULL: none */
};

/*
 * Creates the room (or restores it, c->restore), starts its command log
 * if the server records, and schedules it on the pool. NULL and a static
 * reason in *err on failure; nothing is left of a room that failed to
 * restore. `now` counts as the time it became empty.
 * lobby_room_close() unschedules and frees it (members must have left).
 */
struct lobby_room *lobby_room_open(const struct lobby_room_config *c, struct pool *pool,
                                   int64_t now, const char **err);
void lobby_room_close(struct lobby_room *lr, struct pool *pool);

const char *lobby_room_name(const struct lobby_room *lr);
enum proto_mode lobby_room_mode(const struct lobby_room *lr);
struct room *lobby_room_room(const struct lobby_room *lr);
const struct proto_limits *lobby_room_limits(const struct lobby_room *lr);
struct teams *lobby_room_teams(struct lobby_room *lr);

/* True if a player may join with this password (NULL: none given); the
 * comparison takes constant time. */
bool lobby_room_can_play(const struct lobby_room *lr, const char *password);
/* True if players of lr need a password. */
bool lobby_room_has_password(const struct lobby_room *lr);

/* Has a scripted room take the scripts directory's version of its script. */
void lobby_room_reload_script(struct lobby_room *lr);

/* ---- members ---- */

/* Puts m (its role and team set) into lr. */
void lobby_room_attach(struct lobby_room *lr, struct lobby_member *m);

/* Takes m out of its room. Its RTS team, if any, ends at once when
 * end_team, else waits for it until grace_end_ns; a team that is no
 * longer m's (another connection of its player took it over) is left as
 * it is. */
void lobby_room_detach(struct lobby_member *m, bool end_team, int64_t grace_end_ns, int64_t now);

/* The members of lr whose connections service thread `thread` owns. */
struct lobby_member *lobby_room_members(const struct lobby_room *lr, unsigned thread);

/* The same members in an array of *n, for a walk that reads ahead (a
 * frame announced to each): built again after they changed. NULL without
 * memory (walk lobby_room_members()). Threading: `thread` only, as the
 * changes of its members are. */
struct lobby_member *const *lobby_room_roll(struct lobby_room *lr, unsigned thread, size_t *n);

/* The member of lr with this client id, or NULL. */
struct lobby_member *lobby_room_find(const struct lobby_room *lr, uint64_t client);

/* True if nobody is in lr, no team waits, and it has been so since
 * `expiry_ns` before now. */
bool lobby_room_is_expired(const struct lobby_room *lr, int64_t now, int64_t expiry_ns);

/* ---- commands ---- */

/* Queues cmd from m to the room, arrived at `now` (its reply is timed
 * from there). 0, or PROTO_E_QUEUE_FULL. */
int lobby_room_push(struct lobby_room *lr, const struct lobby_member *m,
                    const struct proto_command *cmd, int64_t now);

/* The welcome for m (§6.1) into buf: its length, or a negative PROTO_E_*. */
int lobby_room_welcome(const struct lobby_room *lr, const struct lobby_member *m, char *buf,
                       size_t cap);

/* A new team's units at its base; its target cleared. Team k of the
 * room's N has its base on an ellipse around the world's centre at the
 * angle 2πk/N (two teams: left and right of the centre), inside the
 * world and, when the world contains its boids, clear of its edges. */
void lobby_room_team_start(struct lobby_room *lr, int team);

/* The member of lr who plays `team` now (the team's slot names it), or
 * NULL: the team waits or is free, or its player is not in lr. */
struct lobby_member *lobby_room_player_of(const struct lobby_room *lr, int team);

/* Ends every team whose grace period is over at `now`. */
void lobby_room_end_expired_teams(struct lobby_room *lr, int64_t now);

/* ---- checkpoints ---- */

/* What the lobby knows of lr at `now`, as a checkpoint's identity: name,
 * mode, password, teams (a waiting team with what is left of its grace). */
void lobby_room_identity(const struct lobby_room *lr, int64_t now, struct ckpt *id);

/* Asks lr's room for a checkpoint (queued behind its commands); with
 * `now_stopped`, the room is no longer ticked and it is taken at once. */
void lobby_room_checkpoint(struct lobby_room *lr, int64_t now, bool now_stopped);

/* ---- what it shows ---- */

/* Where service thread `thread` keeps the frame it last announced to its
 * members of lr (released with the room). Only that thread touches it. */
struct frame **lobby_room_frame(struct lobby_room *lr, unsigned thread);

#define LOBBY_ROOM_ROSTER_MAX 100 /* entries a roster lists; "more" counts the rest */

/* True once per service thread if lr's roster changed since that thread
 * last asked (any thread). */
bool lobby_room_take_roster_change(struct lobby_room *lr, unsigned thread);
/* lr's roster message (§6.4) into buf: its length, or a negative
 * PROTO_E_* (PROTO_E_NOSPACE if cap is too small). */
int lobby_room_roster(const struct lobby_room *lr, char *buf, size_t cap);

/* What the room list (§10) shows of a room besides its room_info(). */
struct lobby_room_summary {
    const char *name; /* valid while the room exists */
    enum proto_mode mode;
    uint32_t players, admins, viewers;
    uint32_t teams;      /* RTS teams playing or waiting for their player */
    uint32_t max_teams;  /* RTS: teams it takes */
    uint32_t team_units; /* RTS: units a new team starts with */
    bool has_password;
};
void lobby_room_summary(const struct lobby_room *lr, struct lobby_room_summary *out);

#endif
