/*
 * ctl_watch.c — `flockctl watch`: one JSON line per second about the
 * snapshots that arrived in that second: the newest tick and boid count,
 * how many snapshots and bytes came and their bytes per boid, key frames,
 * and the flock's polarization computed from the decoded headings of the
 * newest snapshot; since the start, snapshots refused and among them hash
 * mismatches. Version 3 (views) adds kilobytes per second, the newest
 * frame's grid shift and sample, and parts and boids per frame.
 *
 * A refused version 2 or 3 frame shows nothing and asks for a key frame
 * (keyframe, PROTOCOL.md §5.4) once; decoding resumes at the key frame. A
 * welcome (after a join elsewhere) starts a new stream: the bases are
 * forgotten. A room that cannot be reached (a relayed room of a cluster
 * whose owner is away: its welcome or an availability message says so,
 * PROTOCOL.md §6.6) shows "available":false and the reason in each line
 * until it is back, and each change is written to stderr as it comes.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_commands.h"
#include "ctl_session.h"
#include "ctl_snap.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct watcher {
    struct ctl_session *session; /* NULL until open returned */
    struct ctl_snap snap;
    int have;                      /* snap holds a decoded snapshot */
    uint64_t frames, bytes, boids; /* this second */
    uint64_t keys;                 /* this second: key frames (version 3: frames without a delta) */
    uint64_t parts;                /* this second: version 3 parts */
    uint64_t refused, mismatches;  /* whole run */
    bool awaiting_key;             /* a keyframe was asked for and no key came yet */
    double polarization;
    bool unavailable; /* the room's owner cannot be reached (§6.6) */
    char reason[160];
};

/* A welcome (true) or any other text message; either may say whether the
 * room is available (a welcome without "available" says it is). */
static bool read_text(struct watcher *w, const uint8_t *data, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength((const char *)data, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    bool is_welcome = type && !strcmp(type, "welcome");
    const cJSON *available = cJSON_GetObjectItemCaseSensitive(msg, "available");
    if (is_welcome)
        ctl_snap_welcome(&w->snap, msg);
    if (type && (is_welcome || !strcmp(type, "availability"))) {
        bool was = w->unavailable;
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "reason"));
        const char *room = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "room"));
        w->unavailable = cJSON_IsFalse(available);
        snprintf(w->reason, sizeof w->reason, "%s", w->unavailable && reason ? reason : "");
        if (was != w->unavailable)
            fprintf(stderr, "flockctl watch: room %s is %s%s\n", room ? room : "?",
                    w->unavailable ? "unavailable: " : "available again", w->reason);
    }
    cJSON_Delete(msg);
    return is_welcome;
}

/* s as a JSON string's contents: quotes, backslashes and controls left out. */
static void print_plain(const char *s)
{
    for (; *s; s++)
        if (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
            putchar(*s);
}

/* A refused frame: counted; a version 2 or 3 stream restarts on a key frame. */
static void refused(struct watcher *w, int rc, const uint8_t *data, size_t len)
{
    if (!w->refused++)
        fprintf(stderr, "flockctl watch: a snapshot does not decode: %s\n", proto_status_name(rc));
    w->mismatches += rc == PROTO_E_HASH_MISMATCH;
    bool bases = len >= 3 && (data[2] == PROTO_V2_VERSION || data[2] == PROTO_V3_VERSION);
    static const char ask[] = "{\"cmd\":\"keyframe\"}";
    if (bases && !w->awaiting_key && w->session &&
        ctl_session_send(w->session, ask, sizeof ask - 1) == 0)
        w->awaiting_key = true;
}

static void on_message(void *user, int binary, const uint8_t *data, size_t len)
{
    struct watcher *w = user;
    if (!binary) {
        if (read_text(w, data, len))
            w->awaiting_key = false;
        return;
    }
    int rc = ctl_snap_decode(&w->snap, data, len);
    if (rc < 0) {
        refused(w, rc, data, len);
        return;
    }
    bool v3 = w->snap.version == PROTO_V3_VERSION;
    bool key = v3 ? w->snap.v3_shape.deltas == 0
                  : w->snap.version == PROTO_V2_VERSION && w->snap.v2.kind == PROTO_V2_KIND_KEY;
    w->awaiting_key = w->awaiting_key && !key;
    w->have = 1;
    w->frames++;
    w->bytes += len;
    w->boids += w->snap.s.h.boid_count;
    w->keys += key;
    w->parts += v3 ? w->snap.v3_shape.parts : 0;
    w->polarization = ctl_snap_polarization(&w->snap.s);
}

/* Version 3's members: kB/s, the newest frame's shift and sample, parts
 * and boids per frame that second. */
static void print_v3(const struct watcher *w, double span)
{
    printf("\"kb_per_s\":%.1f,", (double)w->bytes / span / 1000.0);
    if (w->have && w->snap.version == PROTO_V3_VERSION)
        printf("\"shift\":%u,\"sample\":%u,", w->snap.v3h.shift, w->snap.v3h.sample);
    else
        printf("\"shift\":null,\"sample\":null,");
    if (w->frames)
        printf("\"parts_per_frame\":%.1f,\"boids_per_frame\":%.1f,",
               (double)w->parts / (double)w->frames, (double)w->boids / (double)w->frames);
    else
        printf("\"parts_per_frame\":null,\"boids_per_frame\":null,");
}

static void print_line(struct watcher *w, double t, double span)
{
    const struct proto_snapshot_header *h = &w->snap.s.h;
    int protocol = w->session ? ctl_session_protocol(w->session) : 0;
    bool v3 = w->snap.version == PROTO_V3_VERSION;
    printf("{\"t\":%.0f,\"protocol\":%d,", t, protocol);
    if (w->have)
        printf("\"tick\":%llu,\"boids\":%u,\"obstacles\":%u,\"paused\":%s,",
               (unsigned long long)h->tick, v3 ? w->snap.v3h.room_boids : h->boid_count,
               h->obstacle_count, (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false");
    else
        printf("\"tick\":null,\"boids\":null,\"obstacles\":null,\"paused\":null,");
    printf("\"snapshots_per_s\":%.1f,\"bytes_per_s\":%.0f,", (double)w->frames / span,
           (double)w->bytes / span);
    if (w->boids)
        printf("\"bytes_per_boid\":%.3f,", (double)w->bytes / (double)w->boids);
    else
        printf("\"bytes_per_boid\":null,");
    printf("\"key_frames\":%llu,", (unsigned long long)w->keys);
    if (protocol == PROTO_V3_VERSION)
        print_v3(w, span);
    if (w->have)
        printf("\"polarization\":%.3f,", w->polarization);
    else
        printf("\"polarization\":null,");
    printf("\"refused\":%llu,\"hash_mismatches\":%llu,\"available\":%s",
           (unsigned long long)w->refused, (unsigned long long)w->mismatches,
           w->unavailable ? "false" : "true");
    if (w->unavailable) {
        printf(",\"reason\":\"");
        print_plain(w->reason);
        printf("\"");
    }
    printf("}\n");
    fflush(stdout);
    w->frames = w->bytes = w->boids = w->keys = w->parts = 0;
}

int ctl_watch_run(const struct ctl_args *a)
{
    struct watcher w = {0};
    struct ctl_open_error err;
    struct ctl_session *s = ctl_session_open(a, on_message, &w, &err);
    if (!s) {
        fprintf(stderr, "flockctl watch: %s\n", err.reason);
        ctl_snap_free(&w.snap);
        return err.status;
    }
    w.session = s;
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
    if (w.refused)
        rc = CTL_EXIT_FAILED;
    return rc;
}
