/*
 * endpoints.c — the bodies of /healthz, /api/rooms and /metrics (see
 * endpoints.h). Room names are [A-Za-z0-9_-]: they need no escaping in
 * JSON or in a Prometheus label.
 */
#include "endpoints.h"

#include "cluster.h"
#include "lobby.h"
#include "metrics.h"
#include "room.h"
#include "textbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROOMS_MAX 1024 /* max-rooms is at most 1024 */

int endpoints_health(const struct lobby *l, struct cluster *cluster, size_t clients, char *buf,
                     size_t cap)
{
    struct room_info info;
    room_info(lobby_room_room(lobby_at(l, 0)), &info);
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t,
                   "{\"status\":\"ok\",\"tick\":%llu,\"clients\":%zu,\"boids\":%u,\"rooms\":%zu",
                   (unsigned long long)info.tick, clients, info.boids, lobby_count(l));
    if (cluster)
        cluster_render_health(cluster, &t);
    textbuf_printf(&t, "}\n");
    return textbuf_finish(&t);
}

/* ---- /api/rooms ------------------------------------------------------------------ */

/* The rooms in the order /api/rooms lists them: default first, then by
 * name. Returns how many, or PROTO_E_NOSPACE past cap. */
static int rooms_in_order(const struct lobby *l, struct lobby_room **order, size_t cap)
{
    size_t n = lobby_count(l);
    if (n > cap)
        return PROTO_E_NOSPACE;
    for (size_t i = 0; i < n; i++) {
        struct lobby_room *lr = lobby_at(l, i);
        struct lobby_room_summary a, b;
        lobby_room_summary(lr, &a);
        size_t j = i;
        for (; j > 1; j--) {
            lobby_room_summary(order[j - 1], &b);
            if (strcmp(b.name, a.name) <= 0)
                break;
            order[j] = order[j - 1];
        }
        order[j] = lr;
    }
    return (int)n;
}

static void render_room(struct textbuf *t, struct lobby_room *lr, bool first, const char *node)
{
    struct lobby_room_summary sum;
    struct room_info info;
    lobby_room_summary(lr, &sum);
    room_info(lobby_room_room(lr), &info);
    textbuf_printf(t,
                   "%s{\"name\":\"%s\",\"mode\":\"%s\",\"players\":%u,\"admins\":%u,"
                   "\"viewers\":%u,\"boids\":%u,\"tick\":%llu,\"tick_hz\":%g,\"snapshot_hz\":%g,"
                   "\"password\":%s,\"teams\":%u,\"late_p99_ms\":%.3f",
                   first ? "" : ",", sum.name, proto_mode_name(sum.mode), sum.players, sum.admins,
                   sum.viewers, info.boids, (unsigned long long)info.tick, info.tick_hz,
                   info.snapshot_hz, sum.has_password ? "true" : "false", sum.teams,
                   info.late_p99_ms);
    if (sum.mode == PROTO_MODE_RTS)
        textbuf_printf(t, ",\"max_teams\":%u,\"units\":%u", sum.max_teams, sum.team_units);
    textbuf_printf(t, ",\"width\":%g,\"height\":%g,\"edges\":\"%s\"", info.width, info.height,
                   info.wrap ? "wrap" : "contain");
    char script[SCRIPT_NAME_MAX + 1];
    uint64_t hash;
    if (room_script_info(lobby_room_room(lr), script, &hash, NULL)) /* a name: [A-Za-z0-9_-] */
        textbuf_printf(t, ",\"script\":\"%s\"", script);
    if (node)
        textbuf_printf(t, ",\"node\":\"%s\"", node);
    textbuf_printf(t, "}");
}

/* A room of the cluster's directory that this node has (cluster_local_fn):
 * rendered with what this node knows of its members, and true; false if
 * it has not. */
static bool render_local(void *arg, struct textbuf *t, const char *name, const char *node,
                         bool first)
{
    const struct lobby *l = arg;
    for (size_t i = 0; i < lobby_count(l); i++)
        if (!strcmp(lobby_room_name(lobby_at(l, i)), name)) {
            render_room(t, lobby_at(l, i), first, node);
            return true;
        }
    return false;
}

int endpoints_rooms(const struct lobby *l, struct cluster *cluster, char *buf, size_t cap)
{
    struct lobby_room *order[ROOMS_MAX];
    int n = rooms_in_order(l, order, ROOMS_MAX);
    if (n < 0)
        return n;
    struct textbuf t;
    textbuf_init(&t, buf, cap);
    textbuf_printf(&t, "{\"rooms\":[");
    if (cluster) /* every room of the cluster, each with its node */
        cluster_render_rooms(cluster, &t, render_local, (void *)l);
    for (int i = 0; !cluster && i < n; i++)
        render_room(&t, order[i], i == 0, NULL);
    textbuf_printf(&t, "],\"max_rooms\":%u,\"create\":%s}\n", lobby_max_rooms(l),
                   lobby_can_create(l) ? "true" : "false");
    return textbuf_finish(&t);
}

/* ---- /metrics --------------------------------------------------------------------- */

/* The type of a field of struct room_info a gauge reads. */
enum gauge_field { U32, U64, F32, F64 };

/* One per-room gauge of /metrics: its name and help, the field of struct
 * room_info it shows (divided by `per`: 1e3 turns ms into seconds), and
 * whether only rooms whose flock was measured have it. */
struct room_gauge {
    const char *name, *help;
    size_t offset;
    enum gauge_field type;
    double per;
    bool flock;
};

#define FIELD(f) offsetof(struct room_info, f)

static const struct room_gauge room_gauges[] = {
    {"room_boids", "Boids in the room.", FIELD(boids), U32, 1, false},
    {"room_tick_seconds_mean", "How long the room's recent ticks took, mean.", FIELD(tick_ms_mean),
     F64, 1e3, false},
    {"room_tick_seconds_p99", "How long the room's recent ticks took, 99th percentile.",
     FIELD(tick_ms_p99), F64, 1e3, false},
    {"room_tick_lateness_seconds_p99", "How late the room's recent ticks started, 99th percentile.",
     FIELD(late_p99_ms), F64, 1e3, false},
    {"room_time_dilation",
     "Ticks a second the room achieves over its nominal rate, smoothed; 1 when it keeps up.",
     FIELD(dilation), F64, 1, false},
    {"room_snapshot_hz", "Snapshots a second the room encodes now: fewer while it sheds load.",
     FIELD(snapshot_hz_now), F64, 1, false},
    {"flock_local_polarization", "Mean alignment of each boid's neighbourhood, 0..1.",
     FIELD(flock.local_polarization), F32, 1, true},
    {"flock_global_polarization", "Alignment of the whole flock, 0..1.",
     FIELD(flock.global_polarization), F32, 1, true},
    {"flock_nearest_neighbour_p5_units", "Nearest-neighbour distance, 5th percentile.",
     FIELD(flock.nn_p5), F32, 1, true},
    {"flock_nearest_neighbour_median_units", "Nearest-neighbour distance, median.",
     FIELD(flock.nn_median), F32, 1, true},
    {"flock_mean_speed_units_per_second", "Mean speed of the boids.", FIELD(flock.mean_speed), F32,
     1, true},
    {"flock_clusters", "Connected groups of boids within perception, lone boids included.",
     FIELD(flock.clusters), U32, 1, true},
    {"flock_largest_cluster_boids", "Boids in the largest cluster.", FIELD(flock.largest_cluster),
     U32, 1, true},
    {"flock_flocks", "Clusters of at least 10 boids.", FIELD(flock.flocks), U32, 1, true},
    {"flock_mills", "Flocks that circle about their centre.", FIELD(flock.mills), U32, 1, true},
    {"flock_mill_fraction", "Share of the boids in mills, 0..1.", FIELD(flock.mill_fraction), F32,
     1, true},
    {"flock_measured_tick", "The tick the flock's measures were taken at.", FIELD(flock_tick), U64,
     1, true},
    {"flock_measure_seconds", "How long taking the flock's measures last took.", FIELD(flock_ms),
     F64, 1e3, true},
};

/* The value gauge g shows for a room of figures *info. */
static double gauge_value(const struct room_gauge *g, const struct room_info *info)
{
    const unsigned char *p = (const unsigned char *)info + g->offset;
    double v = 0;
    switch (g->type) {
    case U32:
        v = *(const uint32_t *)(const void *)p;
        break;
    case U64:
        v = (double)*(const uint64_t *)(const void *)p;
        break;
    case F32:
        v = *(const float *)(const void *)p;
        break;
    case F64:
        v = *(const double *)(const void *)p;
        break;
    }
    return v / g->per;
}

/* Per-room gauges after the process-wide metrics: each family's HELP and
 * TYPE once, then one sample per room, {room="NAME"}. */
static void render_room_metrics(const struct lobby *l, struct textbuf *t)
{
    struct lobby_room *order[ROOMS_MAX];
    int n = rooms_in_order(l, order, ROOMS_MAX);
    struct room_info *info = n > 0 ? malloc((size_t)n * sizeof *info) : NULL;
    if (!info)
        return;
    for (int i = 0; i < n; i++)
        room_info(lobby_room_room(order[i]), &info[i]);
    for (size_t g = 0; g < sizeof room_gauges / sizeof room_gauges[0]; g++) {
        const struct room_gauge *rg = &room_gauges[g];
        textbuf_printf(t, "# HELP flockd_%s %s\n# TYPE flockd_%s gauge\n", rg->name, rg->help,
                       rg->name);
        for (int i = 0; i < n; i++)
            if (!rg->flock || info[i].has_flock)
                textbuf_printf(t, "flockd_%s{room=\"%s\"} %.9g\n", rg->name,
                               room_name(lobby_room_room(order[i])), gauge_value(rg, &info[i]));
    }
    free(info);
}

int endpoints_metrics(const struct lobby *l, struct cluster *cluster, char *buf, size_t cap)
{
    int len = metrics_render(buf, cap);
    if (len < 0)
        return len;
    struct textbuf t;
    textbuf_init(&t, buf + len, cap - (size_t)len);
    render_room_metrics(l, &t);
    if (cluster)
        cluster_render_metrics(cluster, &t);
    int more = textbuf_finish(&t);
    return more < 0 ? more : len + more;
}
