/*
 * vecjson.c — JSON and files of the vector generators (see vecjson.h).
 */
#include "vecjson.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program = "gen_vectors";

void vecjson_set_program(const char *name)
{
    program = name;
}

void vecjson_die(const char *what, const char *why)
{
    fprintf(stderr, "%s: %s: %s\n", program, what, why);
    exit(1);
}

void vecjson_add_num(cJSON *o, const char *key, double v)
{
    char t[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v)
            break;
    }
    cJSON_AddRawToObject(o, key, t);
}

void vecjson_add_u64(cJSON *o, const char *key, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, v);
    cJSON_AddRawToObject(o, key, t);
}

cJSON *vecjson_hex(const uint8_t *p, size_t n)
{
    char *s = malloc(2 * n + 1);
    if (!s)
        vecjson_die("hex", "out of memory");
    s[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 * i, 3, "%02x", p[i]);
    cJSON *j = cJSON_CreateString(s);
    free(s);
    return j;
}

void vecjson_add_header_fields(cJSON *o, const struct proto_snapshot_header *h)
{
    vecjson_add_num(o, "flags", h->flags);
    cJSON_AddBoolToObject(o, "paused", (h->flags & PROTO_SNAPSHOT_FLAG_PAUSED) != 0);
    cJSON_AddBoolToObject(o, "wrap", (h->flags & PROTO_SNAPSHOT_FLAG_WRAP) != 0);
    vecjson_add_u64(o, "tick", h->tick);
    vecjson_add_u64(o, "server_time_us", h->server_time_us);
    vecjson_add_num(o, "width", h->width);
    vecjson_add_num(o, "height", h->height);
    vecjson_add_num(o, "epoch", h->epoch);
    vecjson_add_num(o, "boid_count", h->boid_count);
    vecjson_add_num(o, "group_run_count", h->run_count);
    vecjson_add_num(o, "obstacle_count", h->obstacle_count);
    vecjson_add_num(o, "target_count", h->target_count);
}

cJSON *vecjson_runs(const uint8_t *group, uint32_t count)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; i < count;) {
        uint32_t end = i + 1;
        while (end < count && group[end] == group[i])
            end++;
        cJSON *r = cJSON_CreateObject();
        vecjson_add_num(r, "group", group[i]);
        vecjson_add_num(r, "count", end - i);
        cJSON_AddItemToArray(a, r);
        i = end;
    }
    return a;
}

void vecjson_add_obstacles_targets(cJSON *doc, const struct proto_obstacle *o, size_t no,
                                   const struct proto_target *t, size_t nt)
{
    cJSON *obs = cJSON_AddArrayToObject(doc, "obstacles");
    for (size_t k = 0; k < no; k++) {
        cJSON *j = cJSON_CreateObject();
        vecjson_add_num(j, "id", o[k].id);
        vecjson_add_num(j, "x", o[k].x);
        vecjson_add_num(j, "y", o[k].y);
        vecjson_add_num(j, "r", o[k].r);
        cJSON_AddItemToArray(obs, j);
    }
    cJSON *tgt = cJSON_AddArrayToObject(doc, "targets");
    for (size_t k = 0; k < nt; k++) {
        cJSON *j = cJSON_CreateObject();
        vecjson_add_num(j, "group", t[k].group);
        vecjson_add_num(j, "x", t[k].x);
        vecjson_add_num(j, "y", t[k].y);
        cJSON_AddItemToArray(tgt, j);
    }
}

void vecjson_write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        vecjson_die("cannot write", path);
}

void vecjson_write_json(const char *dir, const char *name, cJSON *doc)
{
    char *text = cJSON_Print(doc);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? malloc(n + 2) : NULL;
    if (!line)
        vecjson_die(name, "out of memory");
    memcpy(line, text, n);
    line[n] = '\n';
    vecjson_write_file(dir, name, line, n + 1);
    free(line);
    free(text);
    cJSON_Delete(doc);
}
