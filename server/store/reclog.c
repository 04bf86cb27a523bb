/*
 * reclog.c — the command log's records to bytes and back (see reclog.h;
 * the layout is server/store/FILES.md §1).
 *
 * Commands are stored by a code of the log's own (the table below), not
 * by the codec's enum, so a new command in the protocol never shifts what
 * an old log means; parameters are stored by name for the same reason.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "reclog.h"

#include "bytes.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

static const uint8_t MAGIC[8] = {'F', 'L', 'O', 'C', 'K', 'L', 'O', 'G'};

/* The log's command codes (FILES.md §1.3). */
static const struct {
    enum proto_cmd kind;
    uint8_t code;
} codes[] = {
    {PROTO_CMD_SEEK, 1},           {PROTO_CMD_SEEK_CLEAR, 2},
    {PROTO_CMD_OBSTACLE_ADD, 3},   {PROTO_CMD_OBSTACLE_REMOVE, 4},
    {PROTO_CMD_OBSTACLE_CLEAR, 5}, {PROTO_CMD_SPAWN, 6},
    {PROTO_CMD_DESPAWN, 7},        {PROTO_CMD_PARAMS, 8},
    {PROTO_CMD_PAUSE, 9},          {PROTO_CMD_RESUME, 10},
    {PROTO_CMD_STEP, 11},          {PROTO_CMD_RESET, 12},
};
#define NCODES (sizeof codes / sizeof codes[0])

static int code_of(enum proto_cmd kind)
{
    for (size_t i = 0; i < NCODES; i++)
        if (codes[i].kind == kind)
            return codes[i].code;
    return 0;
}

static int kind_of(uint64_t code, enum proto_cmd *kind)
{
    for (size_t i = 0; i < NCODES; i++)
        if (codes[i].code == code) {
            *kind = codes[i].kind;
            return 1;
        }
    return 0;
}

bool reclog_is_recorded(enum proto_cmd kind)
{
    return code_of(kind) != 0;
}

/* ---- writing -------------------------------------------------------------------- */

void reclog_preamble(uint8_t out[RECLOG_PREAMBLE])
{
    memset(out, 0, RECLOG_PREAMBLE);
    memcpy(out, MAGIC, sizeof MAGIC);
    bytes_le_put(out + 8, RECLOG_VERSION, 2);
}

/* Opens a record: room for its frame, filled in by seal(). */
static struct bytes_w open_record(uint8_t *buf, size_t cap, enum reclog_type type)
{
    struct bytes_w w = {.buf = buf, .cap = cap};
    bytes_room(&w, RECLOG_FRAME);
    bytes_put(&w, (uint64_t)type, 1);
    return w;
}

/* Writes the frame (payload length and CRC); the record's length or NOSPACE. */
static int seal(struct bytes_w *w)
{
    if (w->overflow || w->len > INT32_MAX)
        return PROTO_E_NOSPACE;
    size_t payload = w->len - RECLOG_FRAME;
    bytes_le_put(w->buf, payload, 4);
    bytes_le_put(w->buf + 4, crc32_z(0, w->buf + RECLOG_FRAME, payload), 4);
    return (int)w->len;
}

size_t reclog_begin_size(size_t state_len)
{
    return RECLOG_FRAME + 3 + CKPT_BUILD_MAX + state_len;
}

int reclog_put_begin(uint8_t *buf, size_t cap, enum reclog_reason reason, const char *build,
                     const uint8_t *state, size_t state_len)
{
    size_t bl = strnlen(build, CKPT_BUILD_MAX);
    struct bytes_w w = open_record(buf, cap, RECLOG_BEGIN);
    bytes_put(&w, (uint64_t)reason, 1);
    bytes_put(&w, bl, 1);
    bytes_put_mem(&w, build, bl);
    bytes_put_mem(&w, state, state_len);
    return seal(&w);
}

static void put_params(struct bytes_w *w, const struct proto_params_args *a)
{
    bytes_put(w, (uint64_t)(int64_t)a->group, 2);
    bytes_put(w, a->count, 1);
    for (uint32_t k = 0; k < a->count; k++) {
        const char *name = a->items[k].desc->name;
        bytes_put(w, strlen(name), 1);
        bytes_put_mem(w, name, strlen(name));
        bytes_put_f32(w, a->items[k].value);
    }
}

/* The arguments of each recorded command (FILES.md §1.3). */
static void put_args(struct bytes_w *w, const struct proto_command *c, uint32_t obstacle)
{
    switch (c->kind) {
    case PROTO_CMD_SEEK:
        bytes_put(w, (uint64_t)c->args.seek.group, 1);
        bytes_put_f32(w, c->args.seek.x);
        bytes_put_f32(w, c->args.seek.y);
        break;
    case PROTO_CMD_SEEK_CLEAR:
        bytes_put(w, (uint64_t)c->args.seek_clear.group, 1);
        break;
    case PROTO_CMD_OBSTACLE_ADD:
        bytes_put_f32(w, c->args.obstacle_add.x);
        bytes_put_f32(w, c->args.obstacle_add.y);
        bytes_put_f32(w, c->args.obstacle_add.r);
        bytes_put(w, obstacle, 4);
        break;
    case PROTO_CMD_OBSTACLE_REMOVE:
        bytes_put(w, c->args.obstacle_remove.id, 4);
        break;
    case PROTO_CMD_SPAWN:
        bytes_put(w, c->args.spawn.n, 4);
        bytes_put(w, (uint64_t)c->args.spawn.group, 1);
        bytes_put_f32(w, c->args.spawn.x);
        bytes_put_f32(w, c->args.spawn.y);
        bytes_put_f32(w, c->args.spawn.spread);
        break;
    case PROTO_CMD_DESPAWN:
        bytes_put(w, c->args.despawn.n, 4);
        bytes_put(w, (uint64_t)(int64_t)c->args.despawn.group, 2);
        break;
    case PROTO_CMD_PARAMS:
        put_params(w, &c->args.params);
        break;
    case PROTO_CMD_STEP:
        bytes_put(w, c->args.step.n, 4);
        break;
    case PROTO_CMD_RESET: /* the seed and count it used, defaults resolved */
        bytes_put(w, c->args.reset.seed, 8);
        bytes_put(w, c->args.reset.boids, 4);
        break;
    default: /* obstacle_clear, pause, resume: no arguments */
        break;
    }
}

int reclog_put_command(uint8_t *buf, size_t cap, uint64_t tick, uint64_t client,
                       const struct proto_command *cmd, uint32_t obstacle)
{
    int code = code_of(cmd->kind);
    if (!code)
        return PROTO_E_BAD_ARG;
    struct bytes_w w = open_record(buf, cap, RECLOG_COMMAND);
    bytes_put(&w, tick, 8);
    bytes_put(&w, client, 8);
    bytes_put(&w, (uint64_t)code, 1);
    put_args(&w, cmd, obstacle);
    return seal(&w);
}

/* HASH and END: a tick and a hash. */
static int put_tick_hash(uint8_t *buf, size_t cap, enum reclog_type type, uint64_t tick,
                         uint64_t hash)
{
    struct bytes_w w = open_record(buf, cap, type);
    bytes_put(&w, tick, 8);
    bytes_put(&w, hash, 8);
    return seal(&w);
}

int reclog_put_hash(uint8_t *buf, size_t cap, uint64_t tick, uint64_t hash)
{
    return put_tick_hash(buf, cap, RECLOG_HASH, tick, hash);
}

int reclog_put_end(uint8_t *buf, size_t cap, uint64_t tick, uint64_t hash)
{
    return put_tick_hash(buf, cap, RECLOG_END, tick, hash);
}

int reclog_put_checkpoint(uint8_t *buf, size_t cap, uint64_t tick, uint32_t seq)
{
    struct bytes_w w = open_record(buf, cap, RECLOG_CHECKPOINT);
    bytes_put(&w, tick, 8);
    bytes_put(&w, seq, 4);
    return seal(&w);
}

/* ---- reading -------------------------------------------------------------------- */

static int refuse(const char **why, int code, const char *reason)
{
    if (why)
        *why = reason;
    return code;
}

int reclog_reader_init(struct reclog_reader *rd, const uint8_t *buf, size_t len, const char **why)
{
    *rd = (struct reclog_reader){.buf = buf, .len = len, .at = RECLOG_PREAMBLE};
    size_t head = len < sizeof MAGIC ? len : sizeof MAGIC;
    if (head && memcmp(buf, MAGIC, head) != 0)
        return refuse(why, PROTO_E_BAD_MAGIC, "not a flockd command log");
    if (len < RECLOG_PREAMBLE)
        return refuse(why, PROTO_E_TRUNCATED, "shorter than a command log's preamble");
    if (bytes_le_get(buf + 8, 2) != RECLOG_VERSION || bytes_le_get(buf + 10, 2) != 0 ||
        bytes_le_get(buf + 12, 4) != 0)
        return refuse(why, PROTO_E_BAD_VERSION, "a command log of another format version");
    rd->good_end = RECLOG_PREAMBLE;
    return 0;
}

static bool only_zeros(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/*
 * The frame at rd->at: 1 with the payload's place, 0 if it is torn (the
 * end of the log), or HASH_MISMATCH if it fails with more after it.
 */
static int read_frame(struct reclog_reader *rd, const uint8_t **payload, size_t *plen,
                      const char **why)
{
    size_t left = rd->len - rd->at;
    const uint8_t *p = rd->buf + rd->at;
    if (left < RECLOG_FRAME)
        return 0; /* a frame header cut short: torn */
    size_t n = (size_t)bytes_le_get(p, 4);
    if (n == 0 || n > RECLOG_RECORD_MAX) {
        if (only_zeros(p, left))
            return 0;
        return refuse(why, PROTO_E_HASH_MISMATCH, "a record with an impossible length");
    }
    if (n > left - RECLOG_FRAME)
        return 0; /* runs past the end: a write cut short */
    if (crc32_z(0, p + RECLOG_FRAME, n) != bytes_le_get(p + 4, 4)) {
        size_t after = RECLOG_FRAME + n;
        if (only_zeros(p + after, left - after))
            return 0;
        return refuse(why, PROTO_E_HASH_MISMATCH, "a record fails its checksum and more follows");
    }
    *payload = p + RECLOG_FRAME;
    *plen = n;
    return 1;
}

static int get_begin(struct bytes_r *r, struct reclog_record *rec, const char **why)
{
    uint64_t reason = bytes_get(r, 1), bl = bytes_get(r, 1);
    if (reason > RECLOG_RESTORED || bl > CKPT_BUILD_MAX)
        return refuse(why, PROTO_E_BAD_VALUE, "a BEGIN record with a bad reason or build id");
    rec->reason = (enum reclog_reason)reason;
    bytes_get_str(r, rec->build, bl);
    rec->state_len = r->len - r->at;
    rec->state = bytes_take(r, rec->state_len);
    if (r->short_read || strlen(rec->build) != bl)
        return refuse(why, PROTO_E_BAD_VALUE, "a malformed BEGIN record");
    return 0;
}

static int get_params(struct bytes_r *r, struct proto_params_args *a, const char **why)
{
    a->group = (int)(int16_t)bytes_get(r, 2);
    a->count = (uint32_t)bytes_get(r, 1);
    if (a->group < -1 || a->group >= PROTO_GROUPS || a->count < 1 || a->count > PROTO_MAX_PARAMS)
        return refuse(why, PROTO_E_BAD_VALUE, "a params command with a bad group or count");
    for (uint32_t k = 0; k < a->count; k++) {
        char name[256];
        bytes_get_str(r, name, (size_t)bytes_get(r, 1));
        const struct sim_param_desc *d = sim_param_find(name);
        float v = bytes_get_f32(r);
        if (!d || !sim_param_valid(d, v))
            return refuse(why, PROTO_E_BAD_VALUE, "a params command with an unknown or bad value");
        for (uint32_t j = 0; j < k; j++)
            if (a->items[j].desc == d)
                return refuse(why, PROTO_E_BAD_VALUE, "a params command names one twice");
        a->items[k] = (struct proto_param_value){d, v};
    }
    return 0;
}

static int finite3(float a, float b, float c)
{
    return isfinite(a) && isfinite(b) && isfinite(c);
}

/* The arguments of rec->cmd.kind; their values within what the room accepts. */
static int get_args(struct bytes_r *r, struct proto_command *c, uint32_t *obstacle,
                    const char **why)
{
    int ok = 1;
    switch (c->kind) {
    case PROTO_CMD_SEEK: {
        struct proto_seek_args *a = &c->args.seek;
        a->group = (int)bytes_get(r, 1);
        a->x = bytes_get_f32(r);
        a->y = bytes_get_f32(r);
        ok = finite3(a->x, a->y, 0);
        break;
    }
    case PROTO_CMD_SEEK_CLEAR:
        c->args.seek_clear.group = (int)bytes_get(r, 1);
        break;
    case PROTO_CMD_OBSTACLE_ADD: {
        struct proto_obstacle_add_args *a = &c->args.obstacle_add;
        a->x = bytes_get_f32(r);
        a->y = bytes_get_f32(r);
        a->r = bytes_get_f32(r);
        *obstacle = (uint32_t)bytes_get(r, 4);
        ok = finite3(a->x, a->y, a->r) && *obstacle >= 1;
        break;
    }
    case PROTO_CMD_OBSTACLE_REMOVE:
        c->args.obstacle_remove.id = (uint32_t)bytes_get(r, 4);
        ok = c->args.obstacle_remove.id >= 1;
        break;
    case PROTO_CMD_SPAWN: {
        struct proto_spawn_args *a = &c->args.spawn;
        a->n = (uint32_t)bytes_get(r, 4);
        a->group = (int)bytes_get(r, 1);
        a->x = bytes_get_f32(r);
        a->y = bytes_get_f32(r);
        a->spread = bytes_get_f32(r);
        ok = a->n >= 1 && finite3(a->x, a->y, a->spread) && a->spread >= 0.0f;
        break;
    }
    case PROTO_CMD_DESPAWN:
        c->args.despawn.n = (uint32_t)bytes_get(r, 4);
        c->args.despawn.group = (int)(int16_t)bytes_get(r, 2);
        ok = c->args.despawn.n >= 1 && c->args.despawn.group >= -1 &&
             c->args.despawn.group < PROTO_GROUPS;
        break;
    case PROTO_CMD_PARAMS:
        return get_params(r, &c->args.params, why);
    case PROTO_CMD_STEP:
        c->args.step.n = (uint32_t)bytes_get(r, 4);
        ok = c->args.step.n >= 1 && c->args.step.n <= PROTO_MAX_STEP;
        break;
    case PROTO_CMD_RESET:
        c->args.reset = (struct proto_reset_args){.has_seed = 1, .has_boids = 1};
        c->args.reset.seed = bytes_get(r, 8);
        c->args.reset.boids = (uint32_t)bytes_get(r, 4);
        ok = c->args.reset.seed <= (uint64_t)PROTO_MAX_SEED;
        break;
    default:
        break;
    }
    return ok ? 0 : refuse(why, PROTO_E_BAD_VALUE, "a command with an argument out of range");
}

static int get_command(struct bytes_r *r, struct reclog_record *rec, const char **why)
{
    rec->tick = bytes_get(r, 8);
    rec->client = bytes_get(r, 8);
    memset(&rec->cmd, 0, sizeof rec->cmd);
    if (!kind_of(bytes_get(r, 1), &rec->cmd.kind))
        return refuse(why, PROTO_E_BAD_VALUE, "a command of an unknown code");
    return get_args(r, &rec->cmd, &rec->obstacle, why);
}

/* The payload of one whole record into *rec. */
static int get_record(const uint8_t *payload, size_t n, struct reclog_record *rec, const char **why)
{
    struct bytes_r r = {.buf = payload, .len = n};
    rec->type = (enum reclog_type)bytes_get(&r, 1);
    int rc = 0;
    switch (rec->type) {
    case RECLOG_BEGIN:
        return get_begin(&r, rec, why);
    case RECLOG_COMMAND:
        rc = get_command(&r, rec, why);
        break;
    case RECLOG_HASH:
    case RECLOG_END:
        rec->tick = bytes_get(&r, 8);
        rec->hash = bytes_get(&r, 8);
        break;
    case RECLOG_CHECKPOINT:
        rec->tick = bytes_get(&r, 8);
        rec->seq = (uint32_t)bytes_get(&r, 4);
        break;
    default:
        return refuse(why, PROTO_E_BAD_VALUE, "a record of an unknown type");
    }
    if (rc == 0 && (r.short_read || r.at != r.len))
        rc = refuse(why, PROTO_E_BAD_VALUE, "a record of the wrong length for its type");
    return rc;
}

int reclog_next(struct reclog_reader *rd, struct reclog_record *rec, const char **why)
{
    const uint8_t *payload = NULL;
    size_t n = 0;
    if (rd->at >= rd->len)
        return 0;
    int rc = read_frame(rd, &payload, &n, why);
    if (rc == 0)
        rd->torn = true;
    if (rc <= 0)
        return rc;
    rc = get_record(payload, n, rec, why);
    if (rc < 0)
        return rc;
    rec->offset = rd->at;
    rd->at += RECLOG_FRAME + n;
    rd->good_end = rd->at;
    return 1;
}
