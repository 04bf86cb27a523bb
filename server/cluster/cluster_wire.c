/*
 * cluster_wire.c — the messages between flockd nodes as bytes (see
 * cluster_wire.h; layouts in server/cluster/CLUSTER.md §3).
 */
#include "cluster_wire.h"

#include "bytes.h"
#include "proto_json.h"
#include "proto_snapshot.h"
#include "proto_v2.h"
#include "params.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_FRAME  "FKCF"
#define MAGIC_CMD    "FKCC"
#define MAGIC_REPLY  "FKCR"
#define MAGIC_WANT   "FKCW"
#define MAGIC_PARAMS "FKCP"
#define MAGIC_ASK    "FKCA"

bool cluster_is_token(const char *s, size_t len, size_t max)
{
    if (len < 1 || len > max)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

bool cluster_is_room_name(const char *name, size_t len)
{
    return cluster_is_token(name, len, PROTO_ROOM_MAX);
}

/* Reads magic and version: 0, or the code that refuses the message. */
static int check_version(struct bytes_r *r, const char *magic, uint16_t wanted)
{
    const uint8_t *m = bytes_take(r, 4);
    uint16_t version = (uint16_t)bytes_get(r, 2);
    if (r->short_read)
        return PROTO_E_TRUNCATED;
    if (memcmp(m, magic, 4) != 0)
        return PROTO_E_BAD_MAGIC;
    return version == wanted ? 0 : PROTO_E_BAD_VERSION;
}

static int check_head(struct bytes_r *r, const char *magic)
{
    return check_version(r, magic, CLUSTER_WIRE_VERSION);
}

static void put_version(struct bytes_w *w, const char *magic, uint16_t version)
{
    bytes_put_mem(w, magic, 4);
    bytes_put(w, version, 2);
}

static void put_head(struct bytes_w *w, const char *magic)
{
    put_version(w, magic, CLUSTER_WIRE_VERSION);
}

/* A room name of n bytes into room: 0, or PROTO_E_BAD_VALUE. */
static int get_room(struct bytes_r *r, size_t n, char *room)
{
    const uint8_t *p = bytes_take(r, n);
    if (!p)
        return PROTO_E_TRUNCATED;
    if (!cluster_is_room_name((const char *)p, n))
        return PROTO_E_BAD_VALUE;
    memcpy(room, p, n);
    room[n] = '\0';
    return 0;
}

/* ---- frames ---------------------------------------------------------------------- */

_Static_assert(CLUSTER_FRAME_HEADER == 45 + 3 * PROTO_V2_PLAN_MAX + 4 * FRAME_KINDS,
               "a frame message's header: fields, plan, part lengths (CLUSTER.md §3.1)");

size_t cluster_frame_size(const struct frame *f)
{
    size_t n = CLUSTER_FRAME_HEADER;
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        n += f->part[k].len;
    return n;
}

int cluster_frame_encode(const struct frame *f, uint64_t term, uint8_t *buf, size_t cap)
{
    struct bytes_w w = {.buf = buf, .cap = cap};
    put_version(&w, MAGIC_FRAME, CLUSTER_KIND_VERSION);
    bytes_put(&w, 0, 2);
    bytes_put(&w, term, 8);
    bytes_put(&w, f->seq, 8);
    bytes_put(&w, f->tick, 8);
    bytes_put(&w, (uint64_t)f->time_us, 8);
    bytes_put(&w, f->plan.seq, 4);
    bytes_put(&w, f->plan.count, 1);
    for (unsigned k = 0; k < PROTO_V2_PLAN_MAX; k++) {
        bool used = k < f->plan.count;
        bytes_put(&w, used ? f->kind[k] : 0, 1);
        bytes_put(&w, used ? f->plan.frame[k].gap1 : 0, 1);
        bytes_put(&w, used ? f->plan.frame[k].gap0 : 0, 1);
    }
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        bytes_put(&w, f->part[k].len, 4);
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        bytes_put_mem(&w, f->data + f->part[k].off, f->part[k].len);
    return w.overflow ? PROTO_E_NOSPACE : (int)w.len;
}

/* The header's plan into f: 0, or PROTO_E_BAD_VALUE (a count, kind or gap
 * out of range, or a kind named twice). */
static int get_plan(struct bytes_r *r, struct frame *f)
{
    f->plan.seq = (uint32_t)bytes_get(r, 4);
    f->plan.count = (unsigned)bytes_get(r, 1);
    int bad = f->plan.count < 1 || f->plan.count > PROTO_V2_PLAN_MAX;
    unsigned seen = 0;
    for (unsigned k = 0; k < PROTO_V2_PLAN_MAX; k++) {
        uint8_t kind = (uint8_t)bytes_get(r, 1);
        uint8_t gap1 = (uint8_t)bytes_get(r, 1), gap0 = (uint8_t)bytes_get(r, 1);
        if (k >= f->plan.count) {
            bad |= kind != 0 || gap1 != 0 || gap0 != 0;
            continue;
        }
        bad |= kind < FRAME_KEY || kind >= FRAME_KINDS || (seen & 1u << kind) ||
               gap1 > PROTO_V2_HISTORY || gap0 > PROTO_V2_HISTORY || (k == 0) != (gap1 == 0);
        seen |= 1u << (kind < 32 ? kind : 0);
        f->kind[k] = kind;
        f->plan.frame[k] = (struct proto_v2_plan_frame){gap1, gap0};
    }
    return bad ? PROTO_E_BAD_VALUE : 0;
}

/* The plan entry of a version 2 kind, or PROTO_E_NOT_FOUND if the plan
 * has none. */
static int plan_entry(const struct frame *f, unsigned kind)
{
    for (unsigned k = 0; k < f->plan.count; k++)
        if (f->kind[k] == kind)
            return (int)k;
    return PROTO_E_NOT_FOUND;
}

/* Checks the header of every part of f against f: 0, or the code that
 * refuses it. The boid count and pause flag into *meta. */
static int check_parts(const struct frame *f, struct cluster_frame_meta *meta)
{
    for (unsigned k = 0; k < FRAME_KINDS; k++) {
        const uint8_t *p = f->data + f->part[k].off;
        size_t n = f->part[k].len;
        if (!n)
            continue;
        struct proto_snapshot_header common;
        if (k == FRAME_V1) {
            int rc = proto_snapshot_decode_header(p, n, &common);
            if (rc < 0)
                return rc;
        } else {
            struct proto_v2_header h2;
            int rc = proto_v2_decode_header(p, n, &h2);
            int e = plan_entry(f, k);
            if (rc < 0)
                return rc;
            if (e < 0 || h2.seq != f->plan.seq || h2.gap1 != f->plan.frame[e].gap1 ||
                h2.gap0 != f->plan.frame[e].gap0)
                return PROTO_E_BAD_VALUE;
            common = proto_v2_common_header(&h2);
        }
        if (common.tick != f->tick)
            return PROTO_E_BAD_VALUE;
        meta->boids = common.boid_count;
        meta->paused = common.flags & 1;
    }
    return 0;
}

struct frame *cluster_frame_decode(const uint8_t *buf, size_t len, size_t pre,
                                   struct cluster_frame_meta *meta, int *rc)
{
    struct bytes_r r = {.buf = buf, .len = len};
    struct frame h = {.pre = pre};
    *meta = (struct cluster_frame_meta){0};
    uint64_t *term = &meta->term;
    *rc = check_version(&r, MAGIC_FRAME, CLUSTER_KIND_VERSION);
    if (*rc < 0)
        return NULL;
    int flags = (int)bytes_get(&r, 2);
    *term = bytes_get(&r, 8);
    h.seq = bytes_get(&r, 8);
    h.tick = bytes_get(&r, 8);
    h.time_us = (int64_t)bytes_get(&r, 8);
    *rc = get_plan(&r, &h);
    size_t total = 0, lens[FRAME_KINDS];
    for (unsigned k = 0; k < FRAME_KINDS; k++) {
        lens[k] = (size_t)bytes_get(&r, 4);
        total += lens[k];
    }
    if (r.short_read) {
        *rc = PROTO_E_TRUNCATED;
        return NULL;
    }
    if (*rc == 0 && (flags != 0 || h.seq == 0 || *term == 0))
        *rc = PROTO_E_BAD_VALUE;
    if (*rc == 0 && total != len - r.at)
        *rc = total > len - r.at ? PROTO_E_TRUNCATED : PROTO_E_BAD_LENGTH;
    if (*rc < 0)
        return NULL;
    struct frame *f = malloc(sizeof *f + total + pre * FRAME_KINDS);
    if (!f) {
        *rc = PROTO_E_INTERNAL;
        return NULL;
    }
    memcpy(f, &h, sizeof h);
    atomic_init(&f->refs, 1);
    size_t at = 0;
    for (unsigned k = 0; k < FRAME_KINDS; k++) {
        f->part[k] = (struct frame_part){.off = 0, .len = 0};
        if (!lens[k])
            continue;
        memcpy(f->data + at + pre, bytes_take(&r, lens[k]), lens[k]);
        frame_set_part(f, k, at + pre, lens[k]);
        at += pre + lens[k];
    }
    *rc = check_parts(f, meta);
    if (*rc < 0) {
        frame_release(f);
        return NULL;
    }
    return f;
}

/* ---- commands -------------------------------------------------------------------- */

int cluster_cmd_encode(const struct cluster_cmd *c, uint8_t *buf, size_t cap)
{
    struct bytes_w w = {.buf = buf, .cap = cap};
    size_t room_len = strlen(c->room), id_len = strlen(c->id);
    put_version(&w, MAGIC_CMD, CLUSTER_CMD_VERSION);
    bytes_put(&w, (uint16_t)(int16_t)c->refused, 2);
    bytes_put(&w, c->who.client, 8);
    bytes_put(&w, c->who.owner, 8);
    bytes_put(&w, (uint64_t)c->who.role, 1);
    bytes_put(&w, c->who.protocol, 1);
    bytes_put(&w, (uint16_t)(int16_t)c->who.team, 2);
    bytes_put(&w, room_len, 1);
    bytes_put(&w, id_len, 2);
    bytes_put(&w, c->text_len, 4);
    bytes_put(&w, c->who.origin, 8);
    bytes_put_mem(&w, c->room, room_len);
    bytes_put_mem(&w, c->id, id_len);
    bytes_put_mem(&w, c->text, c->text_len);
    return w.overflow ? PROTO_E_NOSPACE : (int)w.len;
}

int cluster_cmd_decode(const uint8_t *buf, size_t len, struct cluster_cmd *c)
{
    struct bytes_r r = {.buf = buf, .len = len};
    int rc = check_version(&r, MAGIC_CMD, CLUSTER_CMD_VERSION);
    if (rc < 0)
        return rc;
    memset(c, 0, sizeof *c);
    c->refused = (int16_t)bytes_get(&r, 2);
    c->who.client = bytes_get(&r, 8);
    c->who.owner = bytes_get(&r, 8);
    unsigned role = (unsigned)bytes_get(&r, 1);
    c->who.protocol = (unsigned)bytes_get(&r, 1);
    c->who.team = (int16_t)bytes_get(&r, 2);
    size_t room_len = (size_t)bytes_get(&r, 1), id_len = (size_t)bytes_get(&r, 2);
    c->text_len = (size_t)bytes_get(&r, 4);
    c->who.origin = bytes_get(&r, 8);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (!(c->who.origin & PROTO_ORIGIN_BIT) || role > PROTO_ROLE_ADMIN || c->who.protocol > 2 ||
        c->who.team < -1 || c->who.team > 255 || c->who.client == 0 || c->refused > 0 ||
        c->refused < PROTO_E_INTERNAL || id_len >= PROTO_ID_TEXT_MAX ||
        c->text_len > CLUSTER_TEXT_MAX || (c->refused && c->text_len >= PROTO_MESSAGE_MAX))
        return PROTO_E_BAD_VALUE;
    c->who.role = (enum proto_role)role;
    if ((rc = get_room(&r, room_len, c->room)) < 0)
        return rc;
    bytes_get_str(&r, c->id, id_len);
    c->text = (const char *)bytes_take(&r, c->text_len);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (r.at != len)
        return PROTO_E_BAD_LENGTH;
    /* The id goes into replies as it is: one JSON scalar, or none. */
    if (strlen(c->id) != id_len || (id_len && !proto_json_is_scalar(c->id)))
        return PROTO_E_BAD_VALUE;
    return 0;
}

/* ---- replies ---------------------------------------------------------------------- */

int cluster_reply_encode(const struct cluster_reply *rep, uint8_t *buf, size_t cap)
{
    struct bytes_w w = {.buf = buf, .cap = cap};
    size_t room_len = strlen(rep->room);
    put_version(&w, MAGIC_REPLY, CLUSTER_CMD_VERSION);
    bytes_put(&w, (uint64_t)rep->kind, 1);
    bytes_put(&w, room_len, 1);
    bytes_put(&w, rep->client, 8);
    bytes_put(&w, rep->text_len, 4);
    bytes_put(&w, rep->origin, 8);
    bytes_put_mem(&w, rep->room, room_len);
    bytes_put_mem(&w, rep->text, rep->text_len);
    return w.overflow ? PROTO_E_NOSPACE : (int)w.len;
}

int cluster_reply_decode(const uint8_t *buf, size_t len, struct cluster_reply *rep)
{
    struct bytes_r r = {.buf = buf, .len = len};
    int rc = check_version(&r, MAGIC_REPLY, CLUSTER_CMD_VERSION);
    if (rc < 0)
        return rc;
    memset(rep, 0, sizeof *rep);
    unsigned kind = (unsigned)bytes_get(&r, 1);
    size_t room_len = (size_t)bytes_get(&r, 1);
    rep->client = bytes_get(&r, 8);
    rep->text_len = (size_t)bytes_get(&r, 4);
    rep->origin = bytes_get(&r, 8);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (!(rep->origin & PROTO_ORIGIN_BIT) || kind > ROOM_REPLY_KEYFRAME || rep->client == 0 ||
        rep->text_len < 2 || rep->text_len > CLUSTER_TEXT_MAX)
        return PROTO_E_BAD_VALUE;
    rep->kind = (enum room_reply_kind)kind;
    if ((rc = get_room(&r, room_len, rep->room)) < 0)
        return rc;
    rep->text = (const char *)bytes_take(&r, rep->text_len);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (r.at != len)
        return PROTO_E_BAD_LENGTH;
    /* A reply is one JSON object with a "type", as the owner's room wrote
     * it; nothing else (no NUL, no second value) reaches a client. */
    if (rep->text[0] != '{' || memchr(rep->text, '\0', rep->text_len))
        return PROTO_E_BAD_VALUE;
    const char *end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(rep->text, rep->text_len, &end, 0);
    bool ok = json && end == rep->text + rep->text_len && cJSON_IsObject(json) &&
              cJSON_IsString(cJSON_GetObjectItemCaseSensitive(json, "type"));
    cJSON_Delete(json);
    return ok ? 0 : PROTO_E_BAD_VALUE;
}

/* ---- wants ------------------------------------------------------------------------ */

int cluster_want_encode(unsigned kinds, uint8_t *buf, size_t cap)
{
    struct bytes_w w = {.buf = buf, .cap = cap};
    put_version(&w, MAGIC_WANT, CLUSTER_KIND_VERSION);
    bytes_put(&w, 0, 2);
    bytes_put(&w, kinds, 4);
    return w.overflow ? PROTO_E_NOSPACE : (int)w.len;
}

int cluster_want_decode(const uint8_t *buf, size_t len, unsigned *kinds)
{
    struct bytes_r r = {.buf = buf, .len = len};
    int rc = check_version(&r, MAGIC_WANT, CLUSTER_KIND_VERSION);
    if (rc < 0)
        return rc;
    unsigned zero = (unsigned)bytes_get(&r, 2);
    *kinds = (unsigned)bytes_get(&r, 4);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (zero != 0 || *kinds >= 1u << FRAME_KINDS)
        return PROTO_E_BAD_VALUE;
    return r.at == len ? 0 : PROTO_E_BAD_LENGTH;
}

/* ---- parameters ---- */

size_t cluster_params_size(void)
{
    return 12 + (size_t)SIM_GROUPS * (1 + 4 * sim_param_count());
}

/* Whether a and b hold the same bits in every parameter of the registry
 * (what the message carries): a group listed must differ from group 0. */
static bool is_same_group(const struct sim_params *a, const struct sim_params *b)
{
    struct sim_params x = *a, y = *b;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        if (memcmp(sim_param_field(&x, d), sim_param_field(&y, d), sizeof(float)) != 0)
            return false;
    }
    return true;
}

int cluster_params_encode(const struct sim_params values[SIM_GROUPS], uint8_t *buf, size_t cap)
{
    size_t n = sim_param_count(), groups = 0;
    for (unsigned g = 0; g < SIM_GROUPS; g++)
        groups += g == 0 || !is_same_group(&values[g], &values[0]);
    struct bytes_w w = {.buf = buf, .cap = cap};
    put_head(&w, MAGIC_PARAMS);
    bytes_put(&w, n, 1);
    bytes_put(&w, 0, 1);
    bytes_put(&w, groups, 2);
    bytes_put(&w, 0, 2);
    for (unsigned g = 0; g < SIM_GROUPS; g++) {
        if (g != 0 && is_same_group(&values[g], &values[0]))
            continue;
        bytes_put(&w, g, 1);
        struct sim_params v = values[g];
        for (size_t i = 0; i < n; i++)
            bytes_put_f32(&w, *sim_param_field(&v, sim_param_at(i)));
    }
    return w.overflow ? PROTO_E_NOSPACE : (int)w.len;
}

/* One group's values from r into *v, each checked against the registry:
 * 0, or the refusing code. */
static int get_group(struct bytes_r *r, struct sim_params *v)
{
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        float f = bytes_get_f32(r);
        if (r->short_read)
            return PROTO_E_TRUNCATED;
        if (!sim_param_valid(d, f))
            return PROTO_E_BAD_VALUE;
        *sim_param_field(v, d) = f;
    }
    return 0;
}

int cluster_params_decode(const uint8_t *buf, size_t len, struct sim_params values[SIM_GROUPS])
{
    struct bytes_r r = {.buf = buf, .len = len};
    int rc = check_head(&r, MAGIC_PARAMS);
    if (rc < 0)
        return rc;
    size_t n = (size_t)bytes_get(&r, 1);
    unsigned zero = (unsigned)bytes_get(&r, 1);
    size_t groups = (size_t)bytes_get(&r, 2);
    zero |= (unsigned)bytes_get(&r, 2);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (n != sim_param_count() || zero || groups < 1 || groups > SIM_GROUPS)
        return PROTO_E_BAD_VALUE;
    if (len - r.at != groups * (1 + 4 * n))
        return PROTO_E_BAD_LENGTH;
    struct sim_params got[SIM_GROUPS];
    int last = -1;
    for (size_t k = 0; k < groups; k++) {
        int g = (int)bytes_get(&r, 1);
        if (g <= last || (k == 0 && g != 0))
            return PROTO_E_BAD_VALUE; /* group 0 first, then increasing */
        if (k > 0)
            got[g] = got[0];
        if ((rc = get_group(&r, &got[g])) < 0)
            return rc;
        if (k > 0 && is_same_group(&got[g], &got[0]))
            return PROTO_E_BAD_VALUE; /* listed but the same as group 0 */
        for (int u = last + 1; u < g; u++)
            got[u] = got[0]; /* a group not listed has group 0's values */
        last = g;
    }
    for (int u = last + 1; u < SIM_GROUPS; u++)
        got[u] = got[0];
    memcpy(values, got, sizeof got);
    return 0;
}

int cluster_ask_encode(uint8_t *buf, size_t cap)
{
    struct bytes_w w = {.buf = buf, .cap = cap};
    put_head(&w, MAGIC_ASK);
    bytes_put(&w, 0, 2);
    return w.overflow ? PROTO_E_NOSPACE : (int)w.len;
}

int cluster_ask_decode(const uint8_t *buf, size_t len)
{
    struct bytes_r r = {.buf = buf, .len = len};
    int rc = check_head(&r, MAGIC_ASK);
    if (rc < 0)
        return rc;
    unsigned zero = (unsigned)bytes_get(&r, 2);
    if (r.short_read)
        return PROTO_E_TRUNCATED;
    if (zero != 0)
        return PROTO_E_BAD_VALUE;
    return r.at == len ? 0 : PROTO_E_BAD_LENGTH;
}
