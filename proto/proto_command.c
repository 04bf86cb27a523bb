/*
 * proto_command.c — command parsing and formatting (PROTOCOL.md §5).
 *
 * A message passes four gates, in this order, and the first failure is
 * the answer: size; a lexical pre-scan (no NUL, valid UTF-8, strict JSON
 * numbers and strings, no \u0000, nesting at most PROTO_MAX_DEPTH); cJSON
 * for the syntax; then the shape: an object, a readable id, a known cmd,
 * only that command's fields (no duplicates, no objects or arrays), then the
 * command's own parser from the table for types and ranges.
 */
#include "proto_command.h"

#include "proto_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

#define SHOWN_MAX  40 /* an untrusted name quoted in a message: 32 bytes + "..." */
#define GROUP_MAX  (PROTO_GROUPS - 1)
#define UINT32_TOP 4294967295.0

struct ctx {
    const cJSON *root;
    const struct proto_limits *lim;
    struct proto_error *err;
    const char *cmd; /* the command's name once known: prefixes messages */
};

typedef int (*cmd_parse_fn)(struct ctx *c, struct proto_command *out);
typedef void (*cmd_format_fn)(struct proto_json_writer *w, const struct proto_command *cmd);

struct cmd_entry {
    const char *name;
    const char *const *fields; /* argument names besides cmd and id, NULL-terminated */
    int open_params;           /* any name of the parameter registry is a field too */
    cmd_parse_fn parse;
    cmd_format_fn format;
};

/* ---- errors ------------------------------------------------------------- */

static int fail(struct ctx *c, int code, const char *fmt, ...) PRINTF_LIKE(3, 4);

/* Records the error in c->err ("cmd: message") and returns code. */
static int fail(struct ctx *c, int code, const char *fmt, ...)
{
    char *msg = c->err->message;
    size_t used = c->cmd ? (size_t)snprintf(msg, PROTO_MESSAGE_MAX, "%s: ", c->cmd) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + used, PROTO_MESSAGE_MAX - used, fmt, ap);
    va_end(ap);
    c->err->code = code;
    return code;
}

/* At most 32 bytes of an untrusted name, cut on a UTF-8 boundary. */
static const char *show(const char *s, char out[SHOWN_MAX])
{
    size_t n = 0, len = strlen(s), step;
    while (n < len && (step = proto_json_utf8_len(s + n, len - n)) != 0 && n + step <= 32)
        n += step;
    memcpy(out, s, n);
    strcpy(out + n, n < len ? "..." : "");
    return out;
}

/* ---- typed field readers ------------------------------------------------ */

static const cJSON *field(const struct ctx *c, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(c->root, name);
}

/* Checks that f is a finite number in [lo, hi], whole if integer. */
static int check_num(struct ctx *c, const cJSON *f, const char *name, double lo, double hi,
                     int integer, double *out)
{
    if (!cJSON_IsNumber(f))
        return fail(c, PROTO_E_BAD_ARG, "field '%s' must be %s", name,
                    integer ? "an integer" : "a number");
    double v = f->valuedouble;
    if (!isfinite(v))
        return fail(c, PROTO_E_OUT_OF_RANGE, "field '%s' is too large", name);
    if (integer && v != floor(v))
        return fail(c, PROTO_E_BAD_ARG, "field '%s' must be an integer", name);
    if (v < lo || v > hi) {
        if (integer)
            return fail(c, PROTO_E_OUT_OF_RANGE, "field '%s' must be in [%.17g, %.17g]", name, lo,
                        hi);
        return fail(c, PROTO_E_OUT_OF_RANGE, "field '%s' must be in [%.9g, %.9g]", name, lo, hi);
    }
    *out = v + 0.0; /* -0 becomes 0 */
    return 0;
}

/* Reads number `name` into *out; if it is absent, *out keeps its default. */
static int read_num(struct ctx *c, const char *name, int required, double lo, double hi,
                    int integer, double *out)
{
    const cJSON *f = field(c, name);
    if (!f)
        return required ? fail(c, PROTO_E_BAD_ARG, "missing field '%s'", name) : 0;
    return check_num(c, f, name, lo, hi, integer, out);
}

static int read_float(struct ctx *c, const char *name, int required, double lo, double hi,
                      float *out)
{
    double v = *out;
    int rc = read_num(c, name, required, lo, hi, 0, &v);
    *out = (float)v;
    return rc;
}

static int read_int(struct ctx *c, const char *name, int required, double lo, double hi, int *out)
{
    double v = *out;
    int rc = read_num(c, name, required, lo, hi, 1, &v);
    *out = (int)v;
    return rc;
}

static int read_u32(struct ctx *c, const char *name, int required, double lo, double hi,
                    uint32_t *out)
{
    double v = *out;
    int rc = read_num(c, name, required, lo, hi, 1, &v);
    *out = (uint32_t)v;
    return rc;
}

static int read_x(struct ctx *c, float *out)
{
    return read_float(c, "x", 1, 0.0, c->lim->width, out);
}

static int read_y(struct ctx *c, float *out)
{
    return read_float(c, "y", 1, 0.0, c->lim->height, out);
}

static int read_group(struct ctx *c, int required, int *out)
{
    return read_int(c, "group", required, 0.0, GROUP_MAX, out);
}

/* Reads string `name` into *out (NULL if absent and optional). */
static int read_str(struct ctx *c, const char *name, int required, const char **out)
{
    const cJSON *f = field(c, name);
    *out = NULL;
    if (!f)
        return required ? fail(c, PROTO_E_BAD_ARG, "missing field '%s'", name) : 0;
    if (!cJSON_IsString(f))
        return fail(c, PROTO_E_BAD_ARG, "field '%s' must be a string", name);
    *out = f->valuestring;
    return 0;
}

/* Reads a string that must be one of names[0..n); *out = its index. */
static int read_enum(struct ctx *c, const char *name, int required, const char *const *names, int n,
                     const char *list, int *out)
{
    const char *s;
    int rc = read_str(c, name, required, &s);
    if (rc || !s)
        return rc;
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return fail(c, PROTO_E_BAD_ARG, "field '%s' must be one of %s", name, list);
}

/* Room names: [A-Za-z0-9_-]. */
static int room_chars_ok(const char *s)
{
    return strspn(s, PROTO_ROOM_CHARS) == strlen(s);
}

/* Printable UTF-8: no C0 controls, DEL or C1 controls (U+0080..U+009F). */
static int printable_ok(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7F || (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F))
            return 0;
    }
    return 1;
}

/* Copies optional string `name` of min..max bytes whose characters pass ok(). */
static int read_text(struct ctx *c, const char *name, int required, size_t min, size_t max,
                     int (*ok)(const char *), char *dst, int *present)
{
    const char *s;
    int rc = read_str(c, name, required, &s);
    if (rc || !s)
        return rc;
    size_t n = strlen(s);
    if (n < min || n > max)
        return fail(c, PROTO_E_OUT_OF_RANGE, "field '%s' must be %zu to %zu bytes long", name, min,
                    max);
    if (!ok(s))
        return fail(c, PROTO_E_BAD_ARG, "field '%s' contains characters that are not allowed",
                    name);
    memcpy(dst, s, n + 1);
    if (present)
        *present = 1;
    return 0;
}

/* ---- per-command parsers ------------------------------------------------ */

static int parse_none(struct ctx *c, struct proto_command *out)
{
    (void)c;
    (void)out;
    return 0;
}

static int parse_seek(struct ctx *c, struct proto_command *out)
{
    struct proto_seek_args *a = &out->args.seek;
    int rc = read_group(c, 1, &a->group);
    if (!rc)
        rc = read_x(c, &a->x);
    if (!rc)
        rc = read_y(c, &a->y);
    return rc;
}

static int parse_seek_clear(struct ctx *c, struct proto_command *out)
{
    return read_group(c, 1, &out->args.seek_clear.group);
}

static int parse_obstacle_add(struct ctx *c, struct proto_command *out)
{
    struct proto_obstacle_add_args *a = &out->args.obstacle_add;
    float r_max = 0.25f * fminf(c->lim->width, c->lim->height); /* PROTOCOL.md §5.4 */
    int rc = read_x(c, &a->x);
    if (!rc)
        rc = read_y(c, &a->y);
    if (!rc)
        rc = read_float(c, "r", 1, 1.0, r_max, &a->r);
    return rc;
}

static int parse_obstacle_remove(struct ctx *c, struct proto_command *out)
{
    return read_u32(c, "obstacle", 1, 1.0, UINT32_TOP, &out->args.obstacle_remove.id);
}

static int parse_spawn(struct ctx *c, struct proto_command *out)
{
    struct proto_spawn_args *a = &out->args.spawn;
    float spread_max = fmaxf(c->lim->width, c->lim->height);
    a->spread = fminf(PROTO_DEFAULT_SPREAD, spread_max);
    int rc = read_u32(c, "n", 1, 1.0, c->lim->capacity, &a->n);
    if (!rc)
        rc = read_group(c, 1, &a->group);
    if (!rc)
        rc = read_x(c, &a->x);
    if (!rc)
        rc = read_y(c, &a->y);
    if (!rc)
        rc = read_float(c, "spread", 0, 0.0, spread_max, &a->spread);
    return rc;
}

static int parse_despawn(struct ctx *c, struct proto_command *out)
{
    struct proto_despawn_args *a = &out->args.despawn;
    a->group = -1;
    int rc = read_u32(c, "n", 1, 1.0, UINT32_TOP, &a->n);
    if (!rc)
        rc = read_group(c, 0, &a->group);
    return rc;
}

/* One registry parameter: range and integrality from its descriptor. */
static int parse_param_value(struct ctx *c, const cJSON *m, struct proto_params_args *a)
{
    const struct sim_param_desc *d = sim_param_find(m->string);
    double v = 0.0;
    if (!d || a->count >= PROTO_MAX_PARAMS)
        return fail(c, PROTO_E_BAD_ARG, "too many parameters");
    int rc = check_num(c, m, d->name, d->min, d->max, d->integer, &v);
    if (rc)
        return rc;
    if (!sim_param_valid(d, (float)v))
        return fail(c, PROTO_E_OUT_OF_RANGE, "field '%s' is out of range", d->name);
    a->items[a->count++] = (struct proto_param_value){.desc = d, .value = (float)v};
    return 0;
}

/* Reads optional boolean `name` into *out (0 if absent). */
static int read_bool(struct ctx *c, const char *name, int *out)
{
    const cJSON *f = field(c, name);
    *out = 0;
    if (!f)
        return 0;
    if (!cJSON_IsBool(f))
        return fail(c, PROTO_E_BAD_ARG, "field '%s' must be true or false", name);
    *out = cJSON_IsTrue(f);
    return 0;
}

static int is_params_field(const char *name)
{
    return !strcmp(name, "cmd") || !strcmp(name, "id") || !strcmp(name, "group") ||
           !strcmp(name, "reset");
}

static int parse_params(struct ctx *c, struct proto_command *out)
{
    struct proto_params_args *a = &out->args.params;
    a->group = -1;
    int rc = read_group(c, 0, &a->group);
    if (!rc)
        rc = read_bool(c, "reset", &a->reset);
    for (const cJSON *m = c->root->child; m && !rc; m = m->next) {
        if (!is_params_field(m->string))
            rc = parse_param_value(c, m, a);
    }
    if (!rc && a->count == 0 && !a->reset)
        rc = fail(c, PROTO_E_BAD_ARG, "no parameter given (and no reset)");
    return rc;
}

static int parse_step(struct ctx *c, struct proto_command *out)
{
    out->args.step.n = 1;
    return read_u32(c, "n", 0, 1.0, PROTO_MAX_STEP, &out->args.step.n);
}

static int parse_reset(struct ctx *c, struct proto_command *out)
{
    struct proto_reset_args *a = &out->args.reset;
    double seed = 0.0;
    int rc = read_num(c, "seed", 0, 0.0, PROTO_MAX_SEED, 1, &seed);
    a->seed = (uint64_t)seed;
    a->has_seed = field(c, "seed") != NULL;
    if (!rc)
        rc = read_u32(c, "boids", 0, 0.0, c->lim->capacity, &a->boids);
    a->has_boids = field(c, "boids") != NULL;
    return rc;
}

static const char *const role_names[] = {"viewer", "player", "admin"};
static const char *const mode_names[] = {"sandbox", "rts"};
static const char *const edges_names[] = {"wrap", "contain"};

const char *proto_role_name(enum proto_role role)
{
    return (unsigned)role < 3 ? role_names[role] : "";
}

const char *proto_mode_name(enum proto_mode mode)
{
    return mode == PROTO_MODE_SANDBOX || mode == PROTO_MODE_RTS
               ? mode_names[mode - PROTO_MODE_SANDBOX]
               : "";
}

/* What a join asks of a room it creates: world size and edges, rts teams. */
static int parse_join_room(struct ctx *c, struct proto_join_args *a)
{
    int edges = -1;
    int rc = read_float(c, "width", 0, PROTO_WORLD_MIN, PROTO_WORLD_MAX, &a->width);
    if (!rc)
        rc = read_float(c, "height", 0, PROTO_WORLD_MIN, PROTO_WORLD_MAX, &a->height);
    if (!rc)
        rc = read_enum(c, "edges", 0, edges_names, 2, "wrap, contain", &edges);
    if (!rc)
        rc = read_u32(c, "teams", 0, PROTO_TEAMS_MIN, GROUP_MAX, &a->teams);
    if (!rc)
        rc = read_u32(c, "units", 0, 0.0, PROTO_TEAM_UNITS_MAX, &a->units);
    a->has_width = field(c, "width") != NULL;
    a->has_height = field(c, "height") != NULL;
    a->has_teams = field(c, "teams") != NULL;
    a->has_units = field(c, "units") != NULL;
    if (!rc)
        rc = read_text(c, "script", 0, 1, PROTO_SCRIPT_NAME_MAX, room_chars_ok, a->script,
                       &a->has_script);
    a->edges = edges < 0 ? PROTO_EDGES_ANY : (enum proto_edges)(PROTO_EDGES_WRAP + edges);
    return rc;
}

static int parse_join(struct ctx *c, struct proto_command *out)
{
    struct proto_join_args *a = &out->args.join;
    int role = 0, mode = -1;
    int rc = read_text(c, "room", 1, 1, PROTO_ROOM_MAX, room_chars_ok, a->room, NULL);
    if (!rc)
        rc = read_enum(c, "role", 1, role_names, 3, "viewer, player, admin", &role);
    if (!rc)
        rc = read_enum(c, "mode", 0, mode_names, 2, "sandbox, rts", &mode);
    if (!rc)
        rc = read_text(c, "name", 0, 0, PROTO_NAME_MAX, printable_ok, a->name, &a->has_name);
    if (!rc)
        rc = read_text(c, "token", 0, 0, PROTO_TOKEN_MAX, printable_ok, a->token, &a->has_token);
    if (!rc)
        rc = read_text(c, "password", 0, 0, PROTO_TOKEN_MAX, printable_ok, a->password,
                       &a->has_password);
    if (!rc)
        rc = read_text(c, "rejoin", 0, 0, PROTO_TOKEN_MAX, printable_ok, a->rejoin, &a->has_rejoin);
    if (!rc)
        rc = read_u32(c, "boids", 0, 0.0, UINT32_TOP, &a->boids);
    a->has_boids = field(c, "boids") != NULL;
    if (!rc)
        rc = parse_join_room(c, a);
    a->role = (enum proto_role)role;
    a->mode = mode < 0 ? PROTO_MODE_ANY : (enum proto_mode)(PROTO_MODE_SANDBOX + mode);
    return rc;
}

static int parse_kick(struct ctx *c, struct proto_command *out)
{
    double client = 0.0;
    int rc = read_num(c, "client", 1, 1.0, PROTO_MAX_SEED, 1, &client);
    out->args.kick.client = (uint64_t)client;
    return rc;
}

static int parse_goto(struct ctx *c, struct proto_command *out)
{
    double tick = 0.0;
    int rc = read_num(c, "tick", 1, 0.0, PROTO_MAX_SEED, 1, &tick);
    out->args.go.tick = (uint64_t)tick;
    return rc;
}

static int parse_view(struct ctx *c, struct proto_command *out)
{
    struct proto_view_args *a = &out->args.view;
    int rc = read_x(c, &a->x);
    if (!rc)
        rc = read_y(c, &a->y);
    if (!rc)
        rc = read_float(c, "w", 1, 1.0, c->lim->width, &a->w);
    if (!rc)
        rc = read_float(c, "h", 1, 1.0, c->lim->height, &a->h);
    if (!rc)
        rc = read_u32(c, "px", 0, 1.0, PROTO_VIEW_PX_MAX, &a->px);
    if (!rc)
        rc = read_u32(c, "budget", 0, PROTO_VIEW_BUDGET_MIN, PROTO_VIEW_BUDGET_MAX, &a->budget);
    return rc;
}

/* ---- squads (PROTOCOL.md §13) ------------------------------------------- */

static const char *const order_names[PROTO_ORDER_COUNT] = {NULL,     "move", "patrol",
                                                           "follow", "hold", "stop"};
static const char *const shape_names[PROTO_SHAPE_COUNT] = {"none", "line", "column", "wedge",
                                                           "box"};

const char *proto_order_name(int order)
{
    return order > 0 && order < PROTO_ORDER_COUNT ? order_names[order] : NULL;
}

const char *proto_shape_name(int shape)
{
    return shape >= 0 && shape < PROTO_SHAPE_COUNT ? shape_names[shape] : NULL;
}

/* Reads array `name` of min..max elements; *out NULL if absent and optional. */
static int read_array(struct ctx *c, const char *name, int required, int min, int max,
                      const cJSON **out)
{
    const cJSON *f = field(c, name);
    *out = NULL;
    if (!f)
        return required ? fail(c, PROTO_E_BAD_ARG, "missing field '%s'", name) : 0;
    if (!cJSON_IsArray(f))
        return fail(c, PROTO_E_BAD_ARG, "field '%s' must be an array", name);
    int n = cJSON_GetArraySize(f);
    if (n < min || n > max)
        return fail(c, PROTO_E_OUT_OF_RANGE, "field '%s' must hold %d to %d elements", name, min,
                    max);
    *out = f;
    return 0;
}

/* The optional team (an admin's) and the squad, lo..32 (-1 if absent and optional). */
static int read_team_squad(struct ctx *c, int squad_lo, int squad_required, int *team, int *squad)
{
    *team = -1;
    *squad = -1;
    int rc = read_int(c, "team", 0, 0.0, GROUP_MAX, team);
    return rc ? rc : read_int(c, "squad", squad_required, squad_lo, PROTO_SQUADS, squad);
}

/* The selection's rect: [x, y, w, h], x and y in the world, w and h > 0. */
static int read_rect(struct ctx *c, const cJSON *a, float rect[4])
{
    double hi[4] = {c->lim->width, c->lim->height, 1e7, 1e7};
    for (int k = 0; k < 4; k++) {
        double v = 0.0;
        int rc = check_num(c, cJSON_GetArrayItem(a, k), "rect", 0.0, hi[k], 0, &v);
        if (rc)
            return rc;
        rect[k] = (float)v;
    }
    if (rect[2] <= 0.0f || rect[3] <= 0.0f)
        return fail(c, PROTO_E_OUT_OF_RANGE, "field 'rect' must have a width and height above 0");
    return 0;
}

static int parse_select(struct ctx *c, struct proto_command *out)
{
    struct proto_select_args *a = &out->args.select;
    int rc = read_team_squad(c, 0, 0, &a->team, &a->squad);
    const cJSON *rect = NULL, *ids = NULL, *squads = NULL, *all = field(c, "all");
    if (!rc)
        rc = read_array(c, "rect", 0, 4, 4, &rect);
    if (!rc)
        rc = read_array(c, "ids", 0, 1, PROTO_SELECT_MAX, &ids);
    if (!rc)
        rc = read_array(c, "squads", 0, 1, PROTO_SQUADS + 1, &squads);
    if (rc)
        return rc;
    if (all && !cJSON_IsTrue(all))
        return fail(c, PROTO_E_BAD_ARG, "field 'all' must be true");
    if (!!rect + !!ids + !!squads + !!all != 1)
        return fail(c, PROTO_E_BAD_ARG, "exactly one of 'rect', 'ids', 'all' or 'squads'");
    if (rect) {
        a->by = PROTO_SELECT_RECT;
        return read_rect(c, rect, a->rect);
    }
    a->by = ids ? PROTO_SELECT_IDS : squads ? PROTO_SELECT_SQUADS : PROTO_SELECT_ALL;
    const cJSON *e, *list = ids ? ids : squads;
    cJSON_ArrayForEach(e, list)
    {
        double v = 0.0;
        rc = ids ? check_num(c, e, "ids", 1.0, UINT32_TOP, 1, &v)
                 : check_num(c, e, "squads", 0.0, PROTO_SQUADS, 1, &v);
        if (rc)
            return rc;
        if (ids)
            a->ids[a->n++] = (uint32_t)v;
        else
            a->squads |= 1ull << (int)v;
    }
    return 0;
}

/* Waypoints: 1..max points [x, y] in the world. */
static int read_waypoints(struct ctx *c, int max, struct proto_order_args *a)
{
    const cJSON *to, *p;
    int rc = read_array(c, "to", 1, 1, max, &to);
    if (rc)
        return rc;
    cJSON_ArrayForEach(p, to)
    {
        double x = 0.0, y = 0.0;
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2)
            return fail(c, PROTO_E_BAD_ARG, "field 'to' must hold points [x, y]");
        rc = check_num(c, cJSON_GetArrayItem(p, 0), "to", 0.0, c->lim->width, 0, &x);
        if (!rc)
            rc = check_num(c, cJSON_GetArrayItem(p, 1), "to", 0.0, c->lim->height, 0, &y);
        if (rc)
            return rc;
        a->way[a->nway][0] = (float)x;
        a->way[a->nway++][1] = (float)y;
    }
    return 0;
}

/* move, patrol, follow, hold, stop: each command's fields are its own
 * (the command table), so hold takes no waypoints. */
static int parse_order(struct ctx *c, struct proto_command *out)
{
    struct proto_order_args *a = &out->args.order;
    a->order = proto_cmd_order(out->kind);
    int rc = read_team_squad(c, 1, 1, &a->team, &a->squad);
    if (rc)
        return rc;
    if (a->order == PROTO_ORDER_MOVE || a->order == PROTO_ORDER_PATROL)
        rc = read_waypoints(c, a->order == PROTO_ORDER_MOVE ? PROTO_WAYPOINTS : PROTO_WAYPOINTS - 1,
                            a);
    const cJSON *queue = field(c, "queue");
    if (!rc && queue && !cJSON_IsBool(queue))
        return fail(c, PROTO_E_BAD_ARG, "field 'queue' must be true or false");
    a->queue = queue && cJSON_IsTrue(queue);
    if (!rc && a->order == PROTO_ORDER_FOLLOW) {
        rc = read_int(c, "squad_of", 0, 1.0, PROTO_SQUADS, &a->squad_of);
        if (!rc)
            rc = read_u32(c, "unit", 0, 1.0, UINT32_TOP, &a->unit);
        if (!rc && (a->squad_of != 0) == (a->unit != 0))
            return fail(c, PROTO_E_BAD_ARG, "exactly one of 'squad_of' or 'unit'");
    }
    return rc;
}

static int parse_formation(struct ctx *c, struct proto_command *out)
{
    struct proto_formation_args *a = &out->args.formation;
    int rc = read_team_squad(c, 1, 1, &a->team, &a->squad);
    if (!rc)
        rc = read_enum(c, "shape", 1, shape_names, PROTO_SHAPE_COUNT,
                       "none, line, column, wedge, box", &a->shape);
    if (!rc)
        rc = read_float(c, "spacing", 0, 1.0, 200.0, &a->spacing);
    return rc;
}

/* game: every member but cmd and id, any JSON, handed on as compact text
 * for the room's script (§14). */
static int parse_game(struct ctx *c, struct proto_command *out)
{
    struct proto_game_args *a = &out->args.game;
    cJSON *copy = cJSON_Duplicate(c->root, 1);
    if (!copy)
        return fail(c, PROTO_E_INTERNAL, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "cmd");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "id");
    int ok = cJSON_PrintPreallocated(copy, a->text, (int)sizeof a->text, 0);
    cJSON_Delete(copy);
    if (!ok)
        return fail(c, PROTO_E_TOO_LARGE, "the members of a game command are over %d bytes",
                    PROTO_GAME_MAX);
    a->event = PROTO_GAME_COMMAND;
    a->team = -1;
    return 0;
}

static int parse_script(struct ctx *c, struct proto_command *out)
{
    if (!field(c, "reload"))
        return fail(c, PROTO_E_BAD_ARG, "missing field 'reload'");
    return read_bool(c, "reload", &out->args.script.reload);
}

/* ---- per-command formatters --------------------------------------------- */

static void format_none(struct proto_json_writer *w, const struct proto_command *cmd)
{
    (void)w;
    (void)cmd;
}

static void format_seek(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_i64(w, "group", cmd->args.seek.group);
    proto_json_member_float(w, "x", cmd->args.seek.x);
    proto_json_member_float(w, "y", cmd->args.seek.y);
}

static void format_seek_clear(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_i64(w, "group", cmd->args.seek_clear.group);
}

static void format_obstacle_add(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_float(w, "x", cmd->args.obstacle_add.x);
    proto_json_member_float(w, "y", cmd->args.obstacle_add.y);
    proto_json_member_float(w, "r", cmd->args.obstacle_add.r);
}

static void format_obstacle_remove(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_i64(w, "obstacle", cmd->args.obstacle_remove.id);
}

static void format_spawn(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_spawn_args *a = &cmd->args.spawn;
    proto_json_member_i64(w, "n", a->n);
    proto_json_member_i64(w, "group", a->group);
    proto_json_member_float(w, "x", a->x);
    proto_json_member_float(w, "y", a->y);
    proto_json_member_float(w, "spread", a->spread);
}

static void format_despawn(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_i64(w, "n", cmd->args.despawn.n);
    if (cmd->args.despawn.group >= 0)
        proto_json_member_i64(w, "group", cmd->args.despawn.group);
}

static void format_params(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_params_args *a = &cmd->args.params;
    if (a->group >= 0)
        proto_json_member_i64(w, "group", a->group);
    if (a->reset) {
        proto_json_key(w, "reset");
        proto_json_bool(w, 1);
    }
    for (uint32_t i = 0; i < a->count && i < PROTO_MAX_PARAMS; i++)
        proto_json_member_float(w, a->items[i].desc->name, a->items[i].value);
}

static void format_step(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_i64(w, "n", cmd->args.step.n);
}

static void format_reset(struct proto_json_writer *w, const struct proto_command *cmd)
{
    if (cmd->args.reset.has_seed) {
        proto_json_member_u64(w, "seed", cmd->args.reset.seed);
    }
    if (cmd->args.reset.has_boids)
        proto_json_member_i64(w, "boids", cmd->args.reset.boids);
}

static void format_join(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_join_args *a = &cmd->args.join;
    proto_json_member_str(w, "room", a->room);
    if ((unsigned)a->role < 3)
        proto_json_member_str(w, "role", proto_role_name(a->role));
    if (a->mode == PROTO_MODE_SANDBOX || a->mode == PROTO_MODE_RTS)
        proto_json_member_str(w, "mode", proto_mode_name(a->mode));
    if (a->has_name)
        proto_json_member_str(w, "name", a->name);
    if (a->has_token)
        proto_json_member_str(w, "token", a->token);
    if (a->has_password)
        proto_json_member_str(w, "password", a->password);
    if (a->has_rejoin)
        proto_json_member_str(w, "rejoin", a->rejoin);
    if (a->has_boids)
        proto_json_member_i64(w, "boids", a->boids);
    if (a->has_width)
        proto_json_member_float(w, "width", a->width);
    if (a->has_height)
        proto_json_member_float(w, "height", a->height);
    if (a->edges == PROTO_EDGES_WRAP || a->edges == PROTO_EDGES_CONTAIN)
        proto_json_member_str(w, "edges", edges_names[a->edges - PROTO_EDGES_WRAP]);
    if (a->has_teams)
        proto_json_member_i64(w, "teams", a->teams);
    if (a->has_units)
        proto_json_member_i64(w, "units", a->units);
    if (a->has_script)
        proto_json_member_str(w, "script", a->script);
}

/* The members of a game command as they came (the text is JSON of an object). */
static void format_game(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const char *t = cmd->args.game.text;
    size_t n = strlen(t);
    if (cmd->args.game.event != PROTO_GAME_COMMAND || n < 2 || t[0] != '{' || n == 2)
        return;
    char inner[PROTO_GAME_MAX + 2];
    snprintf(inner, sizeof inner, "%.*s", (int)(n - 2), t + 1);
    proto_json_raw(w, inner); /* members, after a comma: the object's own */
}

static void format_script(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_key(w, "reload");
    proto_json_bool(w, cmd->args.script.reload);
}

static void format_kick(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_u64(w, "client", cmd->args.kick.client);
}

static void format_goto(struct proto_json_writer *w, const struct proto_command *cmd)
{
    proto_json_member_u64(w, "tick", cmd->args.go.tick);
}

static void format_view(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_view_args *a = &cmd->args.view;
    proto_json_member_float(w, "x", a->x);
    proto_json_member_float(w, "y", a->y);
    proto_json_member_float(w, "w", a->w);
    proto_json_member_float(w, "h", a->h);
    if (a->px)
        proto_json_member_i64(w, "px", a->px);
    if (a->budget)
        proto_json_member_i64(w, "budget", a->budget);
}

static void format_team_squad(struct proto_json_writer *w, int team, int squad)
{
    if (team >= 0)
        proto_json_member_i64(w, "team", team);
    if (squad >= 0)
        proto_json_member_i64(w, "squad", squad);
}

static void format_select(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_select_args *a = &cmd->args.select;
    format_team_squad(w, a->team, a->squad);
    if (a->by == PROTO_SELECT_ALL) {
        proto_json_key(w, "all");
        proto_json_bool(w, 1);
        return;
    }
    proto_json_key(w, a->by == PROTO_SELECT_RECT  ? "rect"
                      : a->by == PROTO_SELECT_IDS ? "ids"
                                                  : "squads");
    proto_json_open(w, '[');
    for (int k = 0; a->by == PROTO_SELECT_RECT && k < 4; k++)
        proto_json_float(w, a->rect[k]);
    for (uint32_t k = 0; a->by == PROTO_SELECT_IDS && k < a->n; k++)
        proto_json_u64(w, a->ids[k]);
    for (int k = 0; a->by == PROTO_SELECT_SQUADS && k <= PROTO_SQUADS; k++)
        if (a->squads >> k & 1u)
            proto_json_i64(w, k);
    proto_json_close(w, ']');
}

static void format_order(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_order_args *a = &cmd->args.order;
    format_team_squad(w, a->team, a->squad);
    if (a->nway) {
        proto_json_key(w, "to");
        proto_json_open(w, '[');
        for (uint32_t k = 0; k < a->nway; k++) {
            proto_json_open(w, '[');
            proto_json_float(w, a->way[k][0]);
            proto_json_float(w, a->way[k][1]);
            proto_json_close(w, ']');
        }
        proto_json_close(w, ']');
    }
    if (a->queue) {
        proto_json_key(w, "queue");
        proto_json_bool(w, 1);
    }
    if (a->squad_of)
        proto_json_member_i64(w, "squad_of", a->squad_of);
    if (a->unit)
        proto_json_member_u64(w, "unit", a->unit);
}

static void format_formation(struct proto_json_writer *w, const struct proto_command *cmd)
{
    const struct proto_formation_args *a = &cmd->args.formation;
    format_team_squad(w, a->team, a->squad);
    proto_json_member_str(w, "shape", proto_shape_name(a->shape));
    if (a->spacing > 0.0f)
        proto_json_member_float(w, "spacing", a->spacing);
}

/* ---- the command table -------------------------------------------------- */

static const char *const no_fields[] = {NULL};
static const char *const group_fields[] = {"group", NULL};
static const char *const params_fields[] = {"group", "reset", NULL};
static const char *const seek_fields[] = {"group", "x", "y", NULL};
static const char *const obstacle_add_fields[] = {"x", "y", "r", NULL};
static const char *const obstacle_remove_fields[] = {"obstacle", NULL};
static const char *const spawn_fields[] = {"n", "group", "x", "y", "spread", NULL};
static const char *const despawn_fields[] = {"n", "group", NULL};
static const char *const step_fields[] = {"n", NULL};
static const char *const reset_fields[] = {"seed", "boids", NULL};
static const char *const join_fields[] = {"room",     "role",   "mode",  "name",   "token",
                                          "password", "rejoin", "boids", "width",  "height",
                                          "edges",    "teams",  "units", "script", NULL};
static const char *const kick_fields[] = {"client", NULL};
static const char *const goto_fields[] = {"tick", NULL};
static const char *const view_fields[] = {"x", "y", "w", "h", "px", "budget", NULL};
static const char *const select_fields[] = {"team", "squad", "rect", "ids", "all", "squads", NULL};
static const char *const move_fields[] = {"team", "squad", "to", "queue", NULL};
static const char *const patrol_fields[] = {"team", "squad", "to", NULL};
static const char *const follow_fields[] = {"team", "squad", "squad_of", "unit", NULL};
static const char *const squad_fields[] = {"team", "squad", NULL};
static const char *const formation_fields[] = {"team", "squad", "shape", "spacing", NULL};
static const char *const script_fields[] = {"reload", NULL};

static const struct cmd_entry commands[] = {
    [PROTO_CMD_PING] = {"ping", no_fields, 0, parse_none, format_none},
    [PROTO_CMD_SEEK] = {"seek", seek_fields, 0, parse_seek, format_seek},
    [PROTO_CMD_SEEK_CLEAR] = {"seek_clear", group_fields, 0, parse_seek_clear, format_seek_clear},
    [PROTO_CMD_OBSTACLE_ADD] = {"obstacle_add", obstacle_add_fields, 0, parse_obstacle_add,
                                format_obstacle_add},
    [PROTO_CMD_OBSTACLE_REMOVE] = {"obstacle_remove", obstacle_remove_fields, 0,
                                   parse_obstacle_remove, format_obstacle_remove},
    [PROTO_CMD_OBSTACLE_CLEAR] = {"obstacle_clear", no_fields, 0, parse_none, format_none},
    [PROTO_CMD_SPAWN] = {"spawn", spawn_fields, 0, parse_spawn, format_spawn},
    [PROTO_CMD_DESPAWN] = {"despawn", despawn_fields, 0, parse_despawn, format_despawn},
    [PROTO_CMD_PARAMS] = {"params", params_fields, 1, parse_params, format_params},
    [PROTO_CMD_PAUSE] = {"pause", no_fields, 0, parse_none, format_none},
    [PROTO_CMD_RESUME] = {"resume", no_fields, 0, parse_none, format_none},
    [PROTO_CMD_STEP] = {"step", step_fields, 0, parse_step, format_step},
    [PROTO_CMD_RESET] = {"reset", reset_fields, 0, parse_reset, format_reset},
    [PROTO_CMD_JOIN] = {"join", join_fields, 0, parse_join, format_join},
    [PROTO_CMD_KICK] = {"kick", kick_fields, 0, parse_kick, format_kick},
    [PROTO_CMD_KEYFRAME] = {"keyframe", no_fields, 0, parse_none, format_none},
    [PROTO_CMD_GOTO] = {"goto", goto_fields, 0, parse_goto, format_goto},
    [PROTO_CMD_STATS] = {"stats", no_fields, 0, parse_none, format_none},
    [PROTO_CMD_VIEW] = {"view", view_fields, 0, parse_view, format_view},
    [PROTO_CMD_SELECT] = {"select", select_fields, 0, parse_select, format_select},
    [PROTO_CMD_MOVE] = {"move", move_fields, 0, parse_order, format_order},
    [PROTO_CMD_PATROL] = {"patrol", patrol_fields, 0, parse_order, format_order},
    [PROTO_CMD_FOLLOW] = {"follow", follow_fields, 0, parse_order, format_order},
    [PROTO_CMD_HOLD] = {"hold", squad_fields, 0, parse_order, format_order},
    [PROTO_CMD_STOP] = {"stop", squad_fields, 0, parse_order, format_order},
    [PROTO_CMD_FORMATION] = {"formation", formation_fields, 0, parse_formation, format_formation},
    [PROTO_CMD_GAME] = {"game", NULL, 0, parse_game, format_game},
    [PROTO_CMD_SCRIPT] = {"script", script_fields, 0, parse_script, format_script},
};

_Static_assert(sizeof commands / sizeof commands[0] == PROTO_CMD_COUNT,
               "one table entry per enum proto_cmd");

const char *proto_cmd_name(enum proto_cmd kind)
{
    return (unsigned)kind < PROTO_CMD_COUNT ? commands[kind].name : NULL;
}

/* ---- the gates ---------------------------------------------------------- */

/*
 * Lexical checks cJSON does not make, in one pass over the raw text, before
 * cJSON sees it. A deliberate hardening layer, not a second parser: cJSON
 * (1.7.15) accepts what RFC 8259 and PROTOCOL.md §5.3 refuse (leading
 * zeros, "1.", numbers of any length with "1e999" read as infinity,
 * invalid UTF-8 passed through byte for byte, "\u0000" silently cutting a
 * string short) and nests 1000 levels deep by recursion. Refused here,
 * before cJSON allocates anything, every accepted message is exactly what
 * the protocol allows and a hostile one costs one linear scan.
 */
static int prescan(struct ctx *c, const char *s, size_t n)
{
    int depth = 0;
    if (memchr(s, '\0', n))
        return fail(c, PROTO_E_BAD_JSON, "message contains a NUL byte");
    for (size_t i = 0, step; i < n; i += step) {
        unsigned char ch = (unsigned char)s[i];
        step = 1;
        if (ch == '"') {
            if (!(step = proto_json_string_len(s + i, n - i)))
                return fail(c, PROTO_E_BAD_JSON, "invalid string at byte %zu", i);
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            step = proto_json_number_len(s + i, n - i);
            if (!step || step > PROTO_JSON_NUMBER_MAX)
                return fail(c, PROTO_E_BAD_JSON, "invalid number at byte %zu", i);
        } else if (ch == '{' || ch == '[') {
            if (++depth > PROTO_MAX_DEPTH)
                return fail(c, PROTO_E_BAD_JSON, "nested deeper than %d levels", PROTO_MAX_DEPTH);
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch >= 0x80 || (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')) {
            return fail(c, PROTO_E_BAD_JSON, "unexpected byte 0x%02x at byte %zu", ch, i);
        }
    }
    return 0;
}

/* Where the value of the index-th member of the top-level object lies in
 * the (already validated) text; 0 if it cannot be found. */
static int member_span(const char *s, size_t n, size_t index, size_t *start, size_t *end)
{
    size_t i = proto_json_skip_ws(s, n, 0) + 1; /* past '{' */
    for (size_t k = 0; i < n; k++) {
        i = proto_json_skip_value(s, n, proto_json_skip_ws(s, n, i));  /* the key */
        i = proto_json_skip_ws(s, n, proto_json_skip_ws(s, n, i) + 1); /* past ':' */
        *start = i;
        i = proto_json_skip_value(s, n, i);
        if (k == index) {
            *end = i;
            return i > *start && i <= n;
        }
        i = proto_json_skip_ws(s, n, i) + 1; /* past ',' */
    }
    return 0;
}

/* Copies the id's text as sent, so the reply echoes it byte for byte. */
static int read_id(struct ctx *c, const char *text, size_t len, char *out)
{
    size_t index = 0, start, end;
    const cJSON *m = c->root->child;
    for (; m && strcmp(m->string, "id") != 0; m = m->next)
        index++;
    if (!m)
        return 0;
    if (!cJSON_IsNumber(m) && !cJSON_IsString(m) && !cJSON_IsNull(m))
        return fail(c, PROTO_E_BAD_ARG, "field 'id' must be a number, a string or null");
    if (cJSON_IsNumber(m) && !isfinite(m->valuedouble))
        return fail(c, PROTO_E_OUT_OF_RANGE, "field 'id' is too large");
    if (cJSON_IsString(m) && strlen(m->valuestring) > PROTO_ID_STRING_MAX)
        return fail(c, PROTO_E_OUT_OF_RANGE, "field 'id' must be at most %d bytes",
                    PROTO_ID_STRING_MAX);
    if (!member_span(text, len, index, &start, &end) || end - start >= PROTO_ID_TEXT_MAX)
        return fail(c, PROTO_E_INTERNAL, "could not copy field 'id'");
    memcpy(out, text + start, end - start);
    out[end - start] = '\0';
    memcpy(c->err->id, out, end - start + 1);
    return 0;
}

static int find_command(struct ctx *c, const struct cmd_entry **e)
{
    char shown[SHOWN_MAX];
    const cJSON *cmd = field(c, "cmd");
    if (!cmd)
        return fail(c, PROTO_E_BAD_ARG, "missing field 'cmd'");
    if (!cJSON_IsString(cmd))
        return fail(c, PROTO_E_BAD_ARG, "field 'cmd' must be a string");
    for (size_t k = 0; k < PROTO_CMD_COUNT; k++) {
        if (strcmp(commands[k].name, cmd->valuestring) == 0) {
            *e = &commands[k];
            return 0;
        }
    }
    return fail(c, PROTO_E_UNKNOWN_CMD, "unknown command '%s'", show(cmd->valuestring, shown));
}

/* The fields that hold arrays (the squads' commands, PROTOCOL.md §13);
 * their parsers check each element. */
static int is_array_field(const char *name)
{
    static const char *const arrays[] = {"rect", "ids", "squads", "to"};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        if (strcmp(arrays[k], name) == 0)
            return 1;
    return 0;
}

static int field_allowed(const struct cmd_entry *e, const char *name)
{
    if (strcmp(name, "cmd") == 0 || strcmp(name, "id") == 0)
        return 1;
    for (const char *const *f = e->fields; *f; f++)
        if (strcmp(*f, name) == 0)
            return 1;
    return e->open_params && sim_param_find(name) != NULL;
}

/* Only this command's fields, each once, each a scalar (or an array where
 * is_array_field() says). Every member before
 * m is a known field, so the duplicate scan is short. */
static int check_fields(struct ctx *c, const struct cmd_entry *e)
{
    char shown[SHOWN_MAX];
    for (const cJSON *m = c->root->child; m; m = m->next) {
        if (!field_allowed(e, m->string))
            return fail(c, PROTO_E_BAD_ARG, "unknown %s '%s'",
                        e->open_params ? "parameter" : "field", show(m->string, shown));
        for (const cJSON *p = c->root->child; p != m; p = p->next)
            if (strcmp(p->string, m->string) == 0)
                return fail(c, PROTO_E_BAD_ARG, "duplicate field '%s'", m->string);
        if (cJSON_IsObject(m) || (cJSON_IsArray(m) && !is_array_field(m->string)))
            return fail(c, PROTO_E_BAD_ARG, "field '%s' must not be an object or array", m->string);
    }
    return 0;
}

static int parse_root(struct ctx *c, const char *text, size_t len, struct proto_command *out)
{
    const struct cmd_entry *e = NULL;
    if (!cJSON_IsObject(c->root))
        return fail(c, PROTO_E_BAD_JSON, "a command must be a JSON object");
    int rc = read_id(c, text, len, out->id);
    if (!rc)
        rc = find_command(c, &e);
    if (rc)
        return rc;
    c->cmd = e->name;
    out->kind = (enum proto_cmd)(e - commands);
    rc = e->fields ? check_fields(c, e) : 0; /* no list: any members (game) */
    return rc ? rc : e->parse(c, out);
}

int proto_command_parse(const char *text, size_t len, const struct proto_limits *lim,
                        struct proto_command *out, struct proto_error *err)
{
    struct ctx c = {.lim = lim, .err = err};
    const char *end = NULL;
    memset(err, 0, sizeof *err);
    memset(out, 0, sizeof *out);
    if (lim->max_message && len > lim->max_message)
        return fail(&c, PROTO_E_TOO_LARGE, "message of %zu bytes is over the limit of %zu", len,
                    lim->max_message);
    if (!text || len == 0)
        return fail(&c, PROTO_E_BAD_JSON, "empty message");
    int rc = prescan(&c, text, len);
    if (rc)
        return rc;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root)
        return fail(&c, PROTO_E_BAD_JSON, "not valid JSON");
    c.root = root;
    if (proto_json_skip_ws(text, len, (size_t)(end - text)) != len)
        rc = fail(&c, PROTO_E_BAD_JSON, "text after the JSON value");
    else
        rc = parse_root(&c, text, len, out);
    cJSON_Delete(root);
    if (rc == 0)
        err->id[0] = '\0'; /* read_id filled it in for later errors; success leaves err empty */
    return rc;
}

int proto_command_format(const struct proto_command *cmd, char *buf, size_t cap)
{
    struct proto_json_writer w;
    if ((unsigned)cmd->kind >= PROTO_CMD_COUNT)
        return PROTO_E_BAD_ARG;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "cmd", commands[cmd->kind].name);
    if (cmd->id[0] && memchr(cmd->id, '\0', sizeof cmd->id) && proto_json_is_scalar(cmd->id)) {
        proto_json_key(&w, "id");
        proto_json_raw(&w, cmd->id);
    }
    commands[cmd->kind].format(&w, cmd);
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

/* ---- a view in the WebSocket URL (PROTOCOL.md §12.4) ------------------------- */

/* Sets *err to a refusal of the URL's view; returns the code. */
static int query_fail(struct proto_error *err, int code, const char *message)
{
    err->code = code;
    err->id[0] = '\0';
    snprintf(err->message, sizeof err->message, "the URL's view: %s", message);
    return code;
}

/* value[0..len) is 1..n finite numbers separated by commas, none empty:
 * their count, each written into json as a JSON number; -1 if not. */
static int query_numbers(const char *value, size_t len, char *json, size_t cap, size_t *at,
                         const char *const *names, int n)
{
    int count = 0;
    size_t i = 0;
    while (i <= len && count < n) {
        char num[40];
        size_t j = i;
        while (j < len && value[j] != ',')
            j++;
        if (j == i || j - i >= sizeof num)
            return -1;
        memcpy(num, value + i, j - i);
        num[j - i] = '\0';
        char *end;
        double d = strtod(num, &end);
        if (*end || !isfinite(d) || strspn(num, "+-.0123456789eE") != j - i)
            return -1;
        int w = snprintf(json + *at, cap - *at, ",\"%s\":%.17g", names[count], d);
        if (w < 0 || (size_t)w >= cap - *at)
            return -1;
        *at += (size_t)w;
        count++;
        i = j + 1;
    }
    return i > len ? count : -1;
}

int proto_view_from_query(const char *const *parts, size_t n, const struct proto_limits *lim,
                          struct proto_command *out, struct proto_error *err)
{
    static const char *const xywh[] = {"x", "y", "w", "h"};
    static const char *const px[] = {"px"}, *const budget[] = {"budget"};
    static const struct {
        const char *key;
        const char *const *names;
        int count;
    } keys[] = {{"view=", xywh, 4}, {"px=", px, 1}, {"budget=", budget, 1}};
    char json[512] = "{\"cmd\":\"view\"";
    size_t at = strlen(json);
    bool seen[3] = {false, false, false};
    *err = (struct proto_error){0};
    for (size_t p = 0; p < n; p++) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t klen = strlen(keys[k].key);
            if (strncmp(parts[p], keys[k].key, klen) != 0)
                continue;
            if (seen[k])
                return query_fail(err, PROTO_E_BAD_ARG, "a parameter given twice");
            seen[k] = true;
            const char *v = parts[p] + klen;
            if (query_numbers(v, strlen(v), json, sizeof json, &at, keys[k].names, keys[k].count) !=
                keys[k].count)
                return query_fail(err, PROTO_E_BAD_ARG,
                                  k == 0 ? "view=X,Y,W,H takes four finite numbers"
                                         : "px and budget take a number");
        }
    }
    if (!seen[0])
        return seen[1] || seen[2] ? query_fail(err, PROTO_E_BAD_ARG, "px or budget without view")
                                  : 0;
    if (at + 2 > sizeof json)
        return query_fail(err, PROTO_E_BAD_ARG, "too long");
    json[at++] = '}';
    json[at] = '\0';
    int rc = proto_command_parse(json, at, lim, out, err);
    if (rc < 0) {
        char why[PROTO_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", err->message);
        return query_fail(err, rc, why);
    }
    return 1;
}
