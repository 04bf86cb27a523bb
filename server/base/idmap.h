/*
 * idmap — client id -> pointer, for finding a session from the client id
 * a room's reply carries (the session may have gone meanwhile).
 *
 * Ids are nonzero 64-bit numbers; values are the caller's pointers (the
 * map never dereferences or frees them). Built on table.h.
 *
 * Never: shrinks (it grows as ids come, see table.h). Threading: the
 * owner's thread only.
 */
#ifndef FLOCKD_IDMAP_H
#define FLOCKD_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

struct idmap {
    struct table t;
};

/* An empty map for up to max_entries ids. 0, or a negative BASE_E*
 * (see table_init); idmap_free() releases it. */
int idmap_init(struct idmap *m, size_t max_entries);
void idmap_free(struct idmap *m);

/* Maps id (nonzero) to value (not NULL). 0; BASE_EINVAL for id 0, a
 * NULL value or an id already mapped; BASE_EFULL when full. */
int idmap_put(struct idmap *m, uint64_t id, void *value);

/* The value of id, or NULL. */
void *idmap_get(const struct idmap *m, uint64_t id);

/* Forgets id (nothing happens if it is not mapped). */
void idmap_del(struct idmap *m, uint64_t id);

size_t idmap_count(const struct idmap *m);

/* Iteration over the values, in no particular order: start with
 * *cursor = 0; NULL at the end. Do not put or delete meanwhile. */
void *idmap_next(const struct idmap *m, size_t *cursor);

#endif
