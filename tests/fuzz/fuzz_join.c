/*
 * fuzz_join — the join command against an oracle written from the text of
 * PROTOCOL.md §5.2–§5.4 rather than from the parser.
 *
 * The input is two flag bytes, then up to four strings separated by 0xFF:
 * room, name, token and a free-form role. The harness builds
 *
 *   {"cmd":"join","id":..,"room":ROOM,"role":ROLE,"mode":..,"name":NAME,"token":TOKEN}
 *
 * with the flags choosing which members appear, the role (one of the three
 * names or the free-form string), the mode (absent, valid or not), whether
 * strings are escaped minimally or every character as a \u escape, the
 * member order and whitespace. It predicts the outcome: too_large over
 * max_message; bad_json for a NUL or invalid UTF-8 in any string; then, in
 * the parser's order, room 1..32 characters of [A-Za-z0-9_-], role one of
 * viewer/player/admin, mode sandbox/rts, name 0..32 and token 0..128 bytes
 * of printable UTF-8 (no U+0000–U+001F, U+007F–U+009F), lengths outside
 * their limits being out_of_range and other violations bad_arg. The parser
 * must agree; an accepted join must hold exactly the strings sent and come
 * back unchanged through proto_command_format and a second parse.
 *
 * One case is open: the protocol counts the room in characters, the parser
 * in bytes, so a room of at most 32 characters but more than 32 bytes (only
 * possible with characters that are refused anyway) may be out_of_range or
 * bad_arg. Either is accepted here.
 */
#include "fuzz_common.h"

#include "proto_command.h"

#include <string.h>

#define INPUT_MAX 8192
#define TEXT_MAX  (6 * INPUT_MAX + 512) /* every byte may become a \u00XX escape */
#define SEP       0xFF                  /* never part of valid UTF-8 */

/* First flag byte. */
#define F_ROLE       0x03 /* 0..2: viewer, player, admin; 3: the free-form string */
#define F_MODE       0x0C /* 0: absent, 1: sandbox, 2: rts, 3: "Sandbox" */
#define F_NAME       0x10
#define F_TOKEN      0x20
#define F_ESCAPE_ALL 0x40
#define F_REVERSE    0x80
/* Second flag byte. */
#define F_NO_ROOM 0x01
#define F_NO_ROLE 0x02
#define F_ID      0x04
#define F_SPACES  0x08

enum { S_ROOM, S_NAME, S_TOKEN, S_ROLE, S_COUNT };

struct str {
    const char *s;
    size_t n;
};

struct member {
    const char *key;
    struct str value;
    int raw; /* value is JSON text, not a string to escape */
};

struct plan {
    unsigned flags, flags2;
    struct str seg[S_COUNT];
    struct str role;  /* the role sent */
    const char *mode; /* NULL: absent */
    struct member members[8];
    size_t n_members;
};

struct text {
    char buf[TEXT_MAX];
    size_t len;
};

static const char *const role_names[] = {"viewer", "player", "admin"};
static const char *const mode_names[] = {NULL, "sandbox", "rts", "Sandbox"};

static struct str cstr(const char *s)
{
    return (struct str){s, strlen(s)};
}

static int str_eq(struct str a, const char *b)
{
    return a.n == strlen(b) && memcmp(a.s, b, a.n) == 0;
}

/* ---- building the message ----------------------------------------------- */

static void split(const uint8_t *data, size_t size, struct plan *p)
{
    size_t i = size < 2 ? size : 2;
    p->flags = size > 0 ? data[0] : 0;
    p->flags2 = size > 1 ? data[1] : 0;
    for (int k = 0; k < S_COUNT; k++) {
        const uint8_t *end = k < S_COUNT - 1 ? memchr(data + i, SEP, size - i) : NULL;
        size_t n = end ? (size_t)(end - (data + i)) : size - i;
        p->seg[k] = (struct str){(const char *)data + i, n};
        i += n + (end != NULL);
    }
    p->role = (p->flags & F_ROLE) == 3 ? p->seg[S_ROLE] : cstr(role_names[p->flags & F_ROLE]);
    p->mode = mode_names[(p->flags & F_MODE) >> 2];
}

static void add(struct plan *p, const char *key, struct str value, int raw)
{
    p->members[p->n_members++] = (struct member){key, value, raw};
}

static void plan_members(struct plan *p)
{
    add(p, "cmd", cstr("join"), 0);
    if (p->flags2 & F_ID)
        add(p, "id", cstr("\"join-1\""), 1);
    if (!(p->flags2 & F_NO_ROOM))
        add(p, "room", p->seg[S_ROOM], 0);
    if (!(p->flags2 & F_NO_ROLE))
        add(p, "role", p->role, 0);
    if (p->mode)
        add(p, "mode", cstr(p->mode), 0);
    if (p->flags & F_NAME)
        add(p, "name", p->seg[S_NAME], 0);
    if (p->flags & F_TOKEN)
        add(p, "token", p->seg[S_TOKEN], 0);
}

static void put(struct text *t, const char *s, size_t n)
{
    if (n > sizeof t->buf - 1 - t->len)
        fuzz_fail("harness text buffer too small");
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void put_u(struct text *t, uint32_t unit)
{
    static const char hex[] = "0123456789abcdef";
    char esc[6] = {
        '\\', 'u', hex[unit >> 12 & 15], hex[unit >> 8 & 15], hex[unit >> 4 & 15], hex[unit & 15]};
    put(t, esc, sizeof esc);
}

/* Every character as \uXXXX (a surrogate pair above U+FFFF); bytes that
 * are not UTF-8 go in raw, which makes the text invalid on purpose. */
static void put_all_escaped(struct text *t, struct str s)
{
    uint32_t cp;
    for (size_t i = 0, step; i < s.n; i += step) {
        step = fuzz_utf8_next(s.s + i, s.n - i, &cp);
        if (step == 0) {
            step = 1;
            put(t, s.s + i, 1);
        } else if (cp >= 0x10000) {
            put_u(t, 0xD800 + ((cp - 0x10000) >> 10));
            put_u(t, 0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else {
            put_u(t, cp);
        }
    }
}

/* Only what JSON requires: quote, backslash and control characters. */
static void put_min_escaped(struct text *t, struct str s)
{
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.s[i];
        if (c == '"' || c == '\\') {
            put(t, "\\", 1);
            put(t, s.s + i, 1);
        } else if (c < 0x20) {
            put_u(t, c);
        } else {
            put(t, s.s + i, 1);
        }
    }
}

static void put_string(struct text *t, struct str s, int all)
{
    put(t, "\"", 1);
    if (all)
        put_all_escaped(t, s);
    else
        put_min_escaped(t, s);
    put(t, "\"", 1);
}

static void build(const struct plan *p, struct text *t)
{
    const char *gap = p->flags2 & F_SPACES ? " \n\t" : "";
    t->len = 0;
    put(t, "{", 1);
    for (size_t k = 0; k < p->n_members; k++) {
        const struct member *m = &p->members[p->flags & F_REVERSE ? p->n_members - 1 - k : k];
        if (k)
            put(t, ",", 1);
        put(t, gap, strlen(gap));
        put_string(t, cstr(m->key), 0);
        put(t, gap, strlen(gap));
        put(t, ":", 1);
        put(t, gap, strlen(gap));
        if (m->raw)
            put(t, m->value.s, m->value.n);
        else
            put_string(t, m->value, p->flags & F_ESCAPE_ALL);
    }
    put(t, "}", 1);
    t->buf[t->len] = '\0';
}

/* ---- the oracle ----------------------------------------------------------- */

struct expect {
    int code, alt; /* the parser must return one of these */
};

/* The number of characters of s (valid UTF-8); *all_ok = every one passes ok(). */
static size_t chars(struct str s, int (*ok)(uint32_t), int *all_ok)
{
    size_t count = 0;
    uint32_t cp;
    *all_ok = 1;
    for (size_t i = 0, step; i < s.n; i += step, count++) {
        step = fuzz_utf8_next(s.s + i, s.n - i, &cp);
        if (step == 0) /* not reached: bad_json was decided first */
            fuzz_fail("oracle given invalid UTF-8");
        if (!ok(cp))
            *all_ok = 0;
    }
    return count;
}

static int room_char(uint32_t cp)
{
    return (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9') ||
           cp == '_' || cp == '-';
}

static int printable(uint32_t cp)
{
    return !(cp < 0x20 || (cp >= 0x7F && cp <= 0x9F));
}

static struct expect only(int code)
{
    return (struct expect){code, code};
}

/* name and token: a length in bytes, then printable characters. */
static int check_text(struct str s, size_t max)
{
    int ok;
    chars(s, printable, &ok);
    if (s.n > max)
        return PROTO_E_OUT_OF_RANGE;
    return ok ? 0 : PROTO_E_BAD_ARG;
}

static struct expect expect_room(struct str room)
{
    int ok;
    size_t n = chars(room, room_char, &ok);
    if (room.n == 0 || n > PROTO_ROOM_MAX)
        return only(PROTO_E_OUT_OF_RANGE);
    if (room.n > PROTO_ROOM_MAX) /* <= 32 characters, > 32 bytes: see the top */
        return (struct expect){PROTO_E_OUT_OF_RANGE, PROTO_E_BAD_ARG};
    return only(ok ? 0 : PROTO_E_BAD_ARG);
}

static struct expect expect(const struct plan *p, size_t len)
{
    if (len > PROTO_DEFAULT_MAX_MESSAGE)
        return only(PROTO_E_TOO_LARGE);
    for (size_t k = 0; k < p->n_members; k++) {
        struct str v = p->members[k].value;
        if (memchr(v.s, '\0', v.n) || !fuzz_utf8_valid(v.s, v.n))
            return only(PROTO_E_BAD_JSON);
    }
    if (p->flags2 & F_NO_ROOM)
        return only(PROTO_E_BAD_ARG);
    struct expect e = expect_room(p->seg[S_ROOM]);
    if (e.code != 0)
        return e;
    int role_ok = 0;
    for (int r = 0; r < 3; r++)
        role_ok |= str_eq(p->role, role_names[r]);
    if ((p->flags2 & F_NO_ROLE) || !role_ok)
        return only(PROTO_E_BAD_ARG);
    if (p->mode && strcmp(p->mode, "sandbox") != 0 && strcmp(p->mode, "rts") != 0)
        return only(PROTO_E_BAD_ARG);
    int rc = p->flags & F_NAME ? check_text(p->seg[S_NAME], PROTO_NAME_MAX) : 0;
    if (rc == 0 && (p->flags & F_TOKEN))
        rc = check_text(p->seg[S_TOKEN], PROTO_TOKEN_MAX);
    return only(rc);
}

/* ---- checking the parser ---------------------------------------------------- */

static void check_field(const char *what, const char *got, int has, struct str want, int sent)
{
    if (has != sent || (sent && !str_eq(want, got)))
        fuzz_fail("join %s came out as \"%s\" (present %d, sent %d)", what, got, has, sent);
}

/* The accepted join holds exactly what was sent. */
static void check_args(const struct plan *p, const struct proto_join_args *a)
{
    enum proto_mode mode = PROTO_MODE_ANY;
    if (p->mode)
        mode = strcmp(p->mode, "rts") == 0 ? PROTO_MODE_RTS : PROTO_MODE_SANDBOX;
    check_field("room", a->room, 1, p->seg[S_ROOM], 1);
    check_field("name", a->name, a->has_name, p->seg[S_NAME], !!(p->flags & F_NAME));
    check_field("token", a->token, a->has_token, p->seg[S_TOKEN], !!(p->flags & F_TOKEN));
    if ((unsigned)a->role > 2 || !str_eq(p->role, role_names[a->role]) || a->mode != mode)
        fuzz_fail("join role %d, mode %d do not match what was sent", (int)a->role, (int)a->mode);
}

static int same_join(const struct proto_join_args *a, const struct proto_join_args *b)
{
    return strcmp(a->room, b->room) == 0 && a->role == b->role && a->mode == b->mode &&
           a->has_name == b->has_name && strcmp(a->name, b->name) == 0 &&
           a->has_token == b->has_token && strcmp(a->token, b->token) == 0;
}

static void check_canonical(const struct proto_command *cmd, const struct proto_limits *lim)
{
    static char text[TEXT_MAX];
    struct proto_command again;
    struct proto_error err;
    int n = proto_command_format(cmd, text, sizeof text);
    if (n < 0)
        fuzz_fail("could not format an accepted join: %s", proto_status_name(n));
    int rc = proto_command_parse(text, (size_t)n, lim, &again, &err);
    if (rc != 0 || again.kind != PROTO_CMD_JOIN || !same_join(&cmd->args.join, &again.args.join) ||
        strcmp(cmd->id, again.id) != 0)
        fuzz_fail("canonical join does not parse back the same (%s): %s", err.message, text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct text t;
    static struct plan p;
    const struct proto_limits *lim = fuzz_limits();
    struct proto_command cmd;
    struct proto_error err;

    if (size > INPUT_MAX)
        return 0;
    memset(&p, 0, sizeof p);
    split(data, size, &p);
    plan_members(&p);
    build(&p, &t);

    struct expect e = expect(&p, t.len);
    int rc = proto_command_parse(t.buf, t.len, lim, &cmd, &err);
    if (rc != e.code && rc != e.alt)
        fuzz_fail("join parsed as %s (%s), expected %s: %.300s", proto_status_name(rc), err.message,
                  proto_status_name(e.code), t.buf);
    if (rc != 0) {
        if (err.code != rc)
            fuzz_fail("join refused with %d but err.code %d", rc, err.code);
        fuzz_check_replies(err.id, rc, err.message);
        return 0;
    }
    if (cmd.kind != PROTO_CMD_JOIN)
        fuzz_fail("join parsed as %s", proto_cmd_name(cmd.kind));
    check_args(&p, &cmd.args.join);
    check_canonical(&cmd, lim);
    fuzz_check_replies(cmd.id, PROTO_E_BAD_ROOM, "join: no such room");
    return 0;
}
