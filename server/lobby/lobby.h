/*
 * lobby — the rooms of one flockd and who is in them (PROTOCOL.md §5.6).
 *
 * The lobby owns the registry of rooms (the default room and those created
 * by joins), every connection's membership record (room, role, team,
 * name), and the decisions: may this join happen (roles.h), may this
 * member send this command. It is the network side's one way into a room
 * for commands: lobby_submit() decides a parsed command and queues it to
 * the member's room with the sender's description (struct room_actor);
 * lobby_refuse() queues a refusal in turn. Each room with its members,
 * teams and roster is a lobby_room (lobby_room.h). Rooms tick on the pool;
 * the lobby creates, schedules and removes them.
 *
 * Time comes in as `now` (clock.h's monotonic nanoseconds): the grace
 * periods of RTS teams and the expiry of empty rooms run on it, so tests
 * drive time.
 *
 * Never: sockets, the clock (the network side owns connections and hands
 * the lobby a member record per connection, with an opaque session
 * pointer). Threading: the service threads call it under lobby_lock()
 * (housekeeping on one of them), but for lobby_rooms_of(), which a thread
 * reads for itself without the lock: frame delivery never takes it.
 */
#ifndef FLOCKD_LOBBY_H
#define FLOCKD_LOBBY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "lobby_room.h"
#include "proto_command.h"
#include "room.h"

struct pool;

struct lobby;

/*
 * Creates the lobby and its default room (from `tmpl`, named "default",
 * sandbox) and schedules it on the pool. NULL and a static *err on failure.
 * Rooms created later copy tmpl with their own name, mode and boid count.
 * With tmpl->persist holding checkpoints, every room comes back from its
 * checkpoint (the default room too), its waiting teams counting their
 * grace from `now`; each one that cannot is said on stderr and starts
 * fresh (default) or is left to a join.
 */
struct lobby *lobby_create(const struct cfg *cfg, const struct room_config *tmpl, struct pool *pool,
                           int64_t now, const char **err);
/* Unschedules and frees every room. Members must have left. */
void lobby_destroy(struct lobby *l);

/* True when joins as admin need a token, false when loopback clients are
 * admins. */
bool lobby_has_admin_token(const struct lobby *l);

/* Puts a new connection into the default room: admin if it comes from
 * loopback and the server has no admin token, else player (viewer in an
 * rts default room: a player's team comes with a join). */
void lobby_enter(struct lobby *l, struct lobby_member *m);

/* The welcome for m in its room (§6.1) into buf: its length, or a negative
 * PROTO_E_* if cap is too small. */
int lobby_welcome(const struct lobby_member *m, char *buf, size_t cap);

/*
 * Decides a join (all of §5.6). On success the member has moved (its old
 * room's team, if any, waits out its grace period from `now`), the join is
 * queued in the new room, which acks it and sends the welcome, and 0 is
 * returned. An RTS player whose rejoin token names a team another
 * connection plays takes it over: that connection leaves the room, and
 * *replaced points at it (evicted LOBBY_REPLACED) so that the caller
 * closes it, or, on another service thread, its thread is asked to
 * (lobby_set_threads()); *replaced is NULL otherwise. On refusal nothing
 * changed and a negative wire code is returned with a message for the
 * client in *why.
 */
int lobby_join(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
               int64_t now, struct lobby_member **replaced, const char **why);

/*
 * Hands a parsed command from m to its room, as §5.6 decides:
 *   - one m's role may not send is refused (PROTO_E_FORBIDDEN);
 *   - join: lobby_join() (*kicked: the connection it replaced, if any);
 *   - kick: the named member of m's room (not m) leaves it at once, its
 *     team ended, and *kicked points at it so the caller closes its
 *     connection (on another service thread, its thread is asked to:
 *     lobby_set_threads()); then the room acks the kick;
 *   - anything else is queued to m's room, which applies and answers it.
 * Returns 0 once queued (the room will answer), PROTO_E_QUEUE_FULL if the
 * room's queue is full (a kick has still happened; *why is not set), or
 * another negative wire code with the reason in *why; then nothing
 * changed. *kicked is NULL unless a member was kicked or replaced (its
 * `evicted` says which).
 */
int lobby_submit(struct lobby *l, struct lobby_member *m, const struct proto_command *cmd,
                 int64_t now, struct lobby_member **kicked, const char **why);

/*
 * Queues a refusal found before the room (bad JSON, rate, role...) to m's
 * room so that it is answered in turn, after m's earlier commands. 0, or
 * PROTO_E_QUEUE_FULL.
 */
/* SIGHUP: reads the scripts directory again and has every scripted room
 * take its new version (at once or at its next match). Returns how many
 * scripts failed to load (reported on stderr; their old text stays). Any
 * thread; takes the lobby's lock. */
int lobby_reload_scripts(struct lobby *l);

int lobby_refuse(const struct lobby_member *m, const char *id, int code, const char *message);

/* Takes the member out of its room (a connection closed). kicked: its RTS
 * team, if any, is ended at once instead of waiting from `now` for a
 * rejoin. Nothing happens if it is in no room. */
void lobby_leave(struct lobby *l, struct lobby_member *m, bool kicked, int64_t now);

/* 0 if the member's role may send cmd in its room, else PROTO_E_FORBIDDEN
 * with the reason in *why (ownership of obstacles is the room's to check). */
int lobby_allowed(const struct lobby_member *m, const struct proto_command *cmd, const char **why);

/* Ends grace periods over at `now`, removes rooms empty for longer than
 * the expiry (and their checkpoints) and, every --checkpoint-every
 * seconds, asks every room for a checkpoint. */
void lobby_housekeep(struct lobby *l, int64_t now);

/*
 * A checkpoint of every room (when the server keeps checkpoints): queued
 * behind each room's commands, or, with `stopped` (no worker ticks the
 * rooms any more), taken at once after the commands still queued. Then
 * persist_flush() waits for the files.
 */
void lobby_checkpoint(struct lobby *l, int64_t now, bool stopped);

/* The lobby's mutex: every call but lobby_rooms_of() is made holding it
 * once service threads run. */
void lobby_lock(struct lobby *l);
void lobby_unlock(struct lobby *l);

/* Asks service thread `thread` to take the member with this client id out
 * of its room at once (its team ended, if it is still its own) and close
 * its connection with the code for `why` (enum lobby_eviction). */
typedef void lobby_kick_fn(void *arg, unsigned thread, uint64_t client, enum lobby_eviction why);

/*
 * The network's service threads (1..LOBBY_THREADS_MAX; 1 until set): a
 * member's `thread` names the one owning its connection. A kick of a
 * member of another thread than the kicker's goes through `kick` (its
 * thread detaches it); lobby_submit() then sets no *kicked.
 */
void lobby_set_threads(struct lobby *l, unsigned threads, lobby_kick_fn *kick, void *arg);

/* The rooms service thread `thread` has members in, into *rooms: their
 * count. Only that thread changes them (joins, leaves), so it reads them
 * without the lock, and none of them closes while it has a member there. */
size_t lobby_rooms_of(const struct lobby *l, unsigned thread, struct lobby_room *const **rooms);

/* Every room (under the lock): the room list, the endpoints. */
size_t lobby_count(const struct lobby *l);
struct lobby_room *lobby_at(const struct lobby *l, size_t i);

/* The most rooms, and whether a join may create one now. */
uint32_t lobby_max_rooms(const struct lobby *l);
bool lobby_can_create(const struct lobby *l);

#endif
