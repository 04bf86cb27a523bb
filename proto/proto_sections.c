/*
 * proto_sections.c — runs, obstacles and targets of a snapshot of either
 * version (see proto_sections.h).
 */
#include "proto_sections.h"

#include "bytes.h"

#include <math.h>
#include <string.h>

uint64_t proto_sections_size(uint32_t runs, uint32_t obstacles, uint32_t targets)
{
    return (uint64_t)runs * PROTO_SNAPSHOT_RUN_SIZE +
           (uint64_t)obstacles * PROTO_SNAPSHOT_OBSTACLE_SIZE +
           (uint64_t)targets * PROTO_SNAPSHOT_TARGET_SIZE;
}

bool proto_sections_is_obstacle_valid(const struct proto_obstacle *o, uint32_t prev_id)
{
    return o->id > prev_id && isfinite(o->x) && isfinite(o->y) && isfinite(o->r) && o->r > 0.0f;
}

bool proto_sections_is_target_valid(const struct proto_target *t, int prev_group)
{
    return (int)t->group > prev_group && isfinite(t->x) && isfinite(t->y);
}

/* Counts the runs of groups in ascending order; PROTO_E_UNENCODABLE if
 * they are not ascending. */
static int count_runs(const uint8_t *group, uint32_t count, uint32_t *runs)
{
    *runs = count > 0;
    for (uint32_t i = 1; i < count; i++) {
        if (group[i] < group[i - 1])
            return PROTO_E_UNENCODABLE;
        *runs += group[i] != group[i - 1];
    }
    return 0;
}

int proto_sections_check(const uint8_t *group, uint32_t count,
                         const struct proto_obstacle *obstacles, uint32_t obstacle_count,
                         const struct proto_target *targets, uint32_t target_count, uint32_t *runs)
{
    if (obstacle_count > PROTO_SNAPSHOT_MAX_OBSTACLES || target_count > PROTO_SNAPSHOT_MAX_TARGETS)
        return PROTO_E_UNENCODABLE;
    for (uint32_t k = 0; k < obstacle_count; k++)
        if (!proto_sections_is_obstacle_valid(&obstacles[k], k ? obstacles[k - 1].id : 0))
            return PROTO_E_UNENCODABLE;
    for (uint32_t k = 0; k < target_count; k++)
        if (!proto_sections_is_target_valid(&targets[k], k ? targets[k - 1].group : -1))
            return PROTO_E_UNENCODABLE;
    return count_runs(group, count, runs);
}

/* ---- writing -------------------------------------------------------------- */

uint8_t *proto_sections_put_runs(uint8_t *p, const uint8_t *group, uint32_t count)
{
    for (uint32_t i = 0; i < count;) {
        uint32_t end = i + 1;
        while (end < count && group[end] == group[i])
            end++;
        *p++ = group[i];
        bytes_le_put(p, end - i, 4);
        p += 4;
        i = end;
    }
    return p;
}

uint8_t *proto_sections_put_obstacles(uint8_t *p, const struct proto_obstacle *o, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++, p += PROTO_SNAPSHOT_OBSTACLE_SIZE) {
        bytes_le_put(p, o[k].id, 4);
        bytes_le_put_f32(p + 4, o[k].x);
        bytes_le_put_f32(p + 8, o[k].y);
        bytes_le_put_f32(p + 12, o[k].r);
    }
    return p;
}

uint8_t *proto_sections_put_targets(uint8_t *p, const struct proto_target *t, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++, p += PROTO_SNAPSHOT_TARGET_SIZE) {
        p[0] = t[k].group;
        bytes_le_put_f32(p + 1, t[k].x);
        bytes_le_put_f32(p + 5, t[k].y);
    }
    return p;
}

/* ---- reading -------------------------------------------------------------- */

int proto_sections_get_runs(const uint8_t *p, uint32_t nruns, uint32_t boid_count,
                            struct proto_run *runs, uint8_t *group)
{
    uint64_t at = 0;
    for (uint32_t k = 0; k < nruns; k++, p += PROTO_SNAPSHOT_RUN_SIZE) {
        uint32_t count = (uint32_t)bytes_le_get(p + 1, 4);
        if (count == 0 || (k && p[0] <= p[-PROTO_SNAPSHOT_RUN_SIZE]) || at + count > boid_count)
            return PROTO_E_BAD_VALUE;
        if (runs)
            runs[k] = (struct proto_run){.group = p[0], .count = count};
        if (group)
            memset(group + at, p[0], count);
        at += count;
    }
    return at == boid_count ? 0 : PROTO_E_BAD_VALUE;
}

int proto_sections_get_obstacles(const uint8_t *p, uint32_t n, struct proto_obstacle *out)
{
    int rc = 0;
    for (uint32_t k = 0; k < n; k++, p += PROTO_SNAPSHOT_OBSTACLE_SIZE) {
        out[k] = (struct proto_obstacle){.id = (uint32_t)bytes_le_get(p, 4),
                                         .x = bytes_le_get_f32(p + 4),
                                         .y = bytes_le_get_f32(p + 8),
                                         .r = bytes_le_get_f32(p + 12)};
        if (!proto_sections_is_obstacle_valid(&out[k], k ? out[k - 1].id : 0))
            rc = PROTO_E_BAD_VALUE;
    }
    return rc;
}

int proto_sections_get_targets(const uint8_t *p, uint32_t n, struct proto_target *out)
{
    int rc = 0;
    for (uint32_t k = 0; k < n; k++, p += PROTO_SNAPSHOT_TARGET_SIZE) {
        out[k] = (struct proto_target){
            .group = p[0], .x = bytes_le_get_f32(p + 1), .y = bytes_le_get_f32(p + 5)};
        if (!proto_sections_is_target_valid(&out[k], k ? out[k - 1].group : -1))
            rc = PROTO_E_BAD_VALUE;
    }
    return rc;
}
