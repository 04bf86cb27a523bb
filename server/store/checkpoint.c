/*
 * checkpoint.c — a room's state to bytes and back (see checkpoint.h; the
 * layout is server/store/FILES.md §2).
 *
 * The fixed header says how long every variable part is, so decoding
 * checks the total length before it reads a part, then the checksum over
 * everything, then each part's rules; the world state is checked by the
 * flocking core (sim_state_check), which knows its rules.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "checkpoint.h"

#include "bytes.h"
#include "sim_state.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

static const uint8_t MAGIC[8] = {'F', 'L', 'O', 'C', 'K', 'C', 'K', 'P'};

#define HEADER_BYTES 60
#define TEAM_BYTES   (4 + 8 + 8 + SECRET_TOKEN_LEN + PROTO_NAME_MAX)
#define OWNER_BYTES  12
#define CRC_BYTES    4

/* ---- sizes ------------------------------------------------------------------ */

static size_t size_of(size_t room, size_t build, size_t password, size_t teams, size_t owners,
                      size_t world)
{
    return HEADER_BYTES + room + build + password + teams * TEAM_BYTES + owners * OWNER_BYTES +
           world + CRC_BYTES;
}

/* Bytes of the script section (§2.3). */
static size_t script_bytes(const struct ckpt *c)
{
    size_t n = strlen(c->script);
    return 1 + (n ? n + 4 + c->script_len + 4 + c->script_state_len : 0);
}

size_t ckpt_size(const struct ckpt *c)
{
    return size_of(strlen(c->room), strlen(c->build), strlen(c->password), c->max_teams,
                   c->owner_count, c->world_len) +
           script_bytes(c);
}

size_t ckpt_max_size(uint32_t capacity, uint32_t max_obstacles)
{
    return size_of(PROTO_ROOM_MAX, CKPT_BUILD_MAX, PROTO_TOKEN_MAX, CKPT_TEAMS_MAX, max_obstacles,
                   sim_state_max_size(capacity, max_obstacles)) +
           1 + CKPT_SCRIPT_NAME_MAX + 8 + 2 * (size_t)CKPT_SCRIPT_MAX;
}

/* ---- encode ----------------------------------------------------------------- */

static void put_team(struct bytes_w *w, const struct ckpt_team *t)
{
    uint8_t name[PROTO_NAME_MAX] = {0}, rejoin[SECRET_TOKEN_LEN] = {0};
    size_t nl = strnlen(t->name, PROTO_NAME_MAX), rl = strnlen(t->rejoin, SECRET_TOKEN_LEN);
    memcpy(name, t->name, nl);
    memcpy(rejoin, t->rejoin, rl);
    bytes_put(w, (uint64_t)t->state, 1);
    bytes_put(w, nl, 1);
    bytes_put(w, rl, 1);
    bytes_put(w, 0, 1);
    bytes_put(w, t->owner, 8);
    bytes_put(w, (uint64_t)t->grace_left_ns, 8);
    bytes_put_mem(w, rejoin, sizeof rejoin);
    bytes_put_mem(w, name, sizeof name);
}

static void put_header(struct bytes_w *w, const struct ckpt *c, size_t total)
{
    bytes_put_mem(w, MAGIC, sizeof MAGIC);
    bytes_put(w, CKPT_VERSION, 2);
    bytes_put(w, 0, 2);
    bytes_put(w, total, 4);
    bytes_put(w, c->seq, 4);
    bytes_put(w, c->steps_pending, 4);
    bytes_put(w, (uint64_t)c->wall_us, 8);
    bytes_put_f64(w, c->tick_hz);
    bytes_put(w, c->boids, 4);
    bytes_put(w, (uint64_t)c->mode, 1);
    bytes_put(w, c->paused ? 1 : 0, 1);
    bytes_put(w, strlen(c->room), 1);
    bytes_put(w, strlen(c->build), 1);
    bytes_put(w, strlen(c->password), 2);
    bytes_put(w, c->max_teams, 2);
    bytes_put(w, c->owner_count, 4);
    bytes_put(w, c->world_len, 4);
}

int ckpt_encode(const struct ckpt *c, uint8_t *buf, size_t cap)
{
    size_t total = ckpt_size(c);
    if (strlen(c->room) > PROTO_ROOM_MAX || strlen(c->build) > CKPT_BUILD_MAX ||
        strlen(c->password) > PROTO_TOKEN_MAX || c->max_teams > CKPT_TEAMS_MAX ||
        strlen(c->script) > CKPT_SCRIPT_NAME_MAX || c->script_len > CKPT_SCRIPT_MAX ||
        c->script_state_len > CKPT_SCRIPT_MAX || total > UINT32_MAX || total > INT32_MAX)
        return PROTO_E_BAD_VALUE;
    if (cap < total)
        return PROTO_E_NOSPACE;
    struct bytes_w w = {.buf = buf, .cap = cap};
    put_header(&w, c, total);
    bytes_put_mem(&w, c->room, strlen(c->room));
    bytes_put_mem(&w, c->build, strlen(c->build));
    bytes_put_mem(&w, c->password, strlen(c->password));
    for (uint32_t t = 1; t <= c->max_teams; t++)
        put_team(&w, &c->teams[t]);
    for (uint32_t k = 0; k < c->owner_count; k++) {
        struct ckpt_owner o;
        ckpt_owner(c, k, &o);
        bytes_put(&w, o.id, 4);
        bytes_put(&w, o.owner, 8);
    }
    bytes_put_mem(&w, c->world, c->world_len);
    size_t sn = strlen(c->script);
    bytes_put(&w, sn, 1);
    if (sn) {
        bytes_put_mem(&w, c->script, sn);
        bytes_put(&w, c->script_len, 4);
        bytes_put_mem(&w, c->script_text, c->script_len);
        bytes_put(&w, c->script_state_len, 4);
        bytes_put_mem(&w, c->script_state, c->script_state_len);
    }
    bytes_put(&w, crc32_z(0, buf, w.len), 4);
    return w.overflow ? PROTO_E_NOSPACE : (int)total;
}

void ckpt_owner(const struct ckpt *c, uint32_t i, struct ckpt_owner *out)
{
    if (c->owners) {
        *out = c->owners[i];
        return;
    }
    const uint8_t *p = c->owner_bytes + (size_t)i * OWNER_BYTES;
    *out = (struct ckpt_owner){(uint32_t)bytes_le_get(p, 4), bytes_le_get(p + 4, 8)};
}

/* ---- decode ------------------------------------------------------------------ */

static int refuse(const char **why, int code, const char *reason)
{
    if (why)
        *why = reason;
    return code;
}

/* No control characters (nor DEL) in s[0..n). */
static int is_printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

static int is_room_name(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && strspn(s, PROTO_ROOM_CHARS) == n;
}

static int is_token(const char *s)
{
    return strlen(s) == SECRET_TOKEN_LEN && strspn(s, "0123456789abcdef") == SECRET_TOKEN_LEN;
}

/* The header's lengths, checked against the limits and the total. */
struct lengths {
    uint64_t version;
    size_t room, build, password, teams, owners, world;
};

static int read_header(struct bytes_r *r, size_t len, struct ckpt *c, struct lengths *n,
                       const char **why)
{
    size_t head = len < sizeof MAGIC ? len : sizeof MAGIC;
    if (head && memcmp(r->buf, MAGIC, head) != 0)
        return refuse(why, PROTO_E_BAD_MAGIC, "not a flockd checkpoint");
    if (len < HEADER_BYTES + CRC_BYTES)
        return refuse(why, PROTO_E_TRUNCATED, "cut short inside its header");
    bytes_take(r, sizeof MAGIC);
    n->version = bytes_get(r, 2);
    if (n->version != 1 && n->version != CKPT_VERSION)
        return refuse(why, PROTO_E_BAD_VERSION, "a checkpoint of another format version");
    uint64_t reserved = bytes_get(r, 2), total = bytes_get(r, 4);
    if (len < total)
        return refuse(why, PROTO_E_TRUNCATED, "shorter than its header says (cut short)");
    if (len > total)
        return refuse(why, PROTO_E_BAD_LENGTH, "longer than its header says");
    c->seq = (uint32_t)bytes_get(r, 4);
    c->steps_pending = (uint32_t)bytes_get(r, 4);
    c->wall_us = (int64_t)bytes_get(r, 8);
    c->tick_hz = bytes_get_f64(r);
    c->boids = (uint32_t)bytes_get(r, 4);
    c->mode = (enum proto_mode)bytes_get(r, 1);
    uint64_t flags = bytes_get(r, 1);
    c->paused = (int)(flags & 1);
    uint64_t version = n->version;
    *n = (struct lengths){.version = version, .room = bytes_get(r, 1), .build = bytes_get(r, 1)};
    n->password = bytes_get(r, 2);
    n->teams = c->max_teams = (uint32_t)bytes_get(r, 2);
    n->owners = c->owner_count = (uint32_t)bytes_get(r, 4);
    n->world = c->world_len = bytes_get(r, 4);
    if (reserved || flags > 1)
        return refuse(why, PROTO_E_BAD_VALUE, "reserved bits set");
    if (crc32_z(0, r->buf, len - CRC_BYTES) != bytes_le_get(r->buf + len - CRC_BYTES, 4))
        return refuse(why, PROTO_E_HASH_MISMATCH, "its checksum does not match (corrupt)");
    return 0;
}

static int check_lengths(const struct lengths *n, size_t len, const char **why)
{
    if (n->room > PROTO_ROOM_MAX || n->build > CKPT_BUILD_MAX || n->password > PROTO_TOKEN_MAX ||
        n->teams > CKPT_TEAMS_MAX)
        return refuse(why, PROTO_E_BAD_VALUE, "a name, token or count beyond its limit");
    size_t parts = size_of(n->room, n->build, n->password, n->teams, n->owners, n->world);
    if (n->version == 1 ? parts != len : parts + 1 > len)
        return refuse(why, PROTO_E_BAD_VALUE, "its parts do not add up to its length");
    return 0;
}

static int read_strings(struct bytes_r *r, const struct lengths *n, struct ckpt *c,
                        const char **why)
{
    bytes_get_str(r, c->room, n->room);
    bytes_get_str(r, c->build, n->build);
    bytes_get_str(r, c->password, n->password);
    if (strlen(c->room) != n->room || !is_room_name(c->room))
        return refuse(why, PROTO_E_BAD_VALUE, "a bad room name");
    if (strlen(c->build) != n->build || !is_printable(c->build, n->build) ||
        strlen(c->password) != n->password || !is_printable(c->password, n->password))
        return refuse(why, PROTO_E_BAD_VALUE, "a bad build id or password");
    if (c->mode != PROTO_MODE_SANDBOX && c->mode != PROTO_MODE_RTS)
        return refuse(why, PROTO_E_BAD_VALUE, "an unknown room mode");
    if (!(c->tick_hz >= 1.0 && c->tick_hz <= 1000.0))
        return refuse(why, PROTO_E_BAD_VALUE, "a tick rate outside [1, 1000]");
    return 0;
}

/* The zeros a team's token and name are padded with (FILES.md §2.2). */
static const uint8_t
    TEAM_PADDING[SECRET_TOKEN_LEN > PROTO_NAME_MAX ? SECRET_TOKEN_LEN : PROTO_NAME_MAX];

static int read_team(struct bytes_r *r, struct ckpt_team *t, const char **why)
{
    uint64_t state = bytes_get(r, 1), nl = bytes_get(r, 1), rl = bytes_get(r, 1);
    uint64_t pad = bytes_get(r, 1);
    t->owner = bytes_get(r, 8);
    t->grace_left_ns = (int64_t)bytes_get(r, 8);
    const uint8_t *rejoin = bytes_take(r, SECRET_TOKEN_LEN), *name = bytes_take(r, PROTO_NAME_MAX);
    if (!rejoin || !name || state > CKPT_TEAM_WAITING || nl > PROTO_NAME_MAX ||
        rl > SECRET_TOKEN_LEN || pad ||
        memcmp(rejoin + rl, TEAM_PADDING, SECRET_TOKEN_LEN - rl) != 0 ||
        memcmp(name + nl, TEAM_PADDING, PROTO_NAME_MAX - nl) != 0)
        return refuse(why, PROTO_E_BAD_VALUE, "a malformed team");
    t->state = (enum ckpt_team_state)state;
    memcpy(t->rejoin, rejoin, rl);
    t->rejoin[rl] = '\0';
    memcpy(t->name, name, nl);
    t->name[nl] = '\0';
    int free_ok = t->owner == 0 && rl == 0 && nl == 0 && t->grace_left_ns == 0;
    int taken_ok = t->owner != 0 && is_token(t->rejoin) && strlen(t->name) == nl &&
                   is_printable(t->name, nl) && t->grace_left_ns >= 0;
    if (t->state == CKPT_TEAM_FREE ? !free_ok : !taken_ok)
        return refuse(why, PROTO_E_BAD_VALUE, "a team with a bad owner, token, name or grace");
    return 0;
}

static int read_owners(struct bytes_r *r, struct ckpt *c, const char **why)
{
    c->owners = NULL;
    c->owner_bytes = bytes_take(r, (size_t)c->owner_count * OWNER_BYTES);
    uint32_t last = 0;
    for (uint32_t k = 0; k < c->owner_count; k++) {
        struct ckpt_owner o;
        ckpt_owner(c, k, &o);
        if (o.id <= last)
            return refuse(why, PROTO_E_BAD_VALUE, "obstacle owners out of order");
        last = o.id;
    }
    return 0;
}

/* The world state, and its agreement with the room's fields. */
static int check_world(struct ckpt *c, const uint8_t *world, const char **why)
{
    struct sim_state_info info;
    if (sim_state_check(world, c->world_len, &info, why) < 0)
        return PROTO_E_BAD_VALUE;
    c->world = world;
    if (c->owner_count > info.obstacle_count)
        return refuse(why, PROTO_E_BAD_VALUE, "more obstacle owners than obstacles");
    if (info.cfg.dt != (float)(1.0 / c->tick_hz))
        return refuse(why, PROTO_E_BAD_VALUE, "the world's time step is not the room's tick");
    if (c->boids > info.cfg.capacity)
        return refuse(why, PROTO_E_BAD_VALUE, "a reset boid count above the world's capacity");
    return 0;
}

/* Version 2's script section (§2.3), which must end at the CRC. */
static int read_script(struct bytes_r *r, size_t len, struct ckpt *c, const char **why)
{
    size_t n = (size_t)bytes_get(r, 1);
    if (n > CKPT_SCRIPT_NAME_MAX)
        return refuse(why, PROTO_E_BAD_VALUE, "a script name beyond its limit");
    if (n) {
        bytes_get_str(r, c->script, n);
        c->script_len = (size_t)bytes_get(r, 4);
        c->script_text =
            c->script_len <= CKPT_SCRIPT_MAX ? (const char *)bytes_take(r, c->script_len) : NULL;
        c->script_state_len = (size_t)bytes_get(r, 4);
        c->script_state =
            c->script_state_len <= CKPT_SCRIPT_MAX ? bytes_take(r, c->script_state_len) : NULL;
        if (!c->script_text || !c->script_state || strlen(c->script) != n ||
            !is_room_name(c->script) || memchr(c->script_text, '\0', c->script_len))
            return refuse(why, PROTO_E_BAD_VALUE, "a malformed script section");
    }
    if (r->short_read || r->at != len - CRC_BYTES)
        return refuse(why, PROTO_E_BAD_VALUE, "its parts do not add up to its length");
    return 0;
}

int ckpt_decode(const uint8_t *buf, size_t len, struct ckpt *out, const char **why)
{
    struct ckpt c;
    memset(&c, 0, sizeof c);
    struct bytes_r r = {.buf = buf, .len = len};
    struct lengths n;
    int rc = read_header(&r, len, &c, &n, why);
    if (rc == 0)
        rc = check_lengths(&n, len, why);
    if (rc == 0)
        rc = read_strings(&r, &n, &c, why);
    for (uint32_t t = 1; rc == 0 && t <= c.max_teams; t++)
        rc = read_team(&r, &c.teams[t], why);
    if (rc == 0)
        rc = read_owners(&r, &c, why);
    if (rc == 0)
        rc = check_world(&c, bytes_take(&r, c.world_len), why);
    if (rc == 0 && n.version >= 2)
        rc = read_script(&r, len, &c, why);
    if (rc < 0)
        return rc;
    *out = c;
    return 0;
}
