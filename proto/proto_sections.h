/*
 * proto_sections — the sections every snapshot version carries, written
 * once for both codecs: group runs (PROTOCOL.md §4.3), obstacles and
 * targets (§4.5), their rules (§4.6 step 9), their bytes and their sizes.
 * Version 1 (proto_snapshot.c) puts the boids between the runs and the
 * obstacles, version 2 (proto_v2.c) puts its body after the targets; the
 * sections themselves are the same. Internal to flockproto: clients use
 * proto_snapshot.h and proto_v2.h.
 *
 * Never: I/O, allocation, globals. Readers take bytes already known to be
 * in bounds (the callers check the total length against the header's
 * counts first) and never read past the counts they are given.
 *
 * Threading: reentrant.
 *
 * Errors: the checks and readers return 0 or a negative proto_status
 * (PROTO_E_UNENCODABLE for what an encoder is given, PROTO_E_BAD_VALUE for
 * what a decoder reads).
 */
#ifndef FLOCKD_PROTO_SECTIONS_H
#define FLOCKD_PROTO_SECTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_snapshot.h"

/* Bytes of the runs, obstacles and targets sections for these counts. */
uint64_t proto_sections_size(uint32_t runs, uint32_t obstacles, uint32_t targets);

/* An obstacle after one with id prev_id (0 for the first): ids strictly
 * ascending from 1, position and radius finite, radius > 0. */
bool proto_sections_is_obstacle_valid(const struct proto_obstacle *o, uint32_t prev_id);

/* A target after one of group prev_group (-1 for the first): groups
 * strictly ascending, position finite. */
bool proto_sections_is_target_valid(const struct proto_target *t, int prev_group);

/*
 * What an encoder is given: count groups in ascending order (their runs
 * counted into *runs), at most PROTO_SNAPSHOT_MAX_OBSTACLES valid
 * obstacles, at most PROTO_SNAPSHOT_MAX_TARGETS valid targets. 0 or
 * PROTO_E_UNENCODABLE.
 */
int proto_sections_check(const uint8_t *group, uint32_t count,
                         const struct proto_obstacle *obstacles, uint32_t obstacle_count,
                         const struct proto_target *targets, uint32_t target_count, uint32_t *runs);

/* Writers: each returns the byte after what it wrote. */
uint8_t *proto_sections_put_runs(uint8_t *p, const uint8_t *group, uint32_t count);
uint8_t *proto_sections_put_obstacles(uint8_t *p, const struct proto_obstacle *o, uint32_t n);
uint8_t *proto_sections_put_targets(uint8_t *p, const struct proto_target *t, uint32_t n);

/*
 * Reads nruns runs at p that must be non-empty, strictly ascending and sum
 * to boid_count: each into runs[k] (if runs is not NULL) and its group into
 * group[i] for each of its boids (if group is not NULL; boid_count
 * entries). 0 or PROTO_E_BAD_VALUE; on failure the outputs are partial.
 */
int proto_sections_get_runs(const uint8_t *p, uint32_t nruns, uint32_t boid_count,
                            struct proto_run *runs, uint8_t *group);

/* Reads n obstacles / targets at p into out[0..n): 0 or PROTO_E_BAD_VALUE
 * (every entry is read either way). */
int proto_sections_get_obstacles(const uint8_t *p, uint32_t n, struct proto_obstacle *out);
int proto_sections_get_targets(const uint8_t *p, uint32_t n, struct proto_target *out);

#endif
