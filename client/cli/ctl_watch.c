/*
 * ctl_watch.c — `flockctl watch`: one JSON line per second about the
 * snapshots that arrived in that second: the newest tick and boid count,
 * how many snapshots and bytes came, and the flock's polarization computed
 * from the decoded headings of the newest snapshot.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_commands.h"
#include "ctl_session.h"
#include "ctl_snap.h"

#include <stdio.h>

struct watcher {
    struct ctl_snap snap;
    int have;               /* snap holds a decoded snapshot */
    uint64_t frames, bytes; /* this second */
    uint64_t bad;           /* snapshots that failed to decode, whole run */
    double polarization;
};

static void on_message(void *user, int binary, const uint8_t *data, size_t len)
{
    struct watcher *w = user;
    if (!binary)
        return;
    int rc = ctl_snap_decode(&w->snap, data, len);
    if (rc < 0) {
        if (!w->bad++)
            fprintf(stderr, "flockctl watch: a snapshot does not decode: %s\n",
                    proto_status_name(rc));
        return;
    }
    w->have = 1;
    w->frames++;
    w->bytes += len;
    w->polarization = ctl_snap_polarization(&w->snap.s);
}

static void print_line(struct watcher *w, double t, double span)
{
    const struct proto_snapshot_header *h = &w->snap.s.h;
    if (w->have)
        printf("{\"t\":%.0f,\"tick\":%llu,\"boids\":%u,\"obstacles\":%u,\"paused\":%s,"
               "\"snapshots_per_s\":%.1f,\"bytes_per_s\":%.0f,\"polarization\":%.3f}\n",
               t, (unsigned long long)h->tick, h->boid_count, h->obstacle_count,
               (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false", (double)w->frames / span,
               (double)w->bytes / span, w->polarization);
    else
        printf("{\"t\":%.0f,\"tick\":null,\"boids\":null,\"obstacles\":null,\"paused\":null,"
               "\"snapshots_per_s\":0,\"bytes_per_s\":0,\"polarization\":null}\n",
               t);
    fflush(stdout);
    w->frames = w->bytes = 0;
}

int ctl_watch_run(const struct ctl_args *a)
{
    struct watcher w = {0};
    char err[256];
    struct ctl_session *s = ctl_session_open(a->url, a->timeout, on_message, &w, err, sizeof err);
    if (!s) {
        fprintf(stderr, "flockctl watch: %s\n", err);
        return CTL_EXIT_CONNECT;
    }
    double start = ctl_mono_s(), last = start;
    int rc = CTL_EXIT_OK, line = 0;
    while (!ctl_stop) {
        if (ctl_session_service(s)) {
            fprintf(stderr, "flockctl watch: %s\n", ctl_session_error(s));
            rc = CTL_EXIT_FAILED;
            break;
        }
        double now = ctl_mono_s();
        if (now - start >= line + 1) {
            line++;
            print_line(&w, line, now - last);
            last = now;
            if (a->seconds > 0 && line >= a->seconds)
                break;
        }
    }
    ctl_session_close(s);
    ctl_snap_free(&w.snap);
    if (w.bad)
        rc = CTL_EXIT_FAILED;
    return rc;
}
