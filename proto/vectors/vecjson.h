/*
 * vecjson — what the two golden vector generators (gen_vectors for
 * version 1, gen_vectors_v2 for version 2) write alike: exact numbers,
 * hex strings, the header fields both versions have, runs, obstacles and
 * targets as JSON, and the files themselves.
 *
 * Never: used by flockproto or flockd; only by the generators, which run by
 * hand. Threading: one thread. Errors: a generator that cannot write its
 * vectors has nothing better to do than stop, so every failure prints
 * "PROGRAM: what: why" and exits 1.
 * Memory: the cJSON values returned belong to the caller (or to the
 * document they are added to); vecjson_write_json() frees the document.
 */
#ifndef FLOCKD_VECJSON_H
#define FLOCKD_VECJSON_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_snapshot.h"

/* The program name the messages start with (static string). */
void vecjson_set_program(const char *name);

/* Prints "PROGRAM: what: why" and exits 1. */
void vecjson_die(const char *what, const char *why);

/*
 * Numbers written exactly: cJSON prints 15 significant digits when a value
 * reads back equal, which spells integers near 2^53 in exponent form and
 * loses float bits. add_num writes the shortest form that reads back to
 * the same binary64, add_u64 an unsigned integer in full.
 */
void vecjson_add_num(cJSON *o, const char *key, double v);
void vecjson_add_u64(cJSON *o, const char *key, uint64_t v);

/* p[0..n) as a string of lowercase hex digits. */
cJSON *vecjson_hex(const uint8_t *p, size_t n);

/* The header fields version 1 and 2 share, from flags to target_count,
 * in the order of PROTOCOL.md §4.2 (with paused and wrap after flags). */
void vecjson_add_header_fields(cJSON *o, const struct proto_snapshot_header *h);

/* [{group, count}] of the runs of group[0..count). */
cJSON *vecjson_runs(const uint8_t *group, uint32_t count);

/* Adds "obstacles" [{id, x, y, r}] and "targets" [{group, x, y}] to doc. */
void vecjson_add_obstacles_targets(cJSON *doc, const struct proto_obstacle *o, size_t no,
                                   const struct proto_target *t, size_t nt);

/* Writes dir/name. */
void vecjson_write_file(const char *dir, const char *name, const void *data, size_t len);

/* Writes doc, indented and ending in a newline, to dir/name; frees doc. */
void vecjson_write_json(const char *dir, const char *name, cJSON *doc);

#endif
