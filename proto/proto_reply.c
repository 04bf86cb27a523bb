/*
 * proto_reply.c — welcome, ack and error messages (PROTOCOL.md §6).
 */
#include "proto_reply.h"

#include "proto_json.h"

#include <stdio.h>
#include <string.h>

#ifndef FLOCKD_VERSION
#define FLOCKD_VERSION "0.0.0"
#endif

/* The id as sent, or null if there is none or it is not one JSON scalar. */
static void put_id(struct proto_json_writer *w, const char *id)
{
    proto_json_key(w, "id");
    if (id && id[0] && proto_json_is_scalar(id))
        proto_json_raw(w, id);
    else
        proto_json_null(w);
}

static void put_world(struct proto_json_writer *w, const struct proto_welcome *in)
{
    proto_json_key(w, "world");
    proto_json_open(w, '{');
    proto_json_member_float(w, "width", in->width);
    proto_json_member_float(w, "height", in->height);
    proto_json_member_str(w, "edges", in->wrap ? "wrap" : "contain");
    proto_json_member_u64(w, "capacity", in->capacity);
    proto_json_member_u64(w, "max_obstacles", in->max_obstacles);
    proto_json_close(w, '}');
    proto_json_key(w, "limits");
    proto_json_open(w, '{');
    proto_json_member_u64(w, "max_message", in->max_message);
    if (in->rate > 0) {
        proto_json_key(w, "rate");
        proto_json_double(w, in->rate);
        proto_json_member_u64(w, "burst", in->burst);
        proto_json_member_u64(w, "player_obstacles", in->player_obstacles);
    }
    proto_json_close(w, '}');
    if (in->max_teams > 0) {
        proto_json_key(w, "teams");
        proto_json_open(w, '{');
        proto_json_member_u64(w, "max", in->max_teams);
        proto_json_member_u64(w, "units", in->team_units);
        proto_json_member_u64(w, "cap", in->team_cap);
        proto_json_close(w, '}');
    }
}

/* The registry, in its order: everything a client needs to build sliders. */
static void put_param_list(struct proto_json_writer *w)
{
    proto_json_key(w, "params");
    proto_json_open(w, '[');
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        proto_json_open(w, '{');
        proto_json_member_str(w, "name", d->name);
        proto_json_member_float(w, "default", d->def);
        proto_json_member_float(w, "min", d->min);
        proto_json_member_float(w, "max", d->max);
        proto_json_member_str(w, "unit", d->unit);
        proto_json_key(w, "integer");
        proto_json_bool(w, d->integer);
        proto_json_member_str(w, "help", d->help);
        proto_json_close(w, '}');
    }
    proto_json_close(w, ']');
}

/* values, or the registry's defaults when NULL. */
static struct sim_params values_or_defaults(const struct sim_params *values)
{
    struct sim_params v;
    if (values)
        v = *values;
    else
        sim_params_default(&v);
    return v;
}

/* key:{NAME:VALUE,...}: every parameter of v in the registry's order, or,
 * with base, only those that differ from it. */
static void put_params(struct proto_json_writer *w, const char *key, struct sim_params v,
                       const struct sim_params *base)
{
    struct sim_params b = base ? *base : v;
    proto_json_key(w, key);
    proto_json_open(w, '{');
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        float x = *sim_param_field(&v, d);
        if (!base || x != *sim_param_field(&b, d))
            proto_json_member_float(w, d->name, x);
    }
    proto_json_close(w, '}');
}

/* "groups":{"3":{"max_speed":150},...}: each group's members that differ
 * from group 0's. Left out when no group differs. */
static void put_groups(struct proto_json_writer *w, const struct sim_params *base,
                       const struct proto_group_values *groups, size_t n)
{
    if (!n)
        return;
    proto_json_key(w, "groups");
    proto_json_open(w, '{');
    for (size_t g = 0; g < n; g++) {
        char key[8];
        snprintf(key, sizeof key, "%u", groups[g].group & 0xffu);
        put_params(w, key, *groups[g].values, base);
    }
    proto_json_close(w, '}');
}

/* "flock":{...}: the measures of §6.5. */
static void put_flock(struct proto_json_writer *w, const struct proto_flock *f)
{
    proto_json_key(w, "flock");
    if (!f) {
        proto_json_null(w);
        return;
    }
    proto_json_open(w, '{');
    proto_json_member_u64(w, "tick", f->tick);
    proto_json_member_u64(w, "boids", f->boids);
    proto_json_member_float(w, "local_polarization", f->local_polarization);
    proto_json_member_float(w, "global_polarization", f->global_polarization);
    proto_json_member_float(w, "nn_p5", f->nn_p5);
    proto_json_member_float(w, "nn_median", f->nn_median);
    proto_json_member_float(w, "mean_speed", f->mean_speed);
    proto_json_member_u64(w, "clusters", f->clusters);
    proto_json_member_u64(w, "largest_cluster", f->largest_cluster);
    proto_json_member_u64(w, "flocks", f->flocks);
    proto_json_member_u64(w, "mills", f->mills);
    proto_json_member_float(w, "mill_fraction", f->mill_fraction);
    proto_json_member_float(w, "measure_ms", (float)f->ms);
    proto_json_close(w, '}');
}

/* "stream" of a version 3 welcome (§12.3). */
static void put_stream(struct proto_json_writer *w, const struct proto_welcome_stream *st)
{
    proto_json_key(w, "stream");
    proto_json_open(w, '{');
    proto_json_key(w, "tiles");
    proto_json_open(w, '{');
    proto_json_member_i64(w, "cols", st->cols);
    proto_json_member_i64(w, "rows", st->rows);
    proto_json_close(w, '}');
    proto_json_member_i64(w, "max_shift", st->max_shift);
    proto_json_member_i64(w, "max_sample", st->max_sample);
    proto_json_key(w, "field");
    proto_json_open(w, '{');
    proto_json_member_i64(w, "cells", st->field_cells);
    proto_json_member_float(w, "vscale", st->vscale);
    proto_json_close(w, '}');
    proto_json_member_i64(w, "budget", (int64_t)st->budget);
    proto_json_member_str(w, "audience", st->audience);
    proto_json_member_float(w, "delay_s", (float)st->delay_s);
    proto_json_close(w, '}');
}

int proto_reply_welcome(char *buf, size_t cap, const struct proto_welcome *in)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "welcome");
    proto_json_member_u64(&w, "protocol", in->protocol ? in->protocol : PROTO_VERSION);
    proto_json_member_str(&w, "server", PROTO_SERVER_NAME);
    proto_json_member_str(&w, "version", in->version ? in->version : FLOCKD_VERSION);
    proto_json_member_u64(&w, "client", in->client);
    if (in->room) {
        proto_json_member_str(&w, "room", in->room);
        proto_json_member_str(&w, "mode", proto_mode_name(in->mode));
        proto_json_member_str(&w, "role", proto_role_name(in->role));
        if (in->team >= 0)
            proto_json_member_i64(&w, "team", in->team);
    }
    proto_json_member_u64(&w, "tick", in->tick);
    proto_json_key(&w, "tick_hz");
    proto_json_double(&w, in->tick_hz);
    proto_json_key(&w, "snapshot_hz");
    proto_json_double(&w, in->snapshot_hz);
    put_world(&w, in);
    put_param_list(&w);
    struct sim_params values = values_or_defaults(in->values);
    put_params(&w, "values", values, NULL);
    put_groups(&w, &values, in->groups, in->n_groups);
    if (in->flock)
        put_flock(&w, in->flock);
    if (in->replay) {
        proto_json_key(&w, "replay");
        proto_json_open(&w, '{');
        proto_json_member_u64(&w, "first_tick", in->replay_first);
        proto_json_member_u64(&w, "last_tick", in->replay_last);
        proto_json_close(&w, '}');
    }
    if (in->unavailable) {
        proto_json_key(&w, "available");
        proto_json_bool(&w, 0);
        proto_json_member_str(&w, "reason", in->unavailable_reason ? in->unavailable_reason : "");
    }
    if (in->dilation > 0 && in->dilation < 1)
        proto_json_member_float(&w, "dilation", (float)in->dilation);
    if (in->stream)
        put_stream(&w, in->stream);
    if (in->script) {
        char hash[17];
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)in->script_hash);
        proto_json_key(&w, "script");
        proto_json_open(&w, '{');
        proto_json_member_str(&w, "name", in->script);
        proto_json_member_str(&w, "hash", hash);
        proto_json_close(&w, '}');
    }
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_availability(char *buf, size_t cap, const char *room, int available,
                             const char *reason)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "availability");
    proto_json_member_str(&w, "room", room);
    proto_json_key(&w, "available");
    proto_json_bool(&w, available);
    if (!available)
        proto_json_member_str(&w, "reason", reason ? reason : "");
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_dilation(char *buf, size_t cap, const struct proto_dilation *d)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "dilation");
    proto_json_member_str(&w, "room", d->room);
    proto_json_member_float(&w, "factor", (float)d->factor);
    proto_json_member_float(&w, "tick_hz", (float)d->tick_hz);
    proto_json_member_float(&w, "snapshot_hz", (float)d->snapshot_hz);
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_ack(char *buf, size_t cap, const char *id, uint64_t tick,
                    const struct proto_ack_field *extra, size_t n_extra)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "ack");
    put_id(&w, id);
    proto_json_member_u64(&w, "tick", tick);
    for (size_t i = 0; i < n_extra; i++) {
        if (extra[i].text) {
            proto_json_member_str(&w, extra[i].key, extra[i].text);
        } else {
            proto_json_key(&w, extra[i].key);
            proto_json_i64(&w, extra[i].value);
        }
    }
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_stats(char *buf, size_t cap, const char *id, uint64_t tick,
                      const struct proto_stats *s)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "ack");
    put_id(&w, id);
    proto_json_member_u64(&w, "tick", tick);
    proto_json_key(&w, "stats");
    proto_json_open(&w, '{');
    proto_json_member_u64(&w, "boids", s->boids);
    proto_json_key(&w, "paused");
    proto_json_bool(&w, s->paused);
    proto_json_member_float(&w, "tick_ms_mean", (float)s->tick_ms_mean);
    proto_json_member_float(&w, "tick_ms_p99", (float)s->tick_ms_p99);
    proto_json_member_float(&w, "late_ms_p99", (float)s->late_ms_p99);
    proto_json_member_float(&w, "dilation", (float)s->dilation);
    proto_json_member_float(&w, "snapshot_hz", (float)s->snapshot_hz);
    put_flock(&w, s->flock);
    proto_json_close(&w, '}');
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_view(char *buf, size_t cap, const char *id, uint64_t tick,
                     const struct proto_view_ack *v)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "ack");
    put_id(&w, id);
    proto_json_member_u64(&w, "tick", tick);
    proto_json_member_u64(&w, "shift", v->shift);
    proto_json_member_u64(&w, "sample", v->sample);
    proto_json_key(&w, "rect");
    proto_json_open(&w, '[');
    for (int k = 0; k < 4; k++)
        proto_json_u64(&w, v->rect[k]);
    proto_json_close(&w, ']');
    proto_json_member_u64(&w, "boids", v->boids);
    proto_json_member_u64(&w, "bytes", v->bytes);
    proto_json_key(&w, "rate");
    proto_json_double(&w, v->rate);
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_error(char *buf, size_t cap, const char *id, int code, const char *message)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "error");
    put_id(&w, id);
    proto_json_member_str(&w, "code",
                          proto_status_name(proto_status_is_wire(code) ? code : PROTO_E_INTERNAL));
    proto_json_member_str(&w, "message", message ? message : "");
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}

int proto_reply_roster(char *buf, size_t cap, const char *room, enum proto_mode mode,
                       uint32_t viewers, const struct proto_roster_entry *players, size_t n,
                       size_t more)
{
    struct proto_json_writer w;
    proto_json_init(&w, buf, cap);
    proto_json_open(&w, '{');
    proto_json_member_str(&w, "type", "roster");
    proto_json_member_str(&w, "room", room);
    proto_json_member_str(&w, "mode", proto_mode_name(mode));
    proto_json_member_u64(&w, "viewers", viewers);
    proto_json_key(&w, "players");
    proto_json_open(&w, '[');
    for (size_t i = 0; i < n; i++) {
        const struct proto_roster_entry *p = &players[i];
        proto_json_open(&w, '{');
        proto_json_member_u64(&w, "client", p->client);
        proto_json_member_str(&w, "name", p->name ? p->name : "");
        proto_json_member_str(&w, "role", proto_role_name(p->role));
        if (p->team >= 0)
            proto_json_member_i64(&w, "team", p->team);
        proto_json_key(&w, "connected");
        proto_json_bool(&w, p->connected);
        proto_json_close(&w, '}');
    }
    proto_json_close(&w, ']');
    if (more)
        proto_json_member_u64(&w, "more", more);
    proto_json_close(&w, '}');
    return proto_json_finish(&w);
}
