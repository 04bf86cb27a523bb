/*
 * ctl_view.c — the view's flags, text and reply (see ctl_view.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_view.h"

#include "ctl_join.h"
#include "proto.h"
#include "proto_command.h"
#include "proto_v3.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The id the view is sent with: its reply names it. */
#define VIEW_ID "view"

/* Reads n comma-separated finite numbers from s into out; -1 if s is not
 * exactly that. */
static int parse_numbers(const char *s, double *out, int n)
{
    for (int k = 0; k < n; k++) {
        char *end;
        errno = 0;
        out[k] = strtod(s, &end);
        if (errno || end == s || !isfinite(out[k]) || *end != (k + 1 < n ? ',' : '\0'))
            return -1;
        s = end + 1;
    }
    return 0;
}

/* --view X,Y,W,H into a->view_args; -1 with why set if it is not one. */
static int settle_rect(struct ctl_args *a, char *why, size_t cap)
{
    double v[4];
    if (parse_numbers(a->view_rect, v, 4) || v[0] < 0 || v[1] < 0 || v[2] < 1 || v[3] < 1 ||
        v[0] > 1e9 || v[1] > 1e9 || v[2] > 1e9 || v[3] > 1e9) {
        snprintf(why, cap,
                 "--view wants X,Y,W,H: four numbers, X and Y >= 0, W and H >= 1 (world "
                 "units), not '%s'",
                 a->view_rect);
        return -1;
    }
    for (int k = 0; k < 4; k++)
        a->view_args[k] = (float)v[k];
    return 0;
}

/* --views random with --view-size W,H; -1 with why set if the size is not one. */
static int settle_random(struct ctl_args *a, char *why, size_t cap)
{
    const char *size = a->view_size ? a->view_size : CTL_VIEW_SIZE_DEFAULT;
    double v[2];
    if (parse_numbers(size, v, 2) || v[0] < 1 || v[1] < 1 || v[0] > 1e9 || v[1] > 1e9) {
        snprintf(why, cap, "--view-size wants W,H: two numbers >= 1 (world units), not '%s'", size);
        return -1;
    }
    a->view_args[0] = a->view_args[1] = 0;
    a->view_args[2] = (float)v[0];
    a->view_args[3] = (float)v[1];
    a->random_views = true;
    return 0;
}

/* The first flag of a view that needs another: its name, or NULL. */
static const char *stray_flag(const struct ctl_args *a)
{
    if (a->view_size && !a->views)
        return "--view-size needs --views random";
    if ((a->px || a->budget) && !a->view_rect && !a->views)
        return a->px ? "--px needs --view or --views random"
                     : "--budget needs --view or --views random";
    if (a->view_rect && a->views)
        return "--view and --views exclude each other";
    return NULL;
}

int ctl_view_settle(struct ctl_args *a, char *why, size_t cap)
{
    a->view = a->random_views = false;
    const char *stray = stray_flag(a);
    if (stray) {
        snprintf(why, cap, "%s", stray);
        return CTL_EXIT_USAGE;
    }
    if (!a->view_rect && !a->views)
        return 0;
    if (a->protocol != PROTO_V3_VERSION) {
        snprintf(why, cap, "%s needs --protocol 3 (views are version 3's, PROTOCOL.md 12.4)",
                 a->view_rect ? "--view" : "--views");
        return CTL_EXIT_USAGE;
    }
    if (a->view_rect ? settle_rect(a, why, cap) : settle_random(a, why, cap))
        return CTL_EXIT_USAGE;
    a->view = true;
    return 0;
}

int ctl_view_text(const struct ctl_args *a, const float rect[4], char *buf, size_t cap)
{
    struct proto_command cmd = {.kind = PROTO_CMD_VIEW};
    snprintf(cmd.id, sizeof cmd.id, "\"%s\"", VIEW_ID);
    cmd.args.view = (struct proto_view_args){.x = rect[0],
                                             .y = rect[1],
                                             .w = rect[2],
                                             .h = rect[3],
                                             .px = (uint32_t)a->px,
                                             .budget = (uint32_t)a->budget};
    int n = proto_command_format(&cmd, buf, cap);
    return n >= 0 && (size_t)n < cap ? n : PROTO_E_NOSPACE;
}

int ctl_view_path(const struct ctl_args *a, const float rect[4], const char *path, char *buf,
                  size_t cap)
{
    int n = snprintf(buf, cap, "%s%cview=%.9g,%.9g,%.9g,%.9g", path, strchr(path, '?') ? '&' : '?',
                     (double)rect[0], (double)rect[1], (double)rect[2], (double)rect[3]);
    if (n >= 0 && (size_t)n < cap && a->px)
        n += snprintf(buf + n, cap - (size_t)n, "&px=%d", a->px);
    if (n >= 0 && (size_t)n < cap && a->budget)
        n += snprintf(buf + n, cap - (size_t)n, "&budget=%d", a->budget);
    return n >= 0 && (size_t)n < cap ? n : PROTO_E_NOSPACE;
}

void ctl_view_random(const struct ctl_args *a, double width, double height, double u, double v,
                     float rect[4])
{
    double w = fmin(a->view_args[2], width), h = fmin(a->view_args[3], height);
    rect[0] = (float)(u * (width - w));
    rect[1] = (float)(v * (height - h));
    rect[2] = (float)w;
    rect[3] = (float)h;
}

/* True if msg's id is the view's: "view", or none for the URL's. */
static bool is_views(const cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *text = cJSON_GetStringValue(id);
    return !id || cJSON_IsNull(id) || (text && !strcmp(text, VIEW_ID));
}

/* A number member of msg that is finite and >= 0, else 0. */
static double number(const cJSON *msg, const char *name)
{
    double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(msg, name));
    return isfinite(v) && v >= 0 && v < 1e15 ? v : 0;
}

static void read_ack(const cJSON *msg, struct ctl_view_ack *ack)
{
    *ack = (struct ctl_view_ack){0};
    ack->shift = (unsigned)number(msg, "shift");
    ack->sample = (unsigned)number(msg, "sample");
    const cJSON *rect = cJSON_GetObjectItemCaseSensitive(msg, "rect");
    for (int k = 0; k < 4 && cJSON_GetArraySize(rect) == 4; k++) {
        double v = cJSON_GetNumberValue(cJSON_GetArrayItem(rect, k));
        ack->rect[k] = isfinite(v) && v >= 0 && v <= 255 ? (unsigned)v : 0;
    }
    ack->boids = number(msg, "boids");
    ack->bytes = number(msg, "bytes");
    ack->rate = number(msg, "rate");
}

int ctl_view_feed(const char *text, size_t len, struct ctl_view_ack *ack, char *why, size_t cap)
{
    cJSON *msg = cJSON_ParseWithLength(text, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    int rc = 0;
    if (type && is_views(msg) && !strcmp(type, "ack")) {
        read_ack(msg, ack);
        rc = 1;
    } else if (type && is_views(msg) && !strcmp(type, "error")) {
        rc = ctl_refusal(msg, why, cap);
    }
    cJSON_Delete(msg);
    return rc;
}
