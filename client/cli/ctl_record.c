/*
 * ctl_record.c — `flockctl record` writes every message flockd sends (the
 * welcome, then snapshots of either version) with its arrival time to a
 * file; `flockctl dump` prints such a file, snapshots decoded (version 2
 * frames in order, with the bases they name; a welcome record starts a new
 * stream), in one of the formats of the table `formats`: JSON lines per
 * record, CSV rows per boid or a JSON object per snapshot. The file format
 * and the outputs are documented in RECORDING.md; the constants below
 * follow it.
 */
#define _POSIX_C_SOURCE 200809L

#include "bytes.h"
#include "ctl_commands.h"
#include "ctl_session.h"
#include "ctl_snap.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
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
    bytes_le_put(hdr, ctl_wall_us(), 8);
    bytes_le_put(hdr + 8, len, 4);
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
    bytes_le_put(hdr + 8, REC_VERSION, 2);
    if (fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* The file header's protocol version: the one the server took. */
static int write_protocol(FILE *f, int protocol)
{
    uint8_t v[2];
    bytes_le_put(v, (uint64_t)protocol, 2);
    long end = ftell(f);
    return end < 0 || fseek(f, 10, SEEK_SET) || fwrite(v, 1, 2, f) != 2 || fseek(f, end, SEEK_SET)
               ? -1
               : 0;
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
    struct ctl_open_error err;
    struct ctl_session *s = ctl_session_open(a, on_message, &r, &err);
    if (!s) {
        fprintf(stderr, "flockctl record: %s\n", err.reason);
        fclose(r.f);
        return err.status;
    }
    int rc = CTL_EXIT_OK;
    if (write_protocol(r.f, ctl_session_protocol(s)))
        r.failed = 1;
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

/* The version 2 fields of a frame's header, after its common fields. */
static void print_v2_fields(const struct proto_v2_header *h)
{
    printf("\"frame\":\"%s\",\"seq\":%" PRIu32 ",", h->kind == PROTO_V2_KIND_KEY ? "key" : "delta",
           h->seq);
    if (h->gap1)
        printf("\"base1\":%" PRIu32 ",", h->seq - h->gap1);
    else
        printf("\"base1\":null,");
    if (h->gap0)
        printf("\"base0\":%" PRIu32 ",", h->seq - h->gap1 - h->gap0);
    else
        printf("\"base0\":null,");
    printf("\"sim_hash\":\"%016" PRIx64 "\",\"state_hash\":\"%016" PRIx64 "\",", h->sim_hash,
           h->state_hash);
}

enum boid_column { COL_X, COL_Y, COL_HEADING, COL_GROUP, COL_COUNT };

/* One value of boid i of s, decoded (PROTOCOL.md §4.4): x, y in world
 * units to 4 decimals, heading in radians to 5, group. Every format
 * prints the boids through this, to the same digits. */
static void print_boid_value(const struct proto_snapshot *s, uint32_t i, enum boid_column c)
{
    const struct proto_boid *b = &s->boids[i];
    if (c == COL_X)
        printf("%.4f", proto_dequantize_pos(b->qx, s->h.width));
    else if (c == COL_Y)
        printf("%.4f", proto_dequantize_pos(b->qy, s->h.height));
    else if (c == COL_HEADING)
        printf("%.5f", proto_dequantize_heading(b->heading));
    else
        printf("%u", b->group);
}

static void print_obstacles_and_targets(const struct proto_snapshot *s)
{
    const struct proto_snapshot_header *h = &s->h;
    printf("\"obstacles\":[");
    for (uint32_t i = 0; i < h->obstacle_count; i++)
        printf("%s[%u,%.9g,%.9g,%.9g]", i ? "," : "", s->obstacles[i].id, s->obstacles[i].x,
               s->obstacles[i].y, s->obstacles[i].r);
    printf("],\"targets\":[");
    for (uint32_t i = 0; i < h->target_count; i++)
        printf("%s[%u,%.9g,%.9g]", i ? "," : "", s->targets[i].group, s->targets[i].x,
               s->targets[i].y);
    printf("]");
}

/* --format records: one snapshot as a JSON line (fields in RECORDING.md). */
static void print_snapshot(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    const struct proto_snapshot *s = &cs->s;
    const struct proto_snapshot_header *h = &s->h;
    printf("{\"arrival_us\":%llu,\"kind\":\"snapshot\",\"size\":%zu,\"version\":%u,\"type\":%u,"
           "\"flags\":%u,\"paused\":%s,\"wrap\":%s,\"tick\":%llu,\"server_time_us\":%llu,"
           "\"width\":%.9g,\"height\":%.9g,\"epoch\":%u,\"boid_count\":%u,\"run_count\":%u,"
           "\"obstacle_count\":%u,\"target_count\":%u,",
           (unsigned long long)arrival, len, h->version, h->type, h->flags,
           (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false",
           (h->flags & PROTO_SNAPSHOT_FLAG_WRAP) ? "true" : "false", (unsigned long long)h->tick,
           (unsigned long long)h->server_time_us, h->width, h->height, h->epoch, h->boid_count,
           h->run_count, h->obstacle_count, h->target_count);
    if (cs->version == PROTO_V2_VERSION)
        print_v2_fields(&cs->v2);
    printf("\"runs\":[");
    for (uint32_t i = 0; i < h->run_count; i++)
        printf("%s[%u,%u]", i ? "," : "", s->runs[i].group, s->runs[i].count);
    printf("],\"boids\":[");
    for (uint32_t i = 0; i < h->boid_count; i++) {
        printf("%s[", i ? "," : "");
        for (enum boid_column c = COL_X; c < COL_COUNT; c++) {
            printf(c == COL_X ? "" : ",");
            print_boid_value(s, i, c);
        }
        printf("]");
    }
    printf("],");
    print_obstacles_and_targets(s);
    printf("}\n");
}

/* --format records: a snapshot that does not decode, with the codec's status. */
static void print_refused(uint64_t arrival, size_t len, int status)
{
    printf("{\"arrival_us\":%llu,\"kind\":\"snapshot\",\"size\":%zu,\"error\":\"%s\"}\n",
           (unsigned long long)arrival, len, proto_status_name(status));
}

/* --format records: a text record, the message itself if it is JSON, else a string. */
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

/* --format csv: the header line, the columns of print_csv_rows(). */
static void print_csv_header(void)
{
    fputs("tick,server_time_us,arrival_us,epoch,index,group,x,y,heading\n", stdout);
}

/* --format csv: a row per boid. */
static void print_csv_rows(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    const struct proto_snapshot *s = &cs->s;
    (void)len;
    for (uint32_t i = 0; i < s->h.boid_count; i++) {
        printf("%llu,%llu,%llu,%u,%u,%u", (unsigned long long)s->h.tick,
               (unsigned long long)s->h.server_time_us, (unsigned long long)arrival, s->h.epoch, i,
               s->boids[i].group);
        for (enum boid_column c = COL_X; c <= COL_HEADING; c++) {
            printf(",");
            print_boid_value(s, i, c);
        }
        printf("\n");
    }
}

/* --format jsonl: one column of the boids as "name":[...]. */
static void print_column(const struct proto_snapshot *s, enum boid_column c)
{
    static const char *const names[COL_COUNT] = {"x", "y", "heading", "group"};
    printf("\"%s\":[", names[c]);
    for (uint32_t i = 0; i < s->h.boid_count; i++) {
        printf(i ? "," : "");
        print_boid_value(s, i, c);
    }
    printf("],");
}

/* --format jsonl: one object per snapshot, the boids as columns. */
static void print_jsonl(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    const struct proto_snapshot *s = &cs->s;
    const struct proto_snapshot_header *h = &s->h;
    (void)len;
    printf("{\"tick\":%llu,\"server_time_us\":%llu,\"arrival_us\":%llu,\"epoch\":%u,"
           "\"width\":%.9g,\"height\":%.9g,\"paused\":%s,\"boid_count\":%u,",
           (unsigned long long)h->tick, (unsigned long long)h->server_time_us,
           (unsigned long long)arrival, h->epoch, h->width, h->height,
           (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false", h->boid_count);
    for (enum boid_column c = COL_X; c < COL_COUNT; c++)
        print_column(s, c);
    print_obstacles_and_targets(s);
    printf("}\n");
}

/* An output format of dump: what it prints first, for a text record, a
 * decoded snapshot and one that does not decode (NULL: nothing). */
struct dump_format {
    const char *name; /* a choice of --format */
    void (*begin)(void);
    void (*text)(uint64_t arrival, const uint8_t *data, size_t len);
    void (*snapshot)(uint64_t arrival, const struct ctl_snap *cs, size_t len);
    void (*refused)(uint64_t arrival, size_t len, int status);
};

static const struct dump_format formats[] = {
    {"records", NULL, print_text, print_snapshot, print_refused},
    {"csv", print_csv_header, NULL, print_csv_rows, NULL},
    {"jsonl", NULL, NULL, print_jsonl, NULL},
};

/* True if a text record is a welcome: a new stream starts (§11.1). */
static bool is_welcome(const uint8_t *data, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength((const char *)data, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    bool welcome = type && !strcmp(type, "welcome");
    cJSON_Delete(msg);
    return welcome;
}

/* Reads every record and prints it as fmt says; 0, or -1 after reporting
 * a broken file. */
static int dump_records(FILE *f, const char *path, const struct dump_format *fmt, uint64_t *bad)
{
    struct ctl_snap snap = {0};
    uint8_t *buf = NULL, hdr[REC_HEADER];
    size_t n, cap = 0;
    int rc = 0;
    while ((n = fread(hdr, 1, sizeof hdr, f)) == sizeof hdr) {
        uint64_t arrival = bytes_le_get(hdr, 8);
        size_t len = (size_t)bytes_le_get(hdr + 8, 4);
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
        if (hdr[12] == REC_TEXT) {
            if (fmt->text)
                fmt->text(arrival, buf, len);
            if (is_welcome(buf, len))
                ctl_snap_forget(&snap);
            continue;
        }
        int st = ctl_snap_decode(&snap, buf, len);
        if (st == 0)
            fmt->snapshot(arrival, &snap, len);
        else if (fmt->refused)
            fmt->refused(arrival, len, st);
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
        bytes_le_get(hdr + 8, 2) != REC_VERSION) {
        fprintf(stderr, "flockctl dump: %s is not a flockctl recording (version %d)\n", path,
                REC_VERSION);
        fclose(f);
        return CTL_EXIT_FAILED;
    }
    const struct dump_format *fmt = &formats[0];
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(formats[i].name, a->format))
            fmt = &formats[i];
    if (fmt->begin)
        fmt->begin();
    uint64_t bad = 0;
    int rc = dump_records(f, path, fmt, &bad);
    fclose(f);
    if (bad)
        fprintf(stderr, "flockctl dump: %llu snapshot(s) did not decode\n",
                (unsigned long long)bad);
    return rc || bad ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}
