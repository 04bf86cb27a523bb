/*
 * ctl_dump.c — `flockctl dump` prints a recording (RECORDING.md,
 * ctl_recording.h), snapshots decoded in file order as a client decodes
 * them (version 2 and 3 frames on the bases they name; a welcome record
 * starts a new stream and gives version 3 its field's size), in one of the
 * formats of the table `formats`: JSON lines per record, CSV rows per boid
 * or a JSON object per snapshot. Version 3 frames carry their boids' ids
 * and their own header fields (seq, shift, sample, rect, parts) in each
 * format; recordings of versions 1 and 2 print as they always have.
 */
#define _POSIX_C_SOURCE 200809L

#include "bytes.h"
#include "ctl_commands.h"
#include "ctl_recording.h"
#include "ctl_snap.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The values of a boid, in the order of the records' boids; versions 1
 * and 2 have no id. */
enum boid_column { COL_ID, COL_X, COL_Y, COL_HEADING, COL_GROUP, COL_COUNT };

static bool is_v3(const struct ctl_snap *cs)
{
    return cs->version == PROTO_V3_VERSION;
}

/* The first column cs's boids have: the id in version 3. */
static enum boid_column first_column(const struct ctl_snap *cs)
{
    return is_v3(cs) ? COL_ID : COL_X;
}

/* One value of boid i of cs, decoded (PROTOCOL.md §4.4): the id, x, y in
 * world units to 4 decimals, heading in radians to 5, group. Every format
 * prints the boids through this, to the same digits. */
static void print_boid_value(const struct ctl_snap *cs, uint32_t i, enum boid_column c)
{
    const struct proto_snapshot *s = &cs->s;
    const struct proto_boid *b = &s->boids[i];
    if (c == COL_ID)
        printf("%" PRIu32, cs->ids[i]);
    else if (c == COL_X)
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

/* --format records: "boids":[[...],...], each boid's values in column order. */
static void print_boid_rows(const struct ctl_snap *cs)
{
    printf("\"boids\":[");
    for (uint32_t i = 0; i < cs->s.h.boid_count; i++) {
        printf("%s[", i ? "," : "");
        for (enum boid_column c = first_column(cs); c < COL_COUNT; c++) {
            printf(c == first_column(cs) ? "" : ",");
            print_boid_value(cs, i, c);
        }
        printf("]");
    }
    printf("],");
}

/* "name":[v,...] of n numbers. */
static void print_numbers(const char *name, const uint32_t *u, const int8_t *i, uint32_t n)
{
    printf("\"%s\":[", name);
    for (uint32_t k = 0; k < n; k++) {
        if (u)
            printf("%s%" PRIu32, k ? "," : "", u[k]);
        else
            printf("%s%d", k ? "," : "", i[k]);
    }
    printf("]");
}

/* --format records: a version 3 frame's parts [tx,ty,count] and the fields
 * of those that have one. */
static void print_parts(const struct proto_v3_frame *f)
{
    printf("\"parts\":[");
    for (uint32_t k = 0; k < f->part_count; k++)
        printf("%s[%" PRIu32 ",%" PRIu32 ",%" PRIu32 "]", k ? "," : "", f->parts[k].tx,
               f->parts[k].ty, f->parts[k].count);
    printf("],\"fields\":[");
    bool first = true;
    for (uint32_t k = 0; k < f->part_count; k++) {
        const struct proto_v3_field *fd = f->parts[k].field;
        if (!fd)
            continue;
        uint32_t n = fd->cells * fd->cells;
        printf("%s{\"tx\":%" PRIu32 ",\"ty\":%" PRIu32 ",", first ? "" : ",", f->parts[k].tx,
               f->parts[k].ty);
        print_numbers("count", fd->count, NULL, n);
        printf(",");
        print_numbers("vx", NULL, fd->vx, n);
        printf(",");
        print_numbers("vy", NULL, fd->vy, n);
        printf("}");
        first = false;
    }
    printf("],");
}

/* --format records: a version 3 frame (fields in RECORDING.md). */
static void print_v3_snapshot(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    const struct proto_v3_header *h = &cs->v3h;
    printf("{\"arrival_us\":%llu,\"kind\":\"snapshot\",\"size\":%zu,\"version\":3,\"type\":%u,"
           "\"flags\":%u,\"paused\":%s,\"wrap\":%s,\"fogged\":%s,\"delayed\":%s,\"tick\":%llu,"
           "\"server_time_us\":%llu,\"width\":%.9g,\"height\":%.9g,\"seq\":%" PRIu32
           ",\"room_boids\":%" PRIu32 ",\"shift\":%u,\"sample\":%u,\"tiles\":[%u,%u],"
           "\"rect\":[%u,%u,%u,%u],\"frame_hash\":%" PRIu32 ",\"boid_count\":%u,"
           "\"obstacle_count\":%u,\"target_count\":%u,\"key_parts\":%" PRIu32
           ",\"delta_parts\":%" PRIu32 ",",
           (unsigned long long)arrival, len, PROTO_V3_KIND_FRAME, h->flags,
           (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false",
           (h->flags & PROTO_SNAPSHOT_FLAG_WRAP) ? "true" : "false",
           (h->flags & PROTO_V3_FLAG_FOGGED) ? "true" : "false",
           (h->flags & PROTO_V3_FLAG_DELAYED) ? "true" : "false", (unsigned long long)h->tick,
           (unsigned long long)h->server_time_us, h->width, h->height, h->seq, h->room_boids,
           h->shift, h->sample, h->cols, h->rows, h->rect_x, h->rect_y, h->rect_cols, h->rect_rows,
           h->frame_hash, cs->s.h.boid_count, h->obstacle_count, h->target_count, cs->v3_shape.keys,
           cs->v3_shape.deltas);
    print_parts(cs->v3);
    print_boid_rows(cs);
    print_obstacles_and_targets(&cs->s);
    printf("}\n");
}

/* --format records: one snapshot as a JSON line (fields in RECORDING.md). */
static void print_snapshot(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    if (is_v3(cs)) {
        print_v3_snapshot(arrival, cs, len);
        return;
    }
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
    printf("],");
    print_boid_rows(cs);
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

/* --format csv: the header line, the columns of print_csv_rows(): a
 * version 3 recording has seq and id where the others have epoch and
 * index. */
static void print_csv_header(int protocol)
{
    fputs(protocol == PROTO_V3_VERSION ? "tick,server_time_us,arrival_us,seq,id,group,x,y,heading\n"
                                       : "tick,server_time_us,arrival_us,epoch,index,group,x,y,"
                                         "heading\n",
          stdout);
}

/* --format csv: a row per boid. */
static void print_csv_rows(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    const struct proto_snapshot *s = &cs->s;
    (void)len;
    for (uint32_t i = 0; i < s->h.boid_count; i++) {
        printf("%llu,%llu,%llu,%" PRIu32 ",%" PRIu32 ",%u", (unsigned long long)s->h.tick,
               (unsigned long long)s->h.server_time_us, (unsigned long long)arrival,
               is_v3(cs) ? cs->v3h.seq : s->h.epoch, is_v3(cs) ? cs->ids[i] : i, s->boids[i].group);
        for (enum boid_column c = COL_X; c <= COL_HEADING; c++) {
            printf(",");
            print_boid_value(cs, i, c);
        }
        printf("\n");
    }
}

/* --format jsonl: one column of the boids as "name":[...]. */
static void print_column(const struct ctl_snap *cs, enum boid_column c)
{
    static const char *const names[COL_COUNT] = {"id", "x", "y", "heading", "group"};
    printf("\"%s\":[", names[c]);
    for (uint32_t i = 0; i < cs->s.h.boid_count; i++) {
        printf(i ? "," : "");
        print_boid_value(cs, i, c);
    }
    printf("],");
}

/* --format jsonl: one object per snapshot, the boids as columns. */
static void print_jsonl(uint64_t arrival, const struct ctl_snap *cs, size_t len)
{
    const struct proto_snapshot_header *h = &cs->s.h;
    (void)len;
    printf("{\"tick\":%llu,\"server_time_us\":%llu,\"arrival_us\":%llu,",
           (unsigned long long)h->tick, (unsigned long long)h->server_time_us,
           (unsigned long long)arrival);
    if (is_v3(cs))
        printf("\"seq\":%" PRIu32 ",", cs->v3h.seq);
    else
        printf("\"epoch\":%u,", h->epoch);
    printf("\"width\":%.9g,\"height\":%.9g,\"paused\":%s,\"boid_count\":%u,", h->width, h->height,
           (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) ? "true" : "false", h->boid_count);
    if (is_v3(cs))
        printf("\"room_boids\":%" PRIu32 ",\"shift\":%u,\"sample\":%u,", cs->v3h.room_boids,
               cs->v3h.shift, cs->v3h.sample);
    for (enum boid_column c = first_column(cs); c < COL_COUNT; c++)
        print_column(cs, c);
    print_obstacles_and_targets(&cs->s);
    printf("}\n");
}

/* An output format of dump: what it prints first (for the recording's
 * protocol), for a text record, a decoded snapshot and one that does not
 * decode (NULL: nothing). */
struct dump_format {
    const char *name; /* a choice of --format */
    void (*begin)(int protocol);
    void (*text)(uint64_t arrival, const uint8_t *data, size_t len);
    void (*snapshot)(uint64_t arrival, const struct ctl_snap *cs, size_t len);
    void (*refused)(uint64_t arrival, size_t len, int status);
};

static const struct dump_format formats[] = {
    {"records", NULL, print_text, print_snapshot, print_refused},
    {"csv", print_csv_header, NULL, print_csv_rows, NULL},
    {"jsonl", NULL, NULL, print_jsonl, NULL},
};

/* A text record: a welcome starts a new stream (§11.1) of its kind. */
static void read_text(struct ctl_snap *snap, const uint8_t *data, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength((const char *)data, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    if (type && !strcmp(type, "welcome"))
        ctl_snap_welcome(snap, msg);
    cJSON_Delete(msg);
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
        if (len > cap || fread(buf, 1, len, f) != len ||
            (hdr[12] != REC_SNAPSHOT && hdr[12] != REC_TEXT)) {
            fprintf(stderr, "flockctl dump: %s: broken record\n", path);
            rc = -1;
            break;
        }
        if (hdr[12] == REC_TEXT) {
            if (fmt->text)
                fmt->text(arrival, buf, len);
            read_text(&snap, buf, len);
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
        fmt->begin((int)bytes_le_get(hdr + REC_OFF_PROTOCOL, 2));
    uint64_t bad = 0;
    int rc = dump_records(f, path, fmt, &bad);
    fclose(f);
    if (bad)
        fprintf(stderr, "flockctl dump: %llu snapshot(s) did not decode\n",
                (unsigned long long)bad);
    return rc || bad ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}
