/*
 * ctl_join.c — the join's flags, text and replies (see ctl_join.h).
 *
 * A flag is checked by parsing a join that differs from a valid one in that
 * argument only, so the server's parser judges it and its message names
 * the argument; flockctl keeps no copy of the rules.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_join.h"

#include "proto.h"
#include "proto_command.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The join's arguments that flags give: the flag is "--" and the name. */
struct join_arg {
    const char *name;
    size_t offset; /* const char * field of struct ctl_args */
    bool secret;   /* never shown */
    bool number;   /* a JSON number when the flag reads as one */
};

#define ARG(name, secret, number)                                                                  \
    {                                                                                              \
#name, offsetof(struct ctl_args, name), secret, number                                     \
    }

static const struct join_arg join_args[] = {
    ARG(room, false, false),  ARG(role, false, false),    ARG(name, false, false),
    ARG(token, true, false),  ARG(password, true, false), ARG(mode, false, false),
    ARG(boids, false, true),  ARG(width, false, true),    ARG(height, false, true),
    ARG(edges, false, false), ARG(teams, false, true),    ARG(units, false, true),
};

#define NARGS (sizeof join_args / sizeof join_args[0])

static const char *arg_value(const struct ctl_args *a, const struct join_arg *j)
{
    return *(const char *const *)(const void *)((const char *)a + j->offset);
}

/* Adds argument j with the flag's value: a number where j takes one and
 * the whole value reads as a finite one, else a string (which the parser
 * then refuses by name). False if out of memory. */
static bool add_arg(cJSON *o, const struct join_arg *j, const char *value)
{
    char *end = NULL;
    double x = j->number ? strtod(value, &end) : 0.0;
    if (j->number && end != value && *end == '\0' && isfinite(x))
        return cJSON_AddNumberToObject(o, j->name, x) != NULL;
    return cJSON_AddStringToObject(o, j->name, value) != NULL;
}

/* {"cmd":"join","room":ROOM,"role":ROLE} and every given argument of a
 * (a may be NULL); NULL if out of memory. Free with cJSON_Delete(). */
static cJSON *join_object(const char *room, const char *role, const struct ctl_args *a)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "cmd", "join") &&
              cJSON_AddStringToObject(o, "room", room) && cJSON_AddStringToObject(o, "role", role);
    for (size_t i = 2; ok && a && i < NARGS; i++) {
        const char *v = arg_value(a, &join_args[i]);
        ok = !v || add_arg(o, &join_args[i], v);
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Parses o as a client command would be; 0 or the parser's code. */
static int parse_object(const cJSON *o, struct proto_error *err)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    if (!text) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return PROTO_E_NOSPACE;
    }
    const struct proto_limits lim = {1, 1, 1, 0}; /* nothing of a join depends on the world */
    struct proto_command cmd;
    int rc = proto_command_parse(text, strlen(text), &lim, &cmd, err);
    free(text);
    return rc;
}

/* Checks one given argument in an otherwise valid join. */
static int check_arg(const struct join_arg *j, const char *value, char *why, size_t cap)
{
    cJSON *o = join_object("r", "viewer", NULL);
    if (o) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, j->name);
        if (!add_arg(o, j, value)) {
            cJSON_Delete(o);
            o = NULL;
        }
    }
    struct proto_error err;
    int rc = parse_object(o, &err);
    cJSON_Delete(o);
    if (!rc)
        return 0;
    /* The parser's JSON errors are about bytes of the whole text; for one
     * string they can only mean it is not UTF-8. */
    const char *msg = rc == PROTO_E_BAD_JSON ? "not valid UTF-8" : err.message;
    const char *prefix = "join: ";
    if (!strncmp(msg, prefix, strlen(prefix)))
        msg += strlen(prefix);
    if (j->secret)
        snprintf(why, cap, "bad --%s: %s", j->name, msg);
    else
        snprintf(why, cap, "bad --%s '%s': %s", j->name, value, msg);
    return rc;
}

int ctl_join_settle(const struct ctl_command *cmd, struct ctl_args *a, char *why, size_t cap)
{
    a->join = false;
    for (size_t i = 0; i < NARGS; i++) {
        const char *v = arg_value(a, &join_args[i]);
        if (!v)
            continue;
        int rc = check_arg(&join_args[i], v, why, cap);
        if (rc)
            return rc;
        a->join = true;
    }
    if (a->join && !a->room)
        a->room = CTL_JOIN_ROOM;
    if (a->join && !a->role)
        a->role = cmd->role ? cmd->role : "viewer";
    return 0;
}

int ctl_join_text(const struct ctl_args *a, char *buf, size_t cap)
{
    cJSON *o = join_object(a->room, a->role, a);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    size_t n = text ? strlen(text) : 0;
    int rc = text && n < cap ? (int)n : PROTO_E_NOSPACE;
    if (rc >= 0)
        memcpy(buf, text, n + 1);
    free(text);
    return rc;
}

/* The wire code named code ("forbidden"); PROTO_E_INTERNAL if none is. */
static int code_of(const char *code)
{
    for (int st = PROTO_E_BAD_JSON; code && proto_status_is_wire(st); st--)
        if (!strcmp(proto_status_name(st), code))
            return st;
    return PROTO_E_INTERNAL;
}

int ctl_refusal(const cJSON *msg, char *why, size_t cap)
{
    const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "code"));
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "message"));
    snprintf(why, cap, "%s: %s", code ? code : "?", m ? m : "");
    return code_of(code);
}

int ctl_join_feed(struct ctl_join_wait *w, const char *text, size_t len, char *why, size_t cap)
{
    cJSON *msg = cJSON_ParseWithLength(text, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    int rc = 0;
    if (!type) {
        /* not a message of the exchange */
    } else if (w->phase == CTL_JOIN_SENT && !strcmp(type, "ack")) {
        w->phase = CTL_JOIN_ACKED;
    } else if (w->phase == CTL_JOIN_SENT && !strcmp(type, "error")) {
        rc = ctl_refusal(msg, why, cap);
        w->phase = CTL_JOIN_IDLE;
    } else if (w->phase == CTL_JOIN_ACKED && !strcmp(type, "welcome")) {
        w->phase = CTL_JOIN_IDLE;
        rc = 1;
    }
    cJSON_Delete(msg);
    return rc;
}
