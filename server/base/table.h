/*
 * table — a fixed-capacity hash table of fixed-size slots: open addressing,
 * linear probing, backward-shift deletion (no tombstones, so a table that
 * sees millions of inserts and removes never slows down). It is the one
 * implementation behind the session ids (idmap.h) and the per-address
 * connection counts (ipcount.h).
 *
 * A slot is slot_size bytes; its first key_len bytes are its key, compared
 * and hashed as bytes. The table holds at most max_entries slots in a
 * power-of-two array of at least twice as many as it holds, so probe
 * chains stay short and an empty slot always ends them. The array starts
 * small and doubles as entries come, up to the size max_entries needs:
 * keys hash to random slots, so an array sized for the most entries at
 * once would have every page of it touched by a few thousand (a table for
 * 100,000 clients held 4 MB for 3,000). Pointers to slots stay valid until
 * the next table_insert() or table_remove().
 *
 * Never: shrinks. Threading: one thread (the owner's) at a time.
 */
#ifndef FLOCKD_TABLE_H
#define FLOCKD_TABLE_H

#include <stdbool.h>
#include <stddef.h>

struct table {
    unsigned char *slots; /* nslots * slot_size bytes */
    bool *used;           /* nslots flags */
    size_t nslots;        /* a power of two */
    size_t max_slots;     /* what max_entries needs: nslots doubles up to it */
    size_t slot_size, key_len;
    size_t count, max_entries;
};

/*
 * Allocates an empty table for up to max_entries (1 .. 2^30) slots of
 * slot_size bytes keyed by their first key_len bytes (0 < key_len <=
 * slot_size). Returns 0, BASE_EINVAL for impossible sizes or
 * BASE_ENOMEM without memory.
 * The table owns its memory until table_free().
 */
int table_init(struct table *t, size_t slot_size, size_t key_len, size_t max_entries);
void table_free(struct table *t);

/* The slot holding key, or NULL. */
void *table_find(const struct table *t, const void *key);

/*
 * The slot holding key, added (key copied, the rest zeroed) if absent.
 * NULL when key is absent and the table already holds max_entries, or
 * memory to grow into cannot be found.
 */
void *table_insert(struct table *t, const void *key);

/* Empties a slot table_find() or table_insert() returned; later slots of
 * its probe chain shift back into place. */
void table_remove(struct table *t, void *slot);

size_t table_count(const struct table *t);

/* Iteration: the next used slot at or after *cursor (start at 0), or NULL
 * at the end. Removing the slot returned may shift a later slot to where
 * the cursor already was; iterate without removing. */
void *table_next(const struct table *t, size_t *cursor);

#endif
