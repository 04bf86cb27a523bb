/*
 * test_lobby — joins and roles as the lobby decides them, on real rooms
 * ticking on a real pool: the permission matrix, admin tokens and
 * loopback admins, room creation limits and passwords, RTS teams with
 * rejoin tokens and grace periods, and expiry of empty rooms; members of
 * two service threads: each thread's rooms and members (as a list and as
 * an array), kicks across threads. The lobby's time is the test's
 * (f->now); only the rooms tick on the real clock.
 */
#define _POSIX_C_SOURCE 200809L

#include "lobby.h"
#include "pool.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

struct fixture {
    struct cfg cfg;
    struct room_config tmpl;
    struct pool *pool;
    struct lobby *lobby;
    struct lobby_member m[4];
    struct lobby_member *replaced; /* by the last try_join() */
    int64_t now;                   /* the lobby's clock, driven by the test */
};

#define MS 1000000LL

/* Posted by the rooms (from their tick threads) after replies or a frame. */
static sem_t room_news;

static void on_room_news(void *arg)
{
    (void)arg;
    sem_post(&room_news);
}

static void start(struct fixture *f)
{
    f->tmpl = (struct room_config){0};
    sim_default_config(&f->tmpl.sim);
    f->tmpl.sim.capacity = f->cfg.capacity;
    f->tmpl.boids = f->cfg.boids;
    f->tmpl.tick_hz = 60;
    f->tmpl.snapshot_hz = 20;
    f->tmpl.queue_len = 64;
    f->tmpl.team_cap = f->cfg.team_cap;
    f->tmpl.max_teams = f->cfg.max_teams;
    f->tmpl.notify = on_room_news;
    const char *err = NULL;
    f->pool = pool_create(1, &err);
    assert_non_null(f->pool);
    f->lobby = lobby_create(&f->cfg, &f->tmpl, f->pool, 0, &err);
    assert_non_null(f->lobby);
    for (int i = 0; i < 4; i++) {
        f->m[i] = (struct lobby_member){.client = (uint64_t)i + 1, .loopback = 1};
        lobby_enter(f->lobby, &f->m[i]);
    }
}

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    f.now = 1000 * MS;
    sem_init(&room_news, 0, 0);
    cfg_default(&f.cfg);
    f.cfg.boids = 50;
    f.cfg.capacity = 1000;
    f.cfg.max_rooms = 3;
    f.cfg.max_teams = 2;
    f.cfg.team_units = 5;
    f.cfg.grace = 0.2;
    f.cfg.room_expiry = 0.2;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 4; i++)
        lobby_leave(f->lobby, &f->m[i], false, f->now);
    pool_stop(f->pool);
    lobby_destroy(f->lobby);
    pool_destroy(f->pool);
    sem_destroy(&room_news);
    return 0;
}

static struct proto_command join(const char *room, enum proto_role role, enum proto_mode mode)
{
    struct proto_command c = {.kind = PROTO_CMD_JOIN};
    snprintf(c.args.join.room, sizeof c.args.join.room, "%s", room);
    c.args.join.role = role;
    c.args.join.mode = mode;
    return c;
}

static int try_join(struct fixture *f, int who, struct proto_command c)
{
    const char *why = NULL;
    int rc = lobby_join(f->lobby, &f->m[who], &c, f->now, &f->replaced, &why);
    if (rc)
        assert_non_null(why);
    return rc;
}

static void loopback_is_admin_without_a_token(void **state)
{
    struct fixture *f = *state;
    start(f);
    assert_int_equal(f->m[0].role, PROTO_ROLE_ADMIN);
    f->m[0].loopback = 0; /* a remote client may never become admin */
    assert_int_equal(try_join(f, 0, join("default", PROTO_ROLE_ADMIN, PROTO_MODE_ANY)),
                     PROTO_E_FORBIDDEN);
    assert_int_equal(f->m[0].role, PROTO_ROLE_ADMIN); /* refused: nothing changed */
    assert_int_equal(try_join(f, 1, join("default", PROTO_ROLE_ADMIN, PROTO_MODE_ANY)), 0);
}

static void a_token_makes_admins_and_nobody_else(void **state)
{
    struct fixture *f = *state;
    snprintf(f->cfg.admin_token, sizeof f->cfg.admin_token, "s3cret");
    start(f);
    assert_int_equal(f->m[0].role, PROTO_ROLE_PLAYER); /* loopback, but a token is set */
    struct proto_command c = join("default", PROTO_ROLE_ADMIN, PROTO_MODE_ANY);
    assert_int_equal(try_join(f, 0, c), PROTO_E_FORBIDDEN);
    c.args.join.has_token = 1;
    snprintf(c.args.join.token, sizeof c.args.join.token, "s3cre");
    assert_int_equal(try_join(f, 0, c), PROTO_E_FORBIDDEN);
    snprintf(c.args.join.token, sizeof c.args.join.token, "s3cret!");
    assert_int_equal(try_join(f, 0, c), PROTO_E_FORBIDDEN);
    snprintf(c.args.join.token, sizeof c.args.join.token, "s3cret");
    assert_int_equal(try_join(f, 0, c), 0);
    assert_int_equal(f->m[0].role, PROTO_ROLE_ADMIN);
}

/* Every command x role x mode: allowed by lobby_allowed or forbidden. */
static void the_permission_matrix(void **state)
{
    struct fixture *f = *state;
    start(f);
    assert_int_equal(try_join(f, 0, join("box", PROTO_ROLE_PLAYER, PROTO_MODE_SANDBOX)), 0);
    assert_int_equal(try_join(f, 1, join("war", PROTO_ROLE_PLAYER, PROTO_MODE_RTS)), 0);
    assert_int_equal(f->m[1].team, 1);
    assert_int_equal(try_join(f, 2, join("box", PROTO_ROLE_VIEWER, PROTO_MODE_ANY)), 0);
    assert_int_equal(try_join(f, 3, join("war", PROTO_ROLE_ADMIN, PROTO_MODE_ANY)), 0);
    /* ping join keyframe stats view game: everyone; seek seek_clear ob_add ob_remove select
     * move patrol follow hold stop formation: players too (the team is the first field of each);
     * the rest: admins only */
    for (int k = 0; k < PROTO_CMD_COUNT; k++) {
        struct proto_command c = {.kind = (enum proto_cmd)k};
        c.args.seek.group = 1; /* the RTS player's own team */
        if (k == PROTO_CMD_SEEK_CLEAR)
            c.args.seek_clear.group = 1;
        const char *why = NULL;
        int steering = k == PROTO_CMD_SEEK || k == PROTO_CMD_SEEK_CLEAR ||
                       k == PROTO_CMD_OBSTACLE_ADD || k == PROTO_CMD_OBSTACLE_REMOVE ||
                       k == PROTO_CMD_SELECT || proto_cmd_order((enum proto_cmd)k) ||
                       k == PROTO_CMD_FORMATION;
        int free_for_all = k == PROTO_CMD_PING || k == PROTO_CMD_JOIN || k == PROTO_CMD_KEYFRAME ||
                           k == PROTO_CMD_STATS || k == PROTO_CMD_VIEW || k == PROTO_CMD_GAME;
        int want_player = steering || free_for_all ? 0 : PROTO_E_FORBIDDEN;
        assert_int_equal(lobby_allowed(&f->m[0], &c, &why), want_player);
        assert_int_equal(lobby_allowed(&f->m[1], &c, &why), want_player);
        assert_int_equal(lobby_allowed(&f->m[2], &c, &why), free_for_all ? 0 : PROTO_E_FORBIDDEN);
        assert_int_equal(lobby_allowed(&f->m[3], &c, &why), 0);
    }
    /* Another team's group: the RTS player may not, the sandbox player may. */
    struct proto_command seek = {.kind = PROTO_CMD_SEEK};
    seek.args.seek.group = 2;
    const char *why = NULL;
    assert_int_equal(lobby_allowed(&f->m[1], &seek, &why), PROTO_E_FORBIDDEN);
    assert_int_equal(lobby_allowed(&f->m[0], &seek, &why), 0);
}

static void room_creation_limits_modes_and_passwords(void **state)
{
    struct fixture *f = *state;
    start(f);
    struct proto_command c = join("locked", PROTO_ROLE_PLAYER, PROTO_MODE_SANDBOX);
    c.args.join.has_password = 1;
    snprintf(c.args.join.password, sizeof c.args.join.password, "pw");
    assert_int_equal(try_join(f, 0, c), 0); /* created with a password */
    c.args.join.has_password = 0;
    assert_int_equal(try_join(f, 1, c), PROTO_E_FORBIDDEN);
    assert_int_equal(try_join(f, 1, join("locked", PROTO_ROLE_VIEWER, PROTO_MODE_ANY)), 0);
    assert_int_equal(try_join(f, 2, join("locked", PROTO_ROLE_PLAYER, PROTO_MODE_RTS)),
                     PROTO_E_BAD_ROOM); /* it is a sandbox room */
    struct proto_command big = join("big", PROTO_ROLE_PLAYER, PROTO_MODE_ANY);
    big.args.join.has_boids = 1;
    big.args.join.boids = f->cfg.max_room_boids + 1;
    assert_int_equal(try_join(f, 2, big), PROTO_E_OUT_OF_RANGE);
    assert_int_equal(try_join(f, 2, join("third", PROTO_ROLE_PLAYER, PROTO_MODE_ANY)), 0);
    assert_int_equal(lobby_count(f->lobby), 3); /* max-rooms */
    assert_int_equal(try_join(f, 3, join("fourth", PROTO_ROLE_PLAYER, PROTO_MODE_ANY)),
                     PROTO_E_BAD_ROOM);
    assert_int_equal(lobby_count(f->lobby), 3);
}

/* The rejoin token the room acked to `client`'s join: waits (up to 5 s of
 * real time) for the room's tick to answer it. */
static int rejoin_token(struct lobby_room *lr, uint64_t client, char *out, size_t cap)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    for (;;) {
        if (sem_timedwait(&room_news, &until) != 0) {
            if (errno == EINTR)
                continue;
            return -1; /* no answer within 5 s */
        }
        int found = -1;
        struct room_reply *rep = room_take_replies(lobby_room_room(lr));
        while (rep) {
            struct room_reply *next = rep->next;
            const char *t = strstr(rep->text, "\"rejoin\":\"");
            if (found < 0 && rep->client == client && t) {
                snprintf(out, cap, "%.32s", t + 10);
                found = 0;
            }
            free(rep);
            rep = next;
        }
        if (found == 0)
            return 0;
    }
}

static void rts_teams_rejoin_within_grace_and_end_after_it(void **state)
{
    struct fixture *f = *state;
    start(f);
    assert_int_equal(try_join(f, 0, join("war", PROTO_ROLE_PLAYER, PROTO_MODE_RTS)), 0);
    assert_int_equal(try_join(f, 1, join("war", PROTO_ROLE_PLAYER, PROTO_MODE_ANY)), 0);
    assert_int_equal(f->m[0].team, 1);
    assert_int_equal(f->m[1].team, 2);
    assert_int_equal(try_join(f, 2, join("war", PROTO_ROLE_PLAYER, PROTO_MODE_ANY)),
                     PROTO_E_BAD_ROOM); /* max-teams 2 */
    uint64_t owner = f->m[0].owner;
    char roster[4096];
    assert_true(lobby_room_roster(f->m[0].room, roster, sizeof roster) > 0);
    assert_non_null(strstr(roster, "\"team\":2,\"connected\":true"));

    /* Player 0 leaves; its team waits; a stranger cannot take it. */
    struct lobby_room *war = f->m[0].room;
    lobby_leave(f->lobby, &f->m[0], false, f->now);
    assert_true(lobby_room_roster(war, roster, sizeof roster) > 0);
    assert_non_null(strstr(roster, "\"client\":0,\"name\":\"\",\"role\":\"player\",\"team\":1,"
                                   "\"connected\":false"));
    struct proto_command wrong = join("war", PROTO_ROLE_PLAYER, PROTO_MODE_ANY);
    wrong.args.join.has_rejoin = 1;
    snprintf(wrong.args.join.rejoin, sizeof wrong.args.join.rejoin,
             "00000000000000000000000000000000");
    assert_int_equal(try_join(f, 2, wrong), PROTO_E_BAD_ROOM); /* team 1 still waits */
    assert_int_equal(f->m[2].room, lobby_at(f->lobby, 0));     /* refused: still in default */

    /* The right token, from player 0's join ack, takes the team back. */
    char token[64];
    assert_int_equal(rejoin_token(war, 1, token, sizeof token), 0);
    struct proto_command back = join("war", PROTO_ROLE_PLAYER, PROTO_MODE_ANY);
    back.args.join.has_rejoin = 1;
    snprintf(back.args.join.rejoin, sizeof back.args.join.rejoin, "%s", token);
    assert_int_equal(try_join(f, 2, back), 0);
    assert_int_equal(f->m[2].team, 1);
    assert_int_equal(f->m[2].owner, owner); /* its obstacles are still its own */

    /* Gone again, for longer than the grace period: the team is free. */
    lobby_leave(f->lobby, &f->m[2], false, f->now);
    f->now += 300 * MS;
    lobby_housekeep(f->lobby, f->now);
    assert_true(lobby_room_roster(war, roster, sizeof roster) > 0);
    assert_null(strstr(roster, "\"team\":1"));
    assert_int_equal(try_join(f, 2, back), 0); /* the old token: a new team */
    assert_int_equal(f->m[2].team, 1);
    assert_int_not_equal(f->m[2].owner, owner);
}

struct kick_seen {
    int calls;
    unsigned thread;
    uint64_t client;
    enum lobby_eviction why;
};

static void record_kick(void *arg, unsigned thread, uint64_t client, enum lobby_eviction why)
{
    struct kick_seen *k = arg;
    k->calls++;
    k->thread = thread;
    k->client = client;
    k->why = why;
}

/* A join that creates an rts room shapes its world and teams; what the
 * server does not allow is refused and creates nothing. */
static void a_created_rts_room_is_shaped_as_its_join_says(void **state)
{
    struct fixture *f = *state;
    start(f);
    struct proto_command c = join("war", PROTO_ROLE_PLAYER, PROTO_MODE_RTS);
    c.args.join.has_teams = 1;
    c.args.join.teams = 3; /* cfg.max_teams is 2 */
    assert_int_equal(try_join(f, 0, c), PROTO_E_OUT_OF_RANGE);
    c.args.join.teams = 2;
    c.args.join.has_units = 1;
    c.args.join.units = f->cfg.team_cap + 1;
    assert_int_equal(try_join(f, 0, c), PROTO_E_OUT_OF_RANGE);
    struct proto_command sandbox = join("lab", PROTO_ROLE_PLAYER, PROTO_MODE_SANDBOX);
    sandbox.args.join.has_units = 1;
    assert_int_equal(try_join(f, 0, sandbox), PROTO_E_BAD_ARG);
    assert_int_equal(lobby_count(f->lobby), 1); /* nothing was created */
    c.args.join.units = 7;
    c.args.join.has_width = c.args.join.has_height = 1;
    c.args.join.width = 900.0f;
    c.args.join.height = 600.0f;
    assert_int_equal(try_join(f, 0, c), 0);
    struct room_info info;
    room_info(lobby_room_room(f->m[0].room), &info);
    assert_true(info.width == 900.0f && info.height == 600.0f && !info.wrap);
    struct lobby_room_summary sum;
    lobby_room_summary(f->m[0].room, &sum);
    assert_true(sum.max_teams == 2 && sum.team_units == 7 && sum.teams == 1);
    /* By default: a world for its units (2 teams of 5: the smallest) that
     * contains them. */
    assert_int_equal(try_join(f, 1, join("plain", PROTO_ROLE_VIEWER, PROTO_MODE_RTS)), 0);
    room_info(lobby_room_room(f->m[1].room), &info);
    assert_true(info.width == 1600.0f && info.height == 1000.0f && !info.wrap);
}

/* A rejoin token takes its team from the connection that still plays it:
 * on the joiner's thread at once (*replaced), on another through its
 * thread; the team stays the new connection's either way. */
static void a_rejoin_takes_over_a_team_another_connection_still_plays(void **state)
{
    struct fixture *f = *state;
    start(f);
    struct kick_seen seen = {0};
    lobby_set_threads(f->lobby, 2, record_kick, &seen);
    assert_int_equal(try_join(f, 0, join("war", PROTO_ROLE_PLAYER, PROTO_MODE_RTS)), 0);
    struct lobby_room *war = f->m[0].room;
    struct teams *ts = lobby_room_teams(war);
    struct proto_command back = join("war", PROTO_ROLE_PLAYER, PROTO_MODE_ANY);
    back.args.join.has_rejoin = 1;
    snprintf(back.args.join.rejoin, sizeof back.args.join.rejoin, "%s", ts->slot[1].rejoin);
    uint64_t owner = f->m[0].owner;
    assert_int_equal(try_join(f, 1, back), 0);
    assert_ptr_equal(f->replaced, &f->m[0]);
    assert_int_equal(f->m[0].evicted, LOBBY_REPLACED);
    assert_null(f->m[0].room);
    assert_int_equal(f->m[1].team, 1);
    assert_int_equal(f->m[1].owner, owner);
    assert_true(ts->slot[1].state == TEAM_PLAYING && ts->slot[1].player == &f->m[1]);
    lobby_leave(f->lobby, &f->m[0], false, f->now); /* its connection closes: nothing */
    assert_true(ts->slot[1].state == TEAM_PLAYING);

    /* From another service thread: the old connection's thread is asked. */
    lobby_leave(f->lobby, &f->m[2], false, f->now);
    f->m[2].thread = 1;
    lobby_enter(f->lobby, &f->m[2]);
    snprintf(back.args.join.rejoin, sizeof back.args.join.rejoin, "%s", ts->slot[1].rejoin);
    assert_int_equal(try_join(f, 2, back), 0);
    assert_null(f->replaced);
    assert_true(seen.calls == 1 && seen.thread == 0 && seen.client == f->m[1].client);
    assert_int_equal(seen.why, LOBBY_REPLACED);
    assert_true(ts->slot[1].player == &f->m[2] && f->m[2].team == 1);
    lobby_leave(f->lobby, &f->m[1], true, f->now); /* as thread 0 does: the team stays */
    assert_true(ts->slot[1].state == TEAM_PLAYING && ts->slot[1].player == &f->m[2]);
    lobby_leave(f->lobby, &f->m[2], false, f->now);
    assert_true(ts->slot[1].state == TEAM_WAITING);
}

/* Grace periods run on the time the lobby is given, to the nanosecond. */
static void a_team_waits_exactly_its_grace_period(void **state)
{
    struct fixture *f = *state;
    start(f);
    assert_int_equal(try_join(f, 0, join("war", PROTO_ROLE_PLAYER, PROTO_MODE_RTS)), 0);
    /* A viewer stays, so the room does not expire when the team ends. */
    assert_int_equal(try_join(f, 1, join("war", PROTO_ROLE_VIEWER, PROTO_MODE_ANY)), 0);
    struct lobby_room *war = f->m[0].room;
    char roster[4096];
    lobby_leave(f->lobby, &f->m[0], false, f->now);
    int64_t grace_end = f->now + 200 * MS; /* cfg.grace = 0.2 */
    lobby_housekeep(f->lobby, grace_end - 1);
    assert_true(lobby_room_roster(war, roster, sizeof roster) > 0);
    assert_non_null(strstr(roster, "\"team\":1,\"connected\":false"));
    lobby_housekeep(f->lobby, grace_end);
    assert_true(lobby_room_roster(war, roster, sizeof roster) > 0);
    assert_null(strstr(roster, "\"team\":1"));
}

/* lobby_submit: the role decides, a kick takes its target out of the room
 * at once (the caller closes its connection), and the kick is queued. */
static void a_kick_takes_its_target_out_of_the_room(void **state)
{
    struct fixture *f = *state;
    start(f); /* loopback without a token: everyone starts as admin */
    assert_int_equal(try_join(f, 1, join("default", PROTO_ROLE_PLAYER, PROTO_MODE_ANY)), 0);
    struct proto_command kick = {.kind = PROTO_CMD_KICK};
    struct lobby_member *kicked = NULL;
    const char *why = NULL;
    kick.args.kick.client = f->m[2].client;
    assert_int_equal(lobby_submit(f->lobby, &f->m[1], &kick, f->now, &kicked, &why),
                     PROTO_E_FORBIDDEN); /* players may not kick */
    assert_null(kicked);
    assert_non_null(f->m[2].room);
    kick.args.kick.client = f->m[0].client;
    assert_int_equal(lobby_submit(f->lobby, &f->m[0], &kick, f->now, &kicked, &why),
                     PROTO_E_BAD_ARG); /* not itself */
    kick.args.kick.client = 999;
    assert_int_equal(lobby_submit(f->lobby, &f->m[0], &kick, f->now, &kicked, &why),
                     PROTO_E_NOT_FOUND);
    assert_null(kicked);
    kick.args.kick.client = f->m[2].client;
    assert_int_equal(lobby_submit(f->lobby, &f->m[0], &kick, f->now, &kicked, &why), 0);
    assert_ptr_equal(kicked, &f->m[2]);
    assert_null(f->m[2].room);
    /* Someone in another room cannot be kicked from here. */
    assert_int_equal(try_join(f, 3, join("elsewhere", PROTO_ROLE_VIEWER, PROTO_MODE_ANY)), 0);
    kick.args.kick.client = f->m[3].client;
    assert_int_equal(lobby_submit(f->lobby, &f->m[0], &kick, f->now, &kicked, &why),
                     PROTO_E_NOT_FOUND);
    assert_non_null(f->m[3].room);
}

static void empty_rooms_expire_but_the_default_room_stays(void **state)
{
    struct fixture *f = *state;
    start(f);
    assert_int_equal(try_join(f, 0, join("brief", PROTO_ROLE_VIEWER, PROTO_MODE_ANY)), 0);
    assert_int_equal(lobby_count(f->lobby), 2);
    lobby_housekeep(f->lobby, f->now);
    assert_int_equal(lobby_count(f->lobby), 2); /* has a member */
    assert_int_equal(try_join(f, 0, join("default", PROTO_ROLE_VIEWER, PROTO_MODE_ANY)), 0);
    lobby_housekeep(f->lobby, f->now);
    assert_int_equal(lobby_count(f->lobby), 2); /* empty, not yet expired */
    f->now += 300 * MS;
    for (int i = 0; i < 4; i++) /* the default room is empty too now */
        lobby_leave(f->lobby, &f->m[i], false, f->now);
    lobby_housekeep(f->lobby, f->now);
    assert_int_equal(lobby_count(f->lobby), 1);
    for (int i = 0; i < 4; i++)
        lobby_enter(f->lobby, &f->m[i]);
}

static struct lobby_room *room_of(struct fixture *f, unsigned thread, const char *name)
{
    struct lobby_room *const *rooms;
    size_t n = lobby_rooms_of(f->lobby, thread, &rooms);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(lobby_room_name(rooms[i]), name))
            return rooms[i];
    return NULL;
}

static bool has_room(struct fixture *f, unsigned thread, const char *name)
{
    return room_of(f, thread, name) != NULL;
}

/* Which of f->m the array of room `name`'s members of `thread` holds (a
 * bit each, checked against its list); -1 if the thread has no member
 * there. */
static int roll_of(struct fixture *f, unsigned thread, const char *name)
{
    struct lobby_room *lr = room_of(f, thread, name);
    if (!lr)
        return -1;
    size_t n;
    struct lobby_member *const *roll = lobby_room_roll(lr, thread, &n);
    assert_non_null(roll);
    int bits = 0, listed = 0;
    for (size_t k = 0; k < n; k++)
        bits |= 1 << (roll[k] - f->m);
    for (const struct lobby_member *m = lobby_room_members(lr, thread); m; m = m->next, n--)
        listed |= 1 << (m - f->m);
    assert_int_equal(n, 0);
    assert_int_equal(bits, listed);
    return bits;
}

static void
each_thread_knows_its_rooms_and_a_kick_across_threads_goes_to_the_victims_thread(void **state)
{
    struct fixture *f = *state;
    start(f);
    struct kick_seen seen = {0};
    lobby_set_threads(f->lobby, 2, record_kick, &seen);
    for (int i = 2; i < 4; i++) { /* m[2], m[3] come through thread 1 */
        lobby_leave(f->lobby, &f->m[i], false, f->now);
        f->m[i].thread = 1;
        lobby_enter(f->lobby, &f->m[i]);
    }
    struct lobby_room *const *rooms;
    assert_int_equal(lobby_rooms_of(f->lobby, 1, &rooms), 1);
    assert_true(has_room(f, 1, "default"));
    /* Each thread's members of a room, as an array too (kept up). */
    assert_int_equal(roll_of(f, 0, "default"), 0x3);
    assert_int_equal(roll_of(f, 1, "default"), 0xc);
    assert_int_equal(try_join(f, 3, join("r", PROTO_ROLE_PLAYER, PROTO_MODE_SANDBOX)), 0);
    assert_true(has_room(f, 1, "r") && has_room(f, 1, "default"));
    assert_false(has_room(f, 0, "r"));
    assert_int_equal(roll_of(f, 1, "default"), 0x4);
    assert_int_equal(roll_of(f, 1, "r"), 0x8);
    lobby_leave(f->lobby, &f->m[2], false, f->now);
    assert_false(has_room(f, 1, "default")); /* its last member there left */
    assert_true(has_room(f, 0, "default"));
    assert_int_equal(roll_of(f, 0, "default"), 0x3);
    assert_int_equal(try_join(f, 0, join("r", PROTO_ROLE_ADMIN, PROTO_MODE_SANDBOX)), 0);
    assert_int_equal(try_join(f, 1, join("r", PROTO_ROLE_PLAYER, PROTO_MODE_SANDBOX)), 0);
    struct proto_command kick = {.kind = PROTO_CMD_KICK};
    kick.args.kick.client = f->m[3].client;
    struct lobby_member *kicked = NULL;
    const char *why = NULL;
    assert_int_equal(lobby_submit(f->lobby, &f->m[0], &kick, f->now, &kicked, &why), 0);
    assert_null(kicked); /* thread 1 takes it out */
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.thread, 1);
    assert_int_equal(seen.client, f->m[3].client);
    assert_non_null(f->m[3].room);
    kick.args.kick.client = f->m[1].client; /* the kicker's own thread: at once */
    assert_int_equal(lobby_submit(f->lobby, &f->m[0], &kick, f->now, &kicked, &why), 0);
    assert_ptr_equal(kicked, &f->m[1]);
    assert_null(f->m[1].room);
    assert_int_equal(seen.calls, 1);
    lobby_leave(f->lobby, &f->m[3], true, f->now); /* as thread 1 does */
    assert_false(has_room(f, 1, "r"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_created_rts_room_is_shaped_as_its_join_says, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_rejoin_takes_over_a_team_another_connection_still_plays,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            each_thread_knows_its_rooms_and_a_kick_across_threads_goes_to_the_victims_thread, setup,
            teardown),
        cmocka_unit_test_setup_teardown(loopback_is_admin_without_a_token, setup, teardown),
        cmocka_unit_test_setup_teardown(a_token_makes_admins_and_nobody_else, setup, teardown),
        cmocka_unit_test_setup_teardown(the_permission_matrix, setup, teardown),
        cmocka_unit_test_setup_teardown(room_creation_limits_modes_and_passwords, setup, teardown),
        cmocka_unit_test_setup_teardown(rts_teams_rejoin_within_grace_and_end_after_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_team_waits_exactly_its_grace_period, setup, teardown),
        cmocka_unit_test_setup_teardown(a_kick_takes_its_target_out_of_the_room, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_rooms_expire_but_the_default_room_stays, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
