/*
 * room_persist.c — a room's command log and checkpoints: what the tick
 * records, what a checkpoint copies, and how a checkpoint is restored
 * (room_persist.h; the files are store/FILES.md's).
 *
 * The tick records every command that changed the room with the tick it
 * took effect at, the tick's hash every `hash_every` ticks (after the
 * step, before the next tick's commands: the state a replay reaches at
 * that tick), a mark where each checkpoint was copied, and END when the
 * room closes. A checkpoint copies the world (sim_state_encode, a few
 * memcpy), the owners and the room's flags; the writer thread does the
 * rest.
 */
#include "room_internal.h"

#include "metrics.h"
#include "persist.h"
#include "reclog.h"
#include "recorder.h"
#include "replay.h"
#include "sim_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct room_store {
    struct persist *persist;
    struct recorder *log; /* NULL: not recording */
    uint32_t seq;         /* the last checkpoint's sequence number */
    /* The records of this batch for the cluster's command log (CLUSTER.md
     * §2.1): its commands, script reloads and checkpoint marks. */
    uint8_t *clog;
    size_t clog_len, clog_cap;
    uint32_t clog_ckpt; /* the checkpoint this batch marks; 0: none */
    bool clog_commands; /* it holds commands or a script, not only marks */
    /* That checkpoint's copy: the writer gets it once its mark is in the
     * log, so a stored checkpoint is always one the log reaches back to
     * and holds no command the log lacks (CLUSTER.md §2.1). */
    struct persist_job *held;
    /* The last ROOM_ORIGINS commands of other nodes applied (a ring). */
    struct room_origin *origins;
    size_t origin_next;
};

/* The room's store, made on first use; NULL without a persist. */
static struct room_store *store_of(struct room *r)
{
    if (!r->store && r->cfg.persist) {
        r->store = calloc(1, sizeof *r->store);
        if (r->store)
            r->store->persist = r->cfg.persist;
    }
    return r->store;
}

/* ---- copying the room ------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
    const struct ckpt_owner *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/*
 * The room now, as a checkpoint job: `id`'s identity, the room's state, a
 * copy of the owners (ascending) and of the world in the job's memory.
 * NULL if memory runs out.
 */
static struct persist_job *copy_room(struct room *r, const struct ckpt *id, uint32_t seq)
{
    size_t owners = r->nowners * sizeof(struct ckpt_owner), world = sim_state_size(r->world);
    struct script *script = room__script(r);
    const struct script_source *src = script ? script_source(script) : NULL;
    uint8_t *saved = NULL;
    char why[SCRIPT_REASON_MAX];
    int saved_len = script ? script_save(script, &saved, why) : 0;
    if (saved_len < 0) { /* its text goes alone: a restore starts it afresh */
        fprintf(stderr, "flockd: room \"%s\": its script's state is not saved: %s\n", r->name, why);
        saved_len = 0;
    }
    size_t text = src ? src->len : 0;
    struct persist_job *j = persist_job_alloc(owners + world + text + (size_t)saved_len);
    if (!j) {
        free(saved);
        return NULL;
    }
    struct ckpt_owner *o = (struct ckpt_owner *)j->mem;
    for (uint32_t k = 0; k < r->nowners; k++)
        o[k] = (struct ckpt_owner){r->owners[k].id, r->owners[k].owner};
    qsort(o, r->nowners, sizeof *o, by_id);
    sim_state_encode(r->world, j->mem + owners, world);
    j->ck = *id;
    j->ck.seq = seq;
    j->ck.tick_hz = r->cfg.tick_hz;
    j->ck.boids = r->cfg.boids;
    j->ck.paused = r->paused;
    j->ck.steps_pending = r->steps_pending;
    j->ck.owner_count = r->nowners;
    j->ck.owners = o;
    j->ck.world = j->mem + owners;
    j->ck.world_len = world;
    if (src) {
        uint8_t *at = j->mem + owners + world;
        memcpy(at, src->text, text);
        if (saved_len)
            memcpy(at + text, saved, (size_t)saved_len);
        snprintf(j->ck.script, sizeof j->ck.script, "%s", src->name);
        j->ck.script_text = (const char *)at;
        j->ck.script_len = text;
        j->ck.script_state = at + text;
        j->ck.script_state_len = (size_t)saved_len;
    }
    free(saved);
    return j;
}

static uint64_t world_tick(const struct room *r)
{
    struct sim_view v;
    sim_view(r->world, &v);
    return v.tick;
}

bool room__logs_to_cluster(struct room *r)
{
    return r->cfg.link && r->cfg.link->log && !room__is_relay(r) && store_of(r);
}

/* Adds rec[0..len) to the cluster's records of this batch. */
static void clog_add(struct room *r, const uint8_t *rec, size_t len)
{
    struct room_store *s = r->store;
    if (len > s->clog_cap - s->clog_len) {
        size_t cap = s->clog_cap ? s->clog_cap : 4096;
        while (cap - s->clog_len < len)
            cap *= 2;
        uint8_t *grown = realloc(s->clog, cap);
        if (!grown) { /* the batch cannot be stored whole: clog_flush refuses it */
            s->clog_len = SIZE_MAX;
            return;
        }
        s->clog = grown;
        s->clog_cap = cap;
    }
    memcpy(s->clog + s->clog_len, rec, len);
    s->clog_len += len;
}

/* Adds one record to the room's logs: its file, and the cluster's (all but
 * the hashes and the end). */
static void add_record(struct room *r, const uint8_t *rec, size_t len)
{
    if (r->store->log)
        recorder_add(r->store->log, rec, len);
    enum reclog_type type = rec[RECLOG_FRAME];
    if (type == RECLOG_HASH || type == RECLOG_END || !room__logs_to_cluster(r) ||
        r->store->clog_len == SIZE_MAX)
        return;
    clog_add(r, rec, len);
    r->store->clog_commands |= type != RECLOG_CHECKPOINT;
}

int room__clog_flush(struct room *r)
{
    struct room_store *s = r->store;
    const struct room_link *l = r->cfg.link;
    if (!s || s->clog_len == 0 || (!s->clog_commands && !l->can_log(l->arg, r)))
        return 0; /* nothing, or only checkpoint marks: they wait for the log */
    size_t len = s->clog_len;
    s->clog_len = 0;
    s->clog_commands = false;
    int rc = len == SIZE_MAX ? PROTO_E_INTERNAL : l->log(l->arg, r, s->clog, len, s->clog_ckpt);
    if (s->clog_ckpt && s->held && rc == 0) {
        persist_write(s->persist, s->held);
    } else if (s->clog_ckpt && s->held) {
        persist_say(s->persist,
                    "checkpoint %u of room \"%s\" not stored: its mark is not in "
                    "the command log",
                    s->clog_ckpt, r->name);
        persist_job_free(s->held);
    }
    if (s->clog_ckpt)
        s->held = NULL;
    s->clog_ckpt = 0;
    if (s->clog_cap > (1u << 20)) { /* a big batch's buffer does not stay */
        free(s->clog);
        s->clog = NULL;
        s->clog_cap = 0;
    }
    return rc;
}

/* Adds one small record, written by put into a stack buffer. */
#define RECORD(r, put, ...)                                                                        \
    do {                                                                                           \
        uint8_t rec_[RECLOG_SMALL];                                                                \
        int len_ = put(rec_, sizeof rec_, __VA_ARGS__);                                            \
        if (len_ > 0)                                                                              \
            add_record((r), rec_, (size_t)len_);                                                   \
    } while (0)

void room__take_checkpoint(struct room *r, const struct ckpt *id)
{
    struct room_store *s = store_of(r);
    if (!s || !persist_has_checkpoints(s->persist))
        return;
    struct persist_job *j = copy_room(r, id, s->seq + 1);
    if (!j) {
        persist_say(s->persist, "checkpoint of room \"%s\" skipped: out of memory", r->name);
        return;
    }
    s->seq++;
    bool held = room__logs_to_cluster(r);
    if (!held)
        persist_write(s->persist, j);
    RECORD(r, reclog_put_checkpoint, world_tick(r), s->seq);
    if (held) { /* an older one still held is dropped: this one's mark comes after its */
        s->clog_ckpt = s->seq;
        persist_job_free(s->held);
        s->held = j;
    }
}

void room__clog_reset(struct room *r)
{
    struct room_store *s = r->store;
    if (!s)
        return;
    s->clog_len = 0;
    s->clog_commands = false;
    s->clog_ckpt = 0;
    persist_job_free(s->held);
    s->held = NULL;
}

/* ---- the log ------------------------------------------------------------------ */

void room_record_begin(struct room *r, const struct ckpt *id, enum reclog_reason reason)
{
    struct room_store *s = store_of(r);
    if (!s || !persist_is_recording(s->persist) || s->log)
        return;
    const char *err = NULL;
    s->log = recorder_open(s->persist, r->name, &err);
    if (!s->log) {
        persist_say(s->persist, "room \"%s\" is not recorded: %s", r->name, err);
        return;
    }
    struct persist_job *j = copy_room(r, id, s->seq);
    if (j)
        persist_stamp(s->persist, &j->ck);
    size_t state = j ? ckpt_size(&j->ck) : 0, cap = reclog_begin_size(state);
    uint8_t *ck = j ? malloc(state) : NULL, *rec = ck ? malloc(cap) : NULL;
    int len = rec ? ckpt_encode(&j->ck, ck, state) : PROTO_E_INTERNAL;
    if (len > 0)
        len =
            reclog_put_begin(rec, cap, reason, persist_config(s->persist)->build, ck, (size_t)len);
    if (len > 0)
        recorder_add(s->log, rec, (size_t)len);
    else
        persist_say(s->persist, "room \"%s\": no BEGIN record (%s)", r->name,
                    proto_status_name(len));
    recorder_flush(s->log, 0);
    free(rec);
    free(ck);
    persist_job_free(j);
}

void room__record_script(struct room *r)
{
    struct script *script = room__script(r);
    if (!r->store || !script || !(r->store->log || room__logs_to_cluster(r)))
        return;
    const struct script_source *src = script_source(script);
    size_t cap = reclog_script_size(strlen(src->name), src->len);
    uint8_t *rec = malloc(cap);
    int len = rec ? reclog_put_script(rec, cap, world_tick(r), src->name, src->text, src->len)
                  : PROTO_E_INTERNAL;
    if (len > 0)
        add_record(r, rec, (size_t)len);
    free(rec);
}

void room__record_command(struct room *r, uint64_t client, const struct room_applied *a)
{
    if (r->store && (r->store->log || room__logs_to_cluster(r)) && reclog_is_recorded(a->cmd.kind))
        RECORD(r, reclog_put_command, a->tick, client, &a->cmd, a->obstacle);
}

void room__record_tick(struct room *r, bool stepped, int64_t now_ns)
{
    if (!r->store || !r->store->log)
        return;
    uint64_t tick = world_tick(r);
    uint32_t every = persist_config(r->store->persist)->hash_every;
    if (stepped && every && tick % every == 0)
        RECORD(r, reclog_put_hash, tick, sim_hash(r->world));
    recorder_flush(r->store->log, now_ns);
}

void room__record_flush(struct room *r)
{
    if (r->store && r->store->log)
        recorder_flush(r->store->log, 0);
}

void room__store_close(struct room *r)
{
    if (!r->store)
        return;
    if (r->store->log) {
        RECORD(r, reclog_put_end, world_tick(r), sim_hash(r->world));
        recorder_close(r->store->log);
    }
    free(r->store->clog);
    persist_job_free(r->store->held);
    free(r->store->origins);
    free(r->store);
    r->store = NULL;
}

/* ---- restoring ---------------------------------------------------------------- */

int room_config_restoring(struct room_config *cfg, const struct ckpt *c, const char **why)
{
    struct sim_state_info info;
    if (sim_state_check(c->world, c->world_len, &info, why) < 0)
        return PROTO_E_BAD_VALUE;
    cfg->sim = info.cfg;
    cfg->tick_hz = c->tick_hz;
    if (cfg->snapshot_hz > cfg->tick_hz)
        cfg->snapshot_hz = cfg->tick_hz;
    cfg->boids = c->boids;
    cfg->mode = c->mode;
    return 0;
}

/* The owners of c, each naming an obstacle of the world, into the room. */
static int restore_owners(struct room *r, const struct ckpt *c, const char **why)
{
    struct sim_view v;
    sim_view(r->world, &v);
    for (uint32_t k = 0; k < c->owner_count; k++) {
        struct ckpt_owner o;
        ckpt_owner(c, k, &o);
        uint32_t i = 0;
        while (i < v.obstacle_count && v.obstacles[i].id != o.id)
            i++;
        if (i == v.obstacle_count) {
            *why = "an obstacle owner names no obstacle of the world";
            return PROTO_E_BAD_VALUE;
        }
        r->owners[k] = (struct obstacle_owner){o.id, o.owner};
    }
    r->nowners = c->owner_count;
    return 0;
}

/* The checkpoint's script, with its state (without one: started afresh). */
static int restore_script(struct room *r, const struct ckpt *c, const char **why)
{
    static _Thread_local char reason[SCRIPT_REASON_MAX];
    struct script_source src = {0};
    int rc = script_source_set(&src, c->script, c->script_text, c->script_len);
    if (rc == 0)
        rc = room__script_create(r, &src, c->script_state_len ? c->script_state : NULL,
                                 c->script_state_len, reason);
    else
        snprintf(reason, sizeof reason, "a bad script name or text");
    script_source_free(&src);
    if (rc < 0)
        *why = reason;
    return rc;
}

int room_restore(struct room *r, const struct ckpt *c, const char **why)
{
    int rc = sim_state_decode(r->world, c->world, c->world_len, why);
    if (rc < 0)
        return PROTO_E_BAD_VALUE;
    rc = restore_owners(r, c, why);
    if (rc < 0)
        return rc;
    r->paused = c->paused;
    r->steps_pending = c->steps_pending;
    if (c->script[0] && (rc = restore_script(r, c, why)) < 0)
        return rc;
    struct room_store *s = store_of(r);
    if (s)
        s->seq = c->seq;
    room__refresh_welcome(r);
    room__update_info(r);
    return 0;
}

/*
 * Reads t's records (a cluster's log: no preamble, no BEGIN): notes in the
 * room every command of another node among them (a resend of one is
 * acked, not applied again) and finds the CHECKPOINT record of sequence
 * number seq: its offset in t->log, or a negative code (none, or a record
 * that does not read).
 */
static long scan_takeover(struct room *r, const struct room_takeover *t, uint32_t seq, char *why,
                          size_t n)
{
    uint8_t *buf = malloc(RECLOG_PREAMBLE + t->log_len);
    static _Thread_local struct reclog_record rec; /* large */
    const char *reason = "out of memory";
    long mark = PROTO_E_NOT_FOUND;
    struct reclog_reader rd;
    int rc = buf ? 0 : PROTO_E_INTERNAL;
    if (buf) {
        reclog_preamble(buf);
        memcpy(buf + RECLOG_PREAMBLE, t->log, t->log_len);
        rc = reclog_reader_init(&rd, buf, RECLOG_PREAMBLE + t->log_len, &reason);
    }
    while (rc == 0 && (rc = reclog_next(&rd, &rec, &reason)) == 1) {
        if (rec.type == RECLOG_CHECKPOINT && rec.seq == seq)
            mark = (long)(rec.offset - RECLOG_PREAMBLE);
        if (rec.type == RECLOG_COMMAND && (rec.client & PROTO_ORIGIN_BIT))
            room__origin_note(r, rec.client, rec.tick, rec.obstacle);
        rc = 0;
    }
    free(buf);
    if (rc < 0)
        snprintf(why, n, "its command log does not read: %s", reason);
    else if (mark < 0)
        snprintf(why, n, "the command log does not reach back to checkpoint %u", seq);
    return rc < 0 ? rc : mark;
}

/* A log of t's checkpoint (a BEGIN restoring it) and t's records from
 * offset `mark` on, for room_resume_log (malloc'd; NULL if memory runs
 * out). */
static uint8_t *takeover_log(const struct room_takeover *t, size_t mark, size_t *len)
{
    size_t begin = reclog_begin_size(t->ck_len), tail = t->log_len - mark;
    uint8_t *buf = malloc(RECLOG_PREAMBLE + begin + tail);
    int n =
        buf ? reclog_put_begin(buf + RECLOG_PREAMBLE, begin, RECLOG_RESTORED, "", t->ck, t->ck_len)
            : PROTO_E_INTERNAL;
    if (n < 0) {
        free(buf);
        return NULL;
    }
    reclog_preamble(buf);
    memcpy(buf + RECLOG_PREAMBLE + n, t->log + mark, tail);
    *len = RECLOG_PREAMBLE + (size_t)n + tail;
    return buf;
}

/* Where t's log carries the room on from checkpoint c: 0 and *res, or a
 * negative code and why (c alone is then what there is). */
static int resume_takeover(struct room *r, const struct room_takeover *t, const struct ckpt *c,
                           struct room_resumed *res, char *why, size_t n)
{
    long mark = scan_takeover(r, t, c->seq, why, n);
    size_t len = 0;
    uint8_t *log = mark >= 0 ? takeover_log(t, (size_t)mark, &len) : NULL;
    if (mark >= 0 && !log)
        snprintf(why, n, "out of memory");
    if (!log)
        return mark < 0 ? (int)mark : PROTO_E_INTERNAL;
    int rc = room_resume_log(c, log, len, t->tick, res, why, n);
    if (rc == 0 && !res->from_checkpoint) { /* cannot be: the mark is right after the BEGIN */
        room_resumed_free(res);
        snprintf(why, n, "the command log does not reach back to checkpoint %u", c->seq);
        rc = PROTO_E_NOT_FOUND;
    }
    return rc;
}

void room__resume_from(struct room *r, const struct room_takeover *t)
{
    struct ckpt c;
    const char *why = NULL;
    if (ckpt_decode(t->ck, t->ck_len, &c, &why) < 0 || strcmp(c.room, r->name) != 0) {
        fprintf(stderr, "flockd: room \"%s\" taken over without its checkpoint: %s\n", r->name,
                why ? why : "it names another room");
        return;
    }
    struct room_resumed res = {0};
    char lost[256] = "";
    bool logged = t->log_len > 0 && resume_takeover(r, t, &c, &res, lost, sizeof lost) == 0;
    if (room_restore(r, logged ? &res.ck : &c, &why) < 0) {
        fprintf(stderr, "flockd: room \"%s\" taken over without its checkpoint: %s\n", r->name,
                why);
    } else if (logged) {
        fprintf(stderr,
                "flockd: room \"%s\" resumed from checkpoint %u and its command log at tick "
                "%llu, state hash %016llx; at tick %llu, the last the old owner showed here, "
                "the log's state hash was %016llx\n",
                r->name, c.seq, (unsigned long long)world_tick(r),
                (unsigned long long)sim_hash(r->world), (unsigned long long)t->tick,
                (unsigned long long)res.hash_at);
    } else {
        fprintf(stderr, "flockd: room \"%s\" resumed from checkpoint %u at tick %llu%s%s\n",
                r->name, c.seq, (unsigned long long)world_tick(r), lost[0] ? ": " : "", lost);
        if (lost[0])
            atomic_fetch_add_explicit(&g_metrics.logs_refused, 1, memory_order_relaxed);
    }
    room_resumed_free(&res);
}

/* ---- resuming where a log ends ------------------------------------------------ */

/* The owners of `from` that still name an obstacle of w, ascending. */
static uint32_t live_owners(const struct ckpt *from, const struct sim_world *w,
                            struct ckpt_owner *out)
{
    struct sim_view v;
    sim_view(w, &v);
    uint32_t n = 0;
    for (uint32_t k = 0; k < from->owner_count; k++) {
        struct ckpt_owner o;
        ckpt_owner(from, k, &o);
        for (uint32_t i = 0; i < v.obstacle_count; i++)
            if (v.obstacles[i].id == o.id) {
                out[n++] = o;
                break;
            }
    }
    return n;
}

/* The replay's end as a checkpoint with from's identity, encoded into
 * out->mem and decoded into out->ck. */
static int encode_resumed(struct replay *rp, const struct ckpt *from, struct room_resumed *out,
                          const char **why)
{
    struct sim_world *w = replay_world(rp);
    struct script *script = replay_script(rp);
    struct ckpt ck = *from;
    size_t world = sim_state_size(w);
    uint8_t *saved = NULL;
    char reason[SCRIPT_REASON_MAX];
    int saved_len = script ? script_save(script, &saved, reason) : 0;
    struct ckpt_owner *owners = malloc((from->owner_count + 1) * sizeof *owners);
    uint8_t *state = malloc(world);
    int rc = PROTO_E_INTERNAL;
    *why = "out of memory";
    if (saved_len >= 0 && owners && state) {
        sim_state_encode(w, state, world);
        bool paused;
        replay_pause_state(rp, &paused, &ck.steps_pending);
        ck.paused = paused;
        ck.owners = owners;
        ck.owner_count = live_owners(from, w, owners);
        ck.world = state;
        ck.world_len = world;
        const struct script_source *src = script ? script_source(script) : NULL;
        snprintf(ck.script, sizeof ck.script, "%s", src ? src->name : "");
        ck.script_text = src ? src->text : NULL;
        ck.script_len = src ? src->len : 0;
        ck.script_state = saved;
        ck.script_state_len = (size_t)saved_len;
        size_t size = ckpt_size(&ck);
        out->mem = malloc(size);
        rc = out->mem ? ckpt_encode(&ck, out->mem, size) : PROTO_E_INTERNAL;
        if (rc > 0)
            rc = ckpt_decode(out->mem, (size_t)rc, &out->ck, why);
    } else if (saved_len < 0) {
        *why = "the script's state could not be saved";
    }
    free(saved);
    free(owners);
    free(state);
    return rc < 0 ? rc : 0;
}

int room_resume_log(const struct ckpt *c, uint8_t *log, size_t len, uint64_t tick,
                    struct room_resumed *out, char *why, size_t n)
{
    *out = (struct room_resumed){0};
    struct replay *rp = replay_open(log, len, why, n);
    if (!rp)
        return PROTO_E_BAD_VALUE;
    struct ckpt from;
    const char *reason = NULL;
    uint64_t at = 0;
    int rc = PROTO_E_NOT_FOUND;
    if (replay_is_closed(rp) && !c) {
        snprintf(why, n, "its log ends with the room closed");
    } else if ((rc = replay_play_on(rp, c, tick, &from, &out->hash_at)) < 0) {
        replay_divergence(rp, &at, &reason);
        snprintf(why, n, "its log does not replay: %s at tick %llu", reason ? reason : "?",
                 (unsigned long long)at);
    } else if (c && from.seq != c->seq && from.wall_us < c->wall_us) {
        rc = PROTO_E_NOT_FOUND;
        snprintf(why, n, "its log ends before checkpoint %u", c->seq);
    } else if ((rc = encode_resumed(rp, &from, out, &reason)) < 0) {
        snprintf(why, n, "%s", reason);
    } else {
        out->from_checkpoint = c && from.seq == c->seq && from.wall_us == c->wall_us;
    }
    replay_destroy(rp);
    if (rc < 0)
        room_resumed_free(out);
    return rc;
}

void room_resumed_free(struct room_resumed *out)
{
    free(out->mem);
    out->mem = NULL;
}

/* ---- commands of other nodes, once ------------------------------------------- */

void room__origin_note(struct room *r, uint64_t origin, uint64_t tick, uint32_t obstacle)
{
    struct room_store *s = store_of(r);
    if (!s || !origin)
        return;
    if (!s->origins && !(s->origins = calloc(ROOM_ORIGINS, sizeof *s->origins)))
        return;
    s->origins[s->origin_next] = (struct room_origin){origin, tick, obstacle};
    s->origin_next = (s->origin_next + 1) % ROOM_ORIGINS;
}

void room__origin_forget(struct room *r)
{
    struct room_store *s = r->store;
    if (s && s->origins)
        memset(s->origins, 0, ROOM_ORIGINS * sizeof *s->origins);
    if (s)
        s->origin_next = 0;
}

bool room__origin_find(const struct room *r, uint64_t origin, struct room_origin *out)
{
    const struct room_store *s = r->store;
    for (size_t i = 0; s && s->origins && origin && i < ROOM_ORIGINS; i++)
        if (s->origins[i].origin == origin) {
            *out = s->origins[i];
            return true;
        }
    return false;
}
