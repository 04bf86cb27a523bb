/*
 * ctl_record.c — `flockctl record` writes every message flockd sends (the
 * welcome, then snapshots) with its arrival time to a file; `flockctl dump`
 * prints such a file as JSON lines, snapshots decoded. The file format is
 * documented in RECORDING.md; the constants below follow it.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_commands.h"
#include "ctl_session.h"
#include "ctl_snap.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_MAGIC       "FLOCKREC"
#define REC_VERSION     1
#define REC_FILE_HEADER 16
#define REC_HEADER      16
#define REC_SNAPSHOT    1
#define REC_TEXT        2
#define REC_MAX_LEN     (256u << 20) /* dump refuses larger records */

/* ---- record ---------------------------------------------------------------- */

struct recorder {
    FILE *f;
    int failed; /* a write failed */
    uint64_t snapshots, bytes;
};

static void write_record(struct recorder *r, int kind, const uint8_t *data, size_t len)
{
    uint8_t hdr[REC_HEADER] = {0};
    proto_put_le(hdr, ctl_wall_us(), 8);
    proto_put_le(hdr + 8, len, 4);
    hdr[12] = (uint8_t)kind;
    if (fwrite(hdr, 1, sizeof hdr, r->f) != sizeof hdr || fwrite(data, 1, len, r->f) != len)
        r->failed = 1;
    r->bytes += sizeof hdr + len;
}

static void on_message(void *user, int binary, const uint8_t *data, size_t len)
{
    struct recorder *r = user;
    if (r->failed || len > UINT32_MAX)
        return;
    write_record(r, binary ? REC_SNAPSHOT : REC_TEXT, data, len);
    r->snapshots += binary != 0;
}

static FILE *create_file(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    uint8_t hdr[REC_FILE_HEADER] = {0};
    memcpy(hdr, REC_MAGIC, 8);
    proto_put_le(hdr + 8, REC_VERSION, 2);
    proto_put_le(hdr + 10, PROTO_VERSION, 2);
    if (fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr) {
        fclose(f);
        return NULL;
    }
    return f;
}

int ctl_record_run(const struct ctl_args *a)
{
    const char *path = a->pos[0];
    struct recorder r = {0};
    r.f = create_file(path);
    if (!r.f) {
        fprintf(stderr, "flockctl record: cannot write %s: %s\n", path, strerror(errno));
        return CTL_EXIT_FAILED;
    }
    char err[256];
    struct ctl_session *s = ctl_session_open(a->url, a->timeout, on_message, &r, err, sizeof err);
    if (!s) {
        fprintf(stderr, "flockctl record: %s\n", err);
        fclose(r.f);
        return CTL_EXIT_CONNECT;
    }
    int rc = CTL_EXIT_OK;
    double end = ctl_mono_s() + a->seconds;
    while (!ctl_stop && !r.failed && (a->seconds <= 0 || ctl_mono_s() < end)) {
        if (ctl_session_service(s)) {
            fprintf(stderr, "flockctl record: %s\n", ctl_session_error(s));
            rc = CTL_EXIT_FAILED;
            break;
        }
    }
    ctl_session_close(s);
    if (fclose(r.f) || r.failed) {
        fprintf(stderr, "flockctl record: writing %s failed\n", path);
        rc = CTL_EXIT_FAILED;
    }
    printf("{\"file\":\"%s\",\"snapshots\":%llu,\"bytes\":%llu}\n", path,
           (unsigned long long)r.snapshots, (unsigned long long)r.bytes);
    return rc;
}

/* ---- dump ------------------------------------------------------------------ */

/* Prints one snapshot as a JSON line (fields in RECORDING.md). */
static void print_snapshot(uint64_t arrival, const struct proto_snapshot *s, size_t len)
{
    const struct proto_snapshot_header *h = &s->h;
    printf("{\"arrival_us\":%llu,\"kind\":\"snapshot\",\"size\":%zu,\"version\":%u,\"type\":%u,"
           "\"flags\":%u,\"paused\":%s,\"wrap\":%s,\"tick\":%llu,\"server_time_us\":%llu,"
           "\"width\":%.9g,\"height\":%.9g,\"epoch\":%u,\"boid_count\":%u,\"run_count\":%u,"
           "\"obstacle_count\":%u,\"target_count\":%u,\"runs\":[",
           (unsigned long long)arrival, len, h->version, h->type, h->flags,
           (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false",
           (h->flags & PROTO_SNAPSHOT_FLAG_WRAP) ? "true" : "false", (unsigned long long)h->tick,
           (unsigned long long)h->server_time_us, h->width, h->height, h->epoch, h->boid_count,
           h->run_count, h->obstacle_count, h->target_count);
    for (uint32_t i = 0; i < h->run_count; i++)
        printf("%s[%u,%u]", i ? "," : "", s->runs[i].group, s->runs[i].count);
    printf("],\"boids\":[");
    for (uint32_t i = 0; i < h->boid_count; i++) {
        const struct proto_boid *b = &s->boids[i];
        printf("%s[%.4f,%.4f,%.5f,%u]", i ? "," : "", proto_dequantize_pos(b->qx, h->width),
               proto_dequantize_pos(b->qy, h->height), proto_dequantize_heading(b->heading),
               b->group);
    }
    printf("],\"obstacles\":[");
    for (uint32_t i = 0; i < h->obstacle_count; i++)
        printf("%s[%u,%.9g,%.9g,%.9g]", i ? "," : "", s->obstacles[i].id, s->obstacles[i].x,
               s->obstacles[i].y, s->obstacles[i].r);
    printf("],\"targets\":[");
    for (uint32_t i = 0; i < h->target_count; i++)
        printf("%s[%u,%.9g,%.9g]", i ? "," : "", s->targets[i].group, s->targets[i].x,
               s->targets[i].y);
    printf("]}\n");
}

/* Prints a text record: the message itself if it is JSON, else a string. */
static void print_text(uint64_t arrival, const uint8_t *data, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength((const char *)data, len);
    if (!msg)
        msg = cJSON_CreateString("");
    char *text = cJSON_PrintUnformatted(msg);
    printf("{\"arrival_us\":%llu,\"kind\":\"text\",\"size\":%zu,\"message\":%s}\n",
           (unsigned long long)arrival, len, text ? text : "null");
    free(text);
    cJSON_Delete(msg);
}

/* Reads and prints every record; 0, or -1 after reporting a broken file. */
static int dump_records(FILE *f, const char *path, uint64_t *bad)
{
    struct ctl_snap snap = {0};
    uint8_t *buf = NULL, hdr[REC_HEADER];
    size_t n, cap = 0;
    int rc = 0;
    while ((n = fread(hdr, 1, sizeof hdr, f)) == sizeof hdr) {
        uint64_t arrival = proto_get_le(hdr, 8);
        size_t len = (size_t)proto_get_le(hdr + 8, 4);
        uint8_t *grown = len > cap && len <= REC_MAX_LEN ? realloc(buf, len) : NULL;
        if (grown) {
            buf = grown;
            cap = len;
        }
        if (len > cap || fread(buf, 1, len, f) != len || (hdr[12] != 1 && hdr[12] != 2)) {
            fprintf(stderr, "flockctl dump: %s: broken record\n", path);
            rc = -1;
            break;
        }
        int st = hdr[12] == REC_SNAPSHOT ? ctl_snap_decode(&snap, buf, len) : 0;
        if (hdr[12] == REC_TEXT)
            print_text(arrival, buf, len);
        else if (st == 0)
            print_snapshot(arrival, &snap.s, len);
        else
            printf("{\"arrival_us\":%llu,\"kind\":\"snapshot\",\"size\":%zu,\"error\":\"%s\"}\n",
                   (unsigned long long)arrival, len, proto_status_name(st));
        *bad += st != 0;
    }
    if (!rc && n) {
        fprintf(stderr, "flockctl dump: %s: truncated record header\n", path);
        rc = -1;
    }
    free(buf);
    ctl_snap_free(&snap);
    return rc;
}

int ctl_dump_run(const struct ctl_args *a)
{
    const char *path = a->pos[0];
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "flockctl dump: cannot read %s: %s\n", path, strerror(errno));
        return CTL_EXIT_FAILED;
    }
    uint8_t hdr[REC_FILE_HEADER];
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || memcmp(hdr, REC_MAGIC, 8) ||
        proto_get_le(hdr + 8, 2) != REC_VERSION) {
        fprintf(stderr, "flockctl dump: %s is not a flockctl recording (version %d)\n", path,
                REC_VERSION);
        fclose(f);
        return CTL_EXIT_FAILED;
    }
    uint64_t bad = 0;
    int rc = dump_records(f, path, &bad);
    fclose(f);
    if (bad)
        fprintf(stderr, "flockctl dump: %llu snapshot(s) did not decode\n",
                (unsigned long long)bad);
    return rc || bad ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}
