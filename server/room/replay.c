/*
 * replay.c — playing a command log back (see replay.h).
 *
 * replay_open() reads the log once into an index: each record's offset,
 * type, tick and the step count at which it plays (the steps between two
 * records are the difference of their ticks; a reset sets the tick to 0, a
 * BEGIN to its state's tick). Playing decodes one record at a time from
 * its offset again, so the index stays small however many commands the
 * log holds.
 */
#include "replay.h"

#include "script.h"

#include "apply.h"
#include "proto.h"
#include "reclog.h"
#include "sim_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_EVERY 300 /* steps between kept states at first */

struct entry {
    size_t offset;
    enum reclog_type type;
    uint64_t tick;             /* BEGIN: its state's tick */
    uint64_t step;             /* steps taken when it plays */
    bool reset;                /* a reset command: the tick is 0 after it */
    uint32_t seq;              /* CHECKPOINT; BEGIN: the checkpoint it carries on from */
    enum reclog_reason reason; /* BEGIN: fresh, restored from a checkpoint, resumed */
    bool played;               /* CHECKPOINT: `hash` holds the state it was taken from */
    uint64_t hash;
};

/* A state kept for seeking: the world right after step `step`. */
struct kept {
    uint64_t step;
    size_t cursor; /* the next entry to play */
    enum proto_mode mode;
    uint8_t *state;
    size_t len;
};

struct replay {
    uint8_t *buf;
    size_t len;
    struct entry *e;
    size_t n;
    bool torn, verify, one_world;
    uint64_t first_tick, last_tick; /* the lowest and highest tick of the log */
    const char **builds;            /* per segment, pointing into a copy each */
    size_t nbuilds;
    struct ckpt first;
    struct reclog_record rec; /* scratch: large */

    struct sim_world *world;
    enum proto_mode mode;
    struct script *script; /* the room's script as the log last set it; NULL: none */
    bool paused;           /* the room's pause and steps still to run, as played */
    uint32_t steps_pending;
    bool scripted; /* a script ran: seeking back starts from the log's start */
    double tick_hz;
    uint32_t max_teams;
    size_t cursor;
    uint64_t steps, verified;
    bool diverged;
    uint64_t div_tick;
    const char *div_why;

    struct kept kept[REPLAY_KEPT];
    size_t nkept, max_kept;
    uint64_t keep_every;
};

/* ---- reading the log ---------------------------------------------------------- */

/* The record at offset into rp->rec (it was read once already). */
static int record_at(struct replay *rp, size_t offset, const char **why)
{
    struct reclog_reader rd = {.buf = rp->buf, .len = rp->len, .at = offset};
    int rc = reclog_next(&rd, &rp->rec, why);
    return rc == 1 ? 0 : rc < 0 ? rc : PROTO_E_TRUNCATED;
}

static int same_config(const struct sim_config *a, const struct sim_config *b)
{
    return a->width == b->width && a->height == b->height && a->dt == b->dt &&
           a->capacity == b->capacity && a->max_obstacles == b->max_obstacles &&
           a->edges == b->edges && a->edge_margin == b->edge_margin && a->seed == b->seed;
}

/* A BEGIN's checkpoint, checked whole, into the entry and the segment list. */
static int index_begin(struct replay *rp, struct entry *e, const char **why)
{
    struct ckpt ck;
    int rc = ckpt_decode(rp->rec.state, rp->rec.state_len, &ck, why);
    if (rc < 0)
        return rc;
    struct sim_state_info info;
    sim_state_check(ck.world, ck.world_len, &info, NULL);
    e->tick = info.tick;
    e->seq = ck.seq;
    e->reason = rp->rec.reason;
    const char **grown = realloc(rp->builds, (rp->nbuilds + 1) * sizeof *grown);
    if (grown)
        rp->builds = grown;
    char *copy = grown ? malloc(strlen(rp->rec.build) + 1) : NULL;
    if (!copy) {
        *why = "out of memory";
        return PROTO_E_INTERNAL;
    }
    strcpy(copy, rp->rec.build);
    rp->builds[rp->nbuilds++] = copy;
    if (rp->nbuilds == 1) {
        rp->first = ck;
    } else {
        struct sim_state_info first;
        sim_state_check(rp->first.world, rp->first.world_len, &first, NULL);
        rp->one_world = rp->one_world && same_config(&first.cfg, &info.cfg);
    }
    return 0;
}

/* Steps and ticks of entry e, after the entries before it (*tick: the
 * room's tick as the previous entry left it). */
static int index_steps(struct entry *e, uint64_t *tick, uint64_t *step, const char **why)
{
    if (e->type == RECLOG_BEGIN) { /* resumed: the world steps on to its tick first */
        if (e->reason == RECLOG_RESUMED && e->tick > *tick)
            *step += e->tick - *tick;
        e->step = *step;
        *tick = e->tick;
        return 0;
    }
    if (e->tick < *tick && e->type == RECLOG_RESUME) {
        /* The old owner logged past the last frame its taker saw: the
         * taker stepped nothing, and neither does a replay. */
        e->step = *step;
        return 0;
    }
    if (e->tick < *tick) {
        *why = "a record's tick is behind the room's";
        return PROTO_E_BAD_VALUE;
    }
    *step += e->tick - *tick;
    e->step = *step;
    *tick = e->reset ? 0 : e->tick;
    return 0;
}

/* Every record of the log into rp->e. */
static int index_log(struct replay *rp, size_t *at, const char **why)
{
    struct reclog_reader rd;
    int rc = reclog_reader_init(&rd, rp->buf, rp->len, why);
    size_t cap = 0;
    uint64_t tick = 0, step = 0;
    while (rc == 0 && (rc = reclog_next(&rd, &rp->rec, why)) == 1) {
        *at = rp->rec.offset;
        if (rp->n == cap) {
            cap = cap ? 2 * cap : 256;
            struct entry *grown = realloc(rp->e, cap * sizeof *grown);
            if (!grown) {
                *why = "out of memory";
                return PROTO_E_INTERNAL;
            }
            rp->e = grown;
        }
        struct entry *e = &rp->e[rp->n];
        *e = (struct entry){.offset = rp->rec.offset, .type = rp->rec.type, .tick = rp->rec.tick};
        e->reset = e->type == RECLOG_COMMAND && rp->rec.cmd.kind == PROTO_CMD_RESET;
        e->seq = rp->rec.seq;
        if (rp->n == 0 && e->type != RECLOG_BEGIN) {
            *why = "the log does not start with a BEGIN record";
            return PROTO_E_BAD_VALUE;
        }
        rc = e->type == RECLOG_BEGIN ? index_begin(rp, e, why) : 0;
        if (rc == 0)
            rc = index_steps(e, &tick, &step, why);
        rp->first_tick = rp->n == 0 || tick < rp->first_tick ? tick : rp->first_tick;
        rp->last_tick = e->tick > rp->last_tick ? e->tick : rp->last_tick;
        rp->n++;
    }
    *at = rd.at;
    rp->torn = rd.torn;
    if (rc == 0 && rp->n == 0) {
        *why = "the log holds no record";
        rc = PROTO_E_TRUNCATED;
    }
    return rc;
}

struct replay *replay_open(uint8_t *buf, size_t len, char *why, size_t n)
{
    struct replay *rp = calloc(1, sizeof *rp);
    if (!rp) {
        snprintf(why, n, "out of memory");
        free(buf);
        return NULL;
    }
    rp->buf = buf;
    rp->len = len;
    rp->one_world = true;
    rp->keep_every = KEEP_EVERY;
    const char *reason = NULL;
    size_t at = 0;
    if (index_log(rp, &at, &reason) < 0) {
        snprintf(why, n, "%s (the record at byte %zu)", reason, at);
        replay_destroy(rp);
        return NULL;
    }
    struct sim_state_info info;
    sim_state_check(rp->first.world, rp->first.world_len, &info, NULL);
    size_t state = sim_state_max_size(info.cfg.capacity, info.cfg.max_obstacles);
    rp->max_kept = REPLAY_KEPT_MAX / state;
    rp->max_kept = rp->max_kept > REPLAY_KEPT ? REPLAY_KEPT : rp->max_kept < 2 ? 2 : rp->max_kept;
    return rp;
}

void replay_destroy(struct replay *rp)
{
    if (!rp)
        return;
    for (size_t i = 0; i < rp->nkept; i++)
        free(rp->kept[i].state);
    for (size_t i = 0; i < rp->nbuilds; i++)
        free((char *)rp->builds[i]);
    free(rp->builds);
    script_destroy(rp->script);
    sim_destroy(rp->world);
    free(rp->e);
    free(rp->buf);
    free(rp);
}

size_t replay_segments(const struct replay *rp)
{
    return rp->nbuilds;
}

const char *replay_build(const struct replay *rp, size_t segment)
{
    return segment < rp->nbuilds ? rp->builds[segment] : NULL;
}

bool replay_is_torn(const struct replay *rp)
{
    return rp->torn;
}

bool replay_is_one_world(const struct replay *rp)
{
    return rp->one_world;
}

const struct ckpt *replay_first(const struct replay *rp)
{
    return &rp->first;
}

void replay_tick_range(const struct replay *rp, uint64_t *first, uint64_t *last)
{
    *first = rp->first_tick;
    *last = rp->last_tick;
}

void replay_set_verify(struct replay *rp, bool verify)
{
    rp->verify = verify;
}

struct sim_world *replay_world(const struct replay *rp)
{
    return rp->world;
}

uint64_t replay_steps(const struct replay *rp)
{
    return rp->steps;
}

uint64_t replay_verified(const struct replay *rp)
{
    return rp->verified;
}

bool replay_divergence(const struct replay *rp, uint64_t *tick, const char **why)
{
    if (rp->diverged) {
        *tick = rp->div_tick;
        *why = rp->div_why;
    }
    return rp->diverged;
}

/* ---- playing ----------------------------------------------------------------- */

static uint64_t tick_now(const struct replay *rp)
{
    struct sim_view v;
    sim_view(rp->world, &v);
    return v.tick;
}

static int diverge(struct replay *rp, int code, const char *why)
{
    rp->diverged = true;
    rp->div_tick = rp->world ? tick_now(rp) : 0;
    rp->div_why = why;
    return code;
}

/* A verified hash, or the divergence. */
static int compare(struct replay *rp, uint64_t recorded, const char *what)
{
    if (!rp->verify)
        return 0;
    if (sim_hash(rp->world) != recorded)
        return diverge(rp, PROTO_E_HASH_MISMATCH, what);
    rp->verified++;
    return 0;
}

static int make_script(struct replay *rp, const char *name, const char *text, size_t len,
                       const uint8_t *saved, size_t saved_len);

/* The room's state a checkpoint holds: into the world (a new one if its
 * config differs), with its script, pause and rates. */
static int load(struct replay *rp, const struct ckpt *ck)
{
    const char *why = NULL;
    if (!rp->world || sim_state_decode(rp->world, ck->world, ck->world_len, NULL) < 0) {
        sim_destroy(rp->world);
        rp->world = sim_state_create(ck->world, ck->world_len, &why);
        if (!rp->world)
            return diverge(rp, PROTO_E_BAD_VALUE, why);
    }
    rp->mode = ck->mode;
    rp->tick_hz = ck->tick_hz;
    rp->max_teams = ck->max_teams;
    rp->paused = ck->paused;
    rp->steps_pending = ck->steps_pending;
    script_destroy(rp->script);
    rp->script = NULL;
    if (!ck->script[0])
        return 0;
    return make_script(rp, ck->script, ck->script_text, ck->script_len,
                       ck->script_state_len ? ck->script_state : NULL, ck->script_state_len);
}

/* One tick of the room with no command: the rules' turn, then the step
 * (a paused room only steps what a `step` left to run). */
static void step_once(struct replay *rp)
{
    if (rp->script) /* the rules' turn before the step, as in the room */
        script_tick(rp->script);
    sim_step(rp->world);
    rp->steps++;
    if (rp->paused && rp->steps_pending > 0)
        rp->steps_pending--;
}

static bool is_ticking(const struct replay *rp)
{
    return !rp->paused || rp->steps_pending > 0;
}

/* A resumed BEGIN: the world the records before it reached, stepped on to
 * its tick, must be its state. */
static int compare_resumed(struct replay *rp, const struct ckpt *ck)
{
    struct sim_state_info info;
    sim_state_check(ck->world, ck->world_len, &info, NULL);
    while (rp->world && tick_now(rp) < info.tick && is_ticking(rp))
        step_once(rp);
    if (!rp->world || tick_now(rp) != info.tick)
        return 0; /* no earlier state to compare with */
    uint64_t reached = sim_hash(rp->world);
    int rc = load(rp, ck);
    return rc < 0 ? rc
                  : compare(rp, reached,
                            "the resumed state differs from the one the records before reach");
}

/* The room's state a BEGIN carries; a restore is compared with the
 * checkpoint it names, a resume with the state the log reached. */
static int play_begin(struct replay *rp, size_t i)
{
    const char *why = NULL;
    struct ckpt ck;
    if (record_at(rp, rp->e[i].offset, &why) < 0 ||
        ckpt_decode(rp->rec.state, rp->rec.state_len, &ck, &why) < 0)
        return diverge(rp, PROTO_E_BAD_VALUE, why);
    if (rp->e[i].reason == RECLOG_RESUMED)
        return compare_resumed(rp, &ck);
    int rc = load(rp, &ck);
    if (rc < 0 || rp->e[i].reason != RECLOG_RESTORED)
        return rc;
    for (size_t k = i; k-- > 0;)
        if (rp->e[k].type == RECLOG_CHECKPOINT && rp->e[k].seq == ck.seq && rp->e[k].played)
            return compare(rp, rp->e[k].hash,
                           "the restored checkpoint differs from the state the log reached there");
    return 0; /* taken outside this log: nothing to compare with */
}

/* The room's script from its text and saved state (NULL: it starts), as
 * the room made it; on its world, publishing nowhere. */
static int make_script(struct replay *rp, const char *name, const char *text, size_t len,
                       const uint8_t *saved, size_t saved_len)
{
    struct script_source src = {0};
    char why[SCRIPT_REASON_MAX] = "a bad script name";
    struct script *s = NULL;
    if (script_source_set(&src, name, text, len) == 0) {
        struct script_env env = {.world = rp->world,
                                 .seed = sim_config(rp->world)->seed,
                                 .tick_hz = rp->tick_hz,
                                 .max_teams = rp->mode == PROTO_MODE_RTS ? (int)rp->max_teams : 0,
                                 .room = "replay"};
        s = script_create(&src, &env, NULL, saved, saved_len, why);
        if (s && !saved)
            script_start(s);
    }
    script_source_free(&src);
    if (!s)
        return diverge(rp, PROTO_E_BAD_VALUE, "the room's script does not load here");
    script_destroy(rp->script);
    rp->script = s;
    rp->scripted = true;
    return 0;
}

/* A SCRIPT record: the new version takes the old one's state, as the
 * room's reload did. */
static int swap_script(struct replay *rp, const struct reclog_record *rec)
{
    uint8_t *saved = NULL;
    char why[SCRIPT_REASON_MAX];
    int n = rp->script ? script_save(rp->script, &saved, why) : 0;
    if (rp->script)
        script_end(rp->script);
    int rc = make_script(rp, rec->script_name, rec->script, rec->script_len, n > 0 ? saved : NULL,
                         n > 0 ? (size_t)n : 0);
    free(saved);
    return rc;
}

/* A game command, to the script as the room handed it (its answer
 * does not matter: the room logged it either way). */
static int play_game(struct replay *rp, const struct proto_game_args *g)
{
    if (!rp->script)
        return diverge(rp, PROTO_E_BAD_VALUE, "a game command in a room without a script");
    struct script_player p = {.id = g->player, .role = g->role, .team = g->team, .name = g->text};
    char why[SCRIPT_REASON_MAX];
    if (g->event == PROTO_GAME_COMMAND) {
        p.name = "";
        script_command(rp->script, &p, g->text, strlen(g->text), why);
    } else {
        script_player_event(rp->script, g->event == PROTO_GAME_JOIN ? SCRIPT_JOIN : SCRIPT_LEAVE,
                            &p);
    }
    return 0;
}

/* A command, to the world as the room applied it (apply.h). */
static int apply(struct replay *rp, const struct reclog_record *rec)
{
    if (rec->cmd.kind == PROTO_CMD_GAME)
        return play_game(rp, &rec->cmd.args.game);
    if (rec->cmd.kind == PROTO_CMD_PAUSE || rec->cmd.kind == PROTO_CMD_RESUME ||
        rec->cmd.kind == PROTO_CMD_STEP) { /* as the room's handlers (room_apply.c) */
        rp->paused = rec->cmd.kind != PROTO_CMD_RESUME;
        rp->steps_pending = rec->cmd.kind == PROTO_CMD_STEP ? rec->cmd.args.step.n : 0;
    }
    int64_t rc = apply_command(rp->world, rp->mode, &rec->cmd);
    if (rc < 0)
        return diverge(rp, PROTO_E_BAD_VALUE, "the world refuses a command the room applied");
    if (rec->cmd.kind == PROTO_CMD_OBSTACLE_ADD && rc != rec->obstacle)
        return diverge(rp, PROTO_E_BAD_VALUE, "obstacle_add gave another id than the room's");
    return 0;
}

/* One record at the world's tick. */
static int play(struct replay *rp, size_t i)
{
    struct entry *e = &rp->e[i];
    const char *why = NULL;
    if (e->type == RECLOG_CHECKPOINT) {
        e->hash = sim_hash(rp->world);
        e->played = true;
        return 0;
    }
    if (record_at(rp, e->offset, &why) < 0)
        return diverge(rp, PROTO_E_BAD_VALUE, why);
    if (e->type == RECLOG_COMMAND)
        return apply(rp, &rp->rec);
    if (e->type == RECLOG_SCRIPT)
        return swap_script(rp, &rp->rec);
    if (e->type == RECLOG_RESUME) /* the world was stepped on to its tick: nothing more */
        return 0;
    return compare(rp, rp->rec.hash,
                   e->type == RECLOG_END ? "the final hash differs" : "a recorded hash differs");
}

/* Keeps the state right after this step if it is time to (seeking). */
static void keep(struct replay *rp)
{
    if (rp->steps % rp->keep_every || (rp->nkept && rp->kept[rp->nkept - 1].step >= rp->steps))
        return;
    if (rp->nkept == rp->max_kept) { /* thin out: every other one goes, spacing doubles */
        size_t out = 0;
        for (size_t i = 0; i < rp->nkept; i++) {
            if (i % 2 == 0)
                rp->kept[out++] = rp->kept[i];
            else
                free(rp->kept[i].state);
        }
        rp->nkept = out;
        rp->keep_every *= 2;
        if (rp->steps % rp->keep_every)
            return;
    }
    size_t len = sim_state_size(rp->world);
    uint8_t *state = malloc(len);
    if (!state)
        return;
    sim_state_encode(rp->world, state, len);
    rp->kept[rp->nkept++] = (struct kept){
        .step = rp->steps, .cursor = rp->cursor, .mode = rp->mode, .state = state, .len = len};
}

int replay_advance(struct replay *rp, uint64_t until)
{
    if (rp->diverged)
        return PROTO_E_BAD_VALUE;
    while (rp->cursor < rp->n) {
        const struct entry *e = &rp->e[rp->cursor];
        int rc = 0;
        if (e->type == RECLOG_BEGIN) {
            rc = play_begin(rp, rp->cursor);
        } else if (e->tick > tick_now(rp)) {
            if (tick_now(rp) >= until)
                return 0;
            step_once(rp);
            keep(rp);
            return 1;
        } else if (e->type == RECLOG_COMMAND && tick_now(rp) >= until) {
            return 0;
        } else {
            rc = play(rp, rp->cursor);
        }
        if (rc < 0)
            return rc;
        rp->cursor++;
    }
    return 0;
}

/* ---- resuming ----------------------------------------------------------------- */

bool replay_is_closed(const struct replay *rp)
{
    return rp->n && rp->e[rp->n - 1].type == RECLOG_END;
}

/* The entry of the last segment's CHECKPOINT record naming c (its
 * sequence number and tick), or of its BEGIN. */
static size_t resume_point(const struct replay *rp, const struct ckpt *c)
{
    size_t b = rp->n;
    while (b > 0 && rp->e[b - 1].type != RECLOG_BEGIN)
        b--;
    b = b ? b - 1 : 0;
    struct sim_state_info info;
    if (!c || sim_state_check(c->world, c->world_len, &info, NULL) < 0)
        return b;
    size_t at = b;
    for (size_t i = b + 1; i < rp->n; i++)
        if (rp->e[i].type == RECLOG_CHECKPOINT && rp->e[i].seq == c->seq &&
            rp->e[i].tick == info.tick)
            at = i;
    return at;
}

int replay_play_on(struct replay *rp, const struct ckpt *c, uint64_t tick, struct ckpt *from,
                   uint64_t *hash_at)
{
    size_t at = resume_point(rp, c);
    const char *why = NULL;
    int rc = 0;
    if (rp->e[at].type == RECLOG_CHECKPOINT)
        *from = *c;
    else if (record_at(rp, rp->e[at].offset, &why) < 0 ||
             ckpt_decode(rp->rec.state, rp->rec.state_len, from, &why) < 0)
        return diverge(rp, PROTO_E_BAD_VALUE, why);
    rc = load(rp, from);
    if (rc < 0)
        return rc;
    rp->cursor = at + 1;
    rp->steps = rp->e[at].step;
    while ((rc = replay_advance(rp, tick)) == 1) /* to `tick`, before its commands */
        ;
    while (rc == 0 && tick_now(rp) < tick && is_ticking(rp)) /* the records end before */
        step_once(rp);
    *hash_at = rc == 0 && tick_now(rp) == tick ? sim_hash(rp->world) : 0;
    while (rc >= 0 && (rc = replay_advance(rp, UINT64_MAX)) == 1) /* the rest */
        ;
    return rc;
}

struct script *replay_script(const struct replay *rp)
{
    return rp->script;
}

void replay_pause_state(const struct replay *rp, bool *paused, uint32_t *steps_pending)
{
    *paused = rp->paused;
    *steps_pending = rp->steps_pending;
}

/* ---- seeking ------------------------------------------------------------------ */

uint64_t replay_total_steps(const struct replay *rp)
{
    return rp->n ? rp->e[rp->n - 1].step : 0;
}

int replay_step_of_tick(const struct replay *rp, uint64_t tick, uint64_t *step)
{
    uint64_t at = 0, s = 0;
    for (size_t i = 0; i < rp->n; i++) {
        const struct entry *e = &rp->e[i];
        if (e->type != RECLOG_BEGIN && tick >= at && tick <= e->tick) {
            *step = s + (tick - at);
            return 0;
        }
        s = e->step;
        at = e->type == RECLOG_BEGIN ? e->tick : e->reset ? 0 : e->tick;
        if (at == tick) {
            *step = s;
            return 0;
        }
    }
    return PROTO_E_NOT_FOUND;
}

/* Back to a kept state, or to the start of the log (k < 0). */
static int go_back(struct replay *rp, const struct kept *k)
{
    rp->diverged = false;
    if (!k) {
        rp->cursor = 0;
        rp->steps = 0;
        return 0;
    }
    rp->cursor = k->cursor;
    rp->steps = k->step;
    rp->mode = k->mode;
    /* Kept states are of the world in play: one world (replay_is_one_world) decodes in place. */
    return sim_state_decode(rp->world, k->state, k->len, NULL) < 0 ? PROTO_E_INTERNAL : 0;
}

int replay_seek(struct replay *rp, uint64_t step)
{
    if (step > replay_total_steps(rp))
        return PROTO_E_OUT_OF_RANGE;
    const struct kept *best = NULL;
    for (size_t i = 0; i < rp->nkept && !rp->scripted; i++) /* kept states hold no script */
        if (rp->kept[i].step <= step)
            best = &rp->kept[i];
    bool ahead = rp->world && !rp->diverged && rp->steps <= step;
    if (!(ahead && (!best || best->step <= rp->steps))) {
        int rc = go_back(rp, best);
        if (rc < 0)
            return rc;
    }
    int rc = 1;
    while (rp->steps < step && (rc = replay_advance(rp, UINT64_MAX)) == 1)
        ;
    while (rc >= 0 && rp->cursor < rp->n && rp->e[rp->cursor].type == RECLOG_BEGIN) {
        rc = play_begin(rp, rp->cursor); /* the state a segment starts from */
        rp->cursor += rc >= 0;
    }
    return rc < 0 ? rc : 0;
}
