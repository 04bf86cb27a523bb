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
#include <stddef.h>
#include <string.h>
#include <zlib.h>

static const uint8_t MAGIC[8] = {'F', 'L', 'O', 'C', 'K', 'L', 'O', 'G'};

/* How one argument of a recorded command is stored, and the values a
 * reader accepts (FILES.md §1.3). */
enum arg_type {
    ARG_END,        /* no more arguments */
    ARG_U8,         /* an int (a group, 0..255) as u8 */
    ARG_I16,        /* an int as i16, within [lo, hi] */
    ARG_U32,        /* a uint32_t as u32, within [lo, hi] */
    ARG_U64,        /* a uint64_t as u64, within [lo, hi] */
    ARG_F32,        /* a float as f32, finite */
    ARG_F32_NONNEG, /* a float as f32, finite and >= 0 */
    ARG_OBSTACLE,   /* the id obstacle_add gave (the record's, not the command's) as u32 >= 1 */
    ARG_PARAMS,     /* i16 group; u8 K; K times a name (u8 N, N bytes) and an f32 value */
    ARG_SELECTION,  /* u8 by; rect: 4 f32; ids: u16 N, N u32; squads: u64; all: nothing */
    ARG_WAYPOINTS,  /* u8 N (1..16), N times f32 x, f32 y */
    ARG_GIVEN,      /* an int has_ flag: stored values are always given (set on reading) */
    ARG_TEXT,       /* a game command's text: u16 N (0..PROTO_GAME_MAX), N bytes, no NUL */
};

struct arg {
    enum arg_type type;
    size_t at; /* where the field is in struct proto_command */
    int64_t lo;
    uint64_t hi;
};

/* The place of args.m in struct proto_command, which must be of type T. */
#define FIELD(m, T)                                                                                \
    _Generic(((struct proto_command *)0)->args.m, T : offsetof(struct proto_command, args.m))

/* The rows' arguments (clang-format would spread each over four lines). */
/* clang-format off */
#define U8(m)          {ARG_U8, FIELD(m, int), 0, 255}
#define I16(m, lo, hi) {ARG_I16, FIELD(m, int), lo, hi}
#define U32(m, lo, hi) {ARG_U32, FIELD(m, uint32_t), lo, hi}
#define U64(m, lo, hi) {ARG_U64, FIELD(m, uint64_t), lo, hi}
#define F32(m)         {ARG_F32, FIELD(m, float), 0, 0}
#define F32_NONNEG(m)  {ARG_F32_NONNEG, FIELD(m, float), 0, 0}
#define OBSTACLE_ID    {ARG_OBSTACLE, 0, 1, UINT32_MAX}
#define PARAMS(m)      {ARG_PARAMS, FIELD(m, struct proto_params_args), 0, 0}
#define SELECTION(m)   {ARG_SELECTION, FIELD(m, struct proto_select_args), 0, 0}
#define WAYPOINTS(m)   {ARG_WAYPOINTS, FIELD(m, struct proto_order_args), 0, 0}
#define SQUAD(m)       {ARG_I16, FIELD(m, int), 1, PROTO_SQUADS}
#define ORDER(o)       {ARG_I16, FIELD(order.order, int), o, o}
#define GIVEN(m)       {ARG_GIVEN, FIELD(m, int), 0, 0}
#define TEXT(m)        {ARG_TEXT, offsetof(struct proto_command, args.m), 0, 0}
#define NO_ARGS        {{ARG_END, 0, 0, 0}}
/* clang-format on */

#define ARGS_MAX 6

/* Each recorded command: its code in the log (FILES.md §1.3: stored by a
 * code of the log's own, not by the protocol's enum) and its arguments in
 * the order they are stored. A command without a row is not recorded. */
static const struct command_row {
    uint8_t code; /* 0: not recorded */
    struct arg args[ARGS_MAX];
} rows[PROTO_CMD_COUNT] = {
    [PROTO_CMD_SEEK] = {1, {U8(seek.group), F32(seek.x), F32(seek.y)}},
    [PROTO_CMD_SEEK_CLEAR] = {2, {U8(seek_clear.group)}},
    [PROTO_CMD_OBSTACLE_ADD] = {3,
                                {F32(obstacle_add.x), F32(obstacle_add.y), F32(obstacle_add.r),
                                 OBSTACLE_ID}},
    [PROTO_CMD_OBSTACLE_REMOVE] = {4, {U32(obstacle_remove.id, 1, UINT32_MAX)}},
    [PROTO_CMD_OBSTACLE_CLEAR] = {5, NO_ARGS},
    [PROTO_CMD_SPAWN] = {6,
                         {U32(spawn.n, 1, UINT32_MAX), U8(spawn.group), F32(spawn.x), F32(spawn.y),
                          F32_NONNEG(spawn.spread)}},
    [PROTO_CMD_DESPAWN] = {7,
                           {U32(despawn.n, 1, UINT32_MAX),
                            I16(despawn.group, -1, PROTO_GROUPS - 1)}},
    [PROTO_CMD_PARAMS] = {8, {PARAMS(params)}},
    [PROTO_CMD_PAUSE] = {9, NO_ARGS},
    [PROTO_CMD_RESUME] = {10, NO_ARGS},
    [PROTO_CMD_STEP] = {11, {U32(step.n, 1, PROTO_MAX_STEP)}},
    /* the seed and count it used, defaults resolved */
    [PROTO_CMD_RESET] = {12,
                         {GIVEN(reset.has_seed), GIVEN(reset.has_boids),
                          U64(reset.seed, 0, (uint64_t)PROTO_MAX_SEED),
                          U32(reset.boids, 0, UINT32_MAX)}},
    /* Squads: the team as the room resolved it (a player's own). */
    [PROTO_CMD_SELECT] = {13,
                          {U8(select.team), I16(select.squad, -1, PROTO_SQUADS),
                           SELECTION(select)}},
    [PROTO_CMD_MOVE] = {14,
                        {U8(order.team), SQUAD(order.squad), ORDER(PROTO_ORDER_MOVE),
                         WAYPOINTS(order), I16(order.queue, 0, 1)}},
    [PROTO_CMD_PATROL] = {15,
                          {U8(order.team), SQUAD(order.squad), ORDER(PROTO_ORDER_PATROL),
                           WAYPOINTS(order)}},
    [PROTO_CMD_FOLLOW] = {16,
                          {U8(order.team), SQUAD(order.squad), ORDER(PROTO_ORDER_FOLLOW),
                           I16(order.squad_of, 0, PROTO_SQUADS), U32(order.unit, 0, UINT32_MAX)}},
    [PROTO_CMD_HOLD] = {17, {U8(order.team), SQUAD(order.squad), ORDER(PROTO_ORDER_HOLD)}},
    [PROTO_CMD_STOP] = {18, {U8(order.team), SQUAD(order.squad), ORDER(PROTO_ORDER_STOP)}},
    [PROTO_CMD_FORMATION] = {19,
                             {U8(formation.team), SQUAD(formation.squad),
                              I16(formation.shape, 0, PROTO_SHAPE_COUNT - 1),
                              F32_NONNEG(formation.spacing)}},
    /* A room script's event: a custom command, a join or a leave (§14). */
    [PROTO_CMD_GAME] = {20,
                        {I16(game.event, PROTO_GAME_COMMAND, PROTO_GAME_LEAVE),
                         I16(game.role, 0, 2), I16(game.team, -1, PROTO_GROUPS - 1),
                         U64(game.player, 0, UINT64_MAX), TEXT(game.text)}},
};

static int code_of(enum proto_cmd kind)
{
    return (unsigned)kind < PROTO_CMD_COUNT ? rows[kind].code : 0;
}

static int kind_of(uint64_t code, enum proto_cmd *kind)
{
    for (unsigned k = 0; k < PROTO_CMD_COUNT; k++)
        if (rows[k].code != 0 && rows[k].code == code) {
            *kind = (enum proto_cmd)k;
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

static void put_selection(struct bytes_w *w, const struct proto_select_args *a)
{
    bytes_put(w, (uint64_t)a->by, 1);
    if (a->by == PROTO_SELECT_RECT)
        for (int k = 0; k < 4; k++)
            bytes_put_f32(w, a->rect[k]);
    if (a->by == PROTO_SELECT_IDS) {
        bytes_put(w, a->n, 2);
        for (uint32_t k = 0; k < a->n; k++)
            bytes_put(w, a->ids[k], 4);
    }
    if (a->by == PROTO_SELECT_SQUADS)
        bytes_put(w, a->squads, 8);
}

static void put_waypoints(struct bytes_w *w, const struct proto_order_args *a)
{
    bytes_put(w, a->nway, 1);
    for (uint32_t k = 0; k < a->nway; k++) {
        bytes_put_f32(w, a->way[k][0]);
        bytes_put_f32(w, a->way[k][1]);
    }
}

/* One argument of a recorded command, from its field at p. */
static void put_arg(struct bytes_w *w, const struct arg *a, const void *p, uint32_t obstacle)
{
    const int *i = p;
    switch (a->type) {
    case ARG_U8:
        bytes_put(w, (uint64_t)*i, 1);
        break;
    case ARG_I16:
        bytes_put(w, (uint64_t)(int64_t)*i, 2);
        break;
    case ARG_U32:
        bytes_put(w, *(const uint32_t *)p, 4);
        break;
    case ARG_U64:
        bytes_put(w, *(const uint64_t *)p, 8);
        break;
    case ARG_F32:
    case ARG_F32_NONNEG:
        bytes_put_f32(w, *(const float *)p);
        break;
    case ARG_OBSTACLE:
        bytes_put(w, obstacle, 4);
        break;
    case ARG_PARAMS:
        put_params(w, p);
        break;
    case ARG_SELECTION:
        put_selection(w, p);
        break;
    case ARG_WAYPOINTS:
        put_waypoints(w, p);
        break;
    case ARG_TEXT:
        bytes_put(w, strnlen(p, PROTO_GAME_MAX), 2);
        bytes_put_mem(w, p, strnlen(p, PROTO_GAME_MAX));
        break;
    default: /* ARG_GIVEN: not stored */
        break;
    }
}

/* The arguments of a recorded command, as its row says. */
static void put_args(struct bytes_w *w, const struct proto_command *c, uint32_t obstacle)
{
    const struct arg *a = rows[c->kind].args;
    for (const struct arg *end = a + ARGS_MAX; a < end && a->type != ARG_END; a++)
        put_arg(w, a, (const char *)c + a->at, obstacle);
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

int reclog_put_resume(uint8_t *buf, size_t cap, uint64_t tick, uint64_t term)
{
    return put_tick_hash(buf, cap, RECLOG_RESUME, tick, term);
}

size_t reclog_script_size(size_t name_len, size_t text_len)
{
    return RECLOG_FRAME + 1 + 8 + 1 + name_len + 4 + text_len;
}

int reclog_put_script(uint8_t *buf, size_t cap, uint64_t tick, const char *name, const char *text,
                      size_t text_len)
{
    size_t nl = strnlen(name, RECLOG_SCRIPT_NAME_MAX + 1);
    if (nl == 0 || nl > RECLOG_SCRIPT_NAME_MAX || text_len > RECLOG_SCRIPT_MAX)
        return PROTO_E_BAD_ARG;
    struct bytes_w w = open_record(buf, cap, RECLOG_SCRIPT);
    bytes_put(&w, tick, 8);
    bytes_put(&w, nl, 1);
    bytes_put_mem(&w, name, nl);
    bytes_put(&w, text_len, 4);
    bytes_put_mem(&w, text, text_len);
    return seal(&w);
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
    if (reason > RECLOG_RESUMED || bl > CKPT_BUILD_MAX)
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

static int get_selection(struct bytes_r *r, struct proto_select_args *a, const char **why)
{
    bool ok = true;
    a->by = (enum proto_select_by)bytes_get(r, 1);
    if (a->by == PROTO_SELECT_RECT)
        for (int k = 0; k < 4; k++)
            ok &= isfinite(a->rect[k] = bytes_get_f32(r));
    if (a->by == PROTO_SELECT_IDS) {
        a->n = (uint32_t)bytes_get(r, 2);
        ok &= a->n >= 1 && a->n <= PROTO_SELECT_MAX;
        for (uint32_t k = 0; ok && k < a->n; k++)
            ok &= (a->ids[k] = (uint32_t)bytes_get(r, 4)) >= 1;
    }
    if (a->by == PROTO_SELECT_SQUADS)
        ok &= (a->squads = bytes_get(r, 8)) >> (PROTO_SQUADS + 1) == 0 && a->squads != 0;
    if (!ok || (unsigned)a->by > PROTO_SELECT_SQUADS)
        return refuse(why, PROTO_E_BAD_VALUE, "a select command with a bad selection");
    return 0;
}

static int get_waypoints(struct bytes_r *r, struct proto_order_args *a, const char **why)
{
    a->nway = (uint32_t)bytes_get(r, 1);
    bool ok = a->nway >= 1 && a->nway <= PROTO_WAYPOINTS;
    for (uint32_t k = 0; ok && k < a->nway; k++) {
        a->way[k][0] = bytes_get_f32(r);
        a->way[k][1] = bytes_get_f32(r);
        ok = isfinite(a->way[k][0]) && isfinite(a->way[k][1]);
    }
    return ok ? 0 : refuse(why, PROTO_E_BAD_VALUE, "an order with bad waypoints");
}

/* One integer argument read into its field: true if within [lo, hi]. */
static bool get_int(struct bytes_r *r, const struct arg *a, void *p)
{
    switch (a->type) {
    case ARG_U8:
    case ARG_I16: {
        int64_t v = a->type == ARG_U8 ? (int64_t)bytes_get(r, 1) : (int16_t)bytes_get(r, 2);
        *(int *)p = (int)v;
        return v >= a->lo && (v < 0 || (uint64_t)v <= a->hi);
    }
    case ARG_U32:
        *(uint32_t *)p = (uint32_t)bytes_get(r, 4);
        return *(uint32_t *)p >= (uint64_t)a->lo && *(uint32_t *)p <= a->hi;
    default: /* ARG_U64 */
        *(uint64_t *)p = bytes_get(r, 8);
        return *(uint64_t *)p >= (uint64_t)a->lo && *(uint64_t *)p <= a->hi;
    }
}

/* One argument of a command read into c (or *obstacle): true if its value
 * is within what the room accepts. */
static bool get_arg(struct bytes_r *r, const struct arg *a, struct proto_command *c,
                    uint32_t *obstacle)
{
    void *p = (char *)c + a->at;
    switch (a->type) {
    case ARG_F32:
    case ARG_F32_NONNEG: {
        float v = *(float *)p = bytes_get_f32(r);
        return isfinite(v) && (a->type == ARG_F32 || v >= 0.0f);
    }
    case ARG_OBSTACLE:
        *obstacle = (uint32_t)bytes_get(r, 4);
        return *obstacle >= 1;
    case ARG_GIVEN:
        *(int *)p = 1;
        return true;
    default:
        return get_int(r, a, p);
    }
}

/* The arguments of rec->cmd.kind, as its row says. */
static int get_args(struct bytes_r *r, struct proto_command *c, uint32_t *obstacle,
                    const char **why)
{
    const struct arg *a = rows[c->kind].args;
    for (const struct arg *end = a + ARGS_MAX; a < end && a->type != ARG_END; a++) {
        int rc = 0;
        if (a->type == ARG_PARAMS)
            return get_params(r, (struct proto_params_args *)((char *)c + a->at), why);
        if (a->type == ARG_TEXT) {
            char *t = (char *)c + a->at;
            size_t n = (size_t)bytes_get(r, 2);
            if (n > PROTO_GAME_MAX || n > r->len - r->at)
                return refuse(why, PROTO_E_BAD_VALUE, "a game command with a text too long");
            bytes_get_str(r, t, n);
            if (strlen(t) != n)
                return refuse(why, PROTO_E_BAD_VALUE, "a game command with a NUL in its text");
            continue;
        }
        if (a->type == ARG_SELECTION || a->type == ARG_WAYPOINTS) {
            void *p = (char *)c + a->at;
            rc = a->type == ARG_SELECTION ? get_selection(r, p, why) : get_waypoints(r, p, why);
            if (rc < 0)
                return rc;
            continue;
        }
        if (!get_arg(r, a, c, obstacle))
            return refuse(why, PROTO_E_BAD_VALUE, "a command with an argument out of range");
    }
    return 0;
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

static int get_script(struct bytes_r *r, struct reclog_record *rec, const char **why)
{
    rec->tick = bytes_get(r, 8);
    size_t nl = (size_t)bytes_get(r, 1);
    if (nl == 0 || nl > RECLOG_SCRIPT_NAME_MAX)
        return refuse(why, PROTO_E_BAD_VALUE, "a SCRIPT record with a bad name");
    bytes_get_str(r, rec->script_name, nl);
    rec->script_len = (size_t)bytes_get(r, 4);
    if (r->short_read || strlen(rec->script_name) != nl || rec->script_len > RECLOG_SCRIPT_MAX ||
        rec->script_len != r->len - r->at)
        return refuse(why, PROTO_E_BAD_VALUE, "a malformed SCRIPT record");
    rec->script = (const char *)bytes_take(r, rec->script_len);
    if (memchr(rec->script, '\0', rec->script_len))
        return refuse(why, PROTO_E_BAD_VALUE, "a SCRIPT record with a NUL in its text");
    return 0;
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
    case RECLOG_SCRIPT:
        rc = get_script(&r, rec, why);
        break;
    case RECLOG_RESUME:
        rec->tick = bytes_get(&r, 8);
        rec->term = bytes_get(&r, 8);
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
