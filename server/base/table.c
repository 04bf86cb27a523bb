/*
 * table.c — open addressing with backward-shift deletion (see table.h).
 */
#include "table.h"

#include "base.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slot_at(const struct table *t, size_t i)
{
    return t->slots + i * t->slot_size;
}

/* FNV-1a over the key, then a Fibonacci multiply so the low bits the mask
 * keeps depend on every byte (sequential ids spread evenly). */
static size_t home_of(const struct table *t, const void *key)
{
    const unsigned char *k = key;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < t->key_len; i++)
        h = (h ^ k[i]) * 1099511628211ULL;
    h *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 32) & (t->nslots - 1);
}

#define FIRST_SLOTS 64 /* a new table's array, or what max_entries needs if less */

/* Slots for n entries: a power of two, at least 16 and twice n. */
static size_t slots_for(size_t n)
{
    size_t s = 16;
    while (s < 2 * n)
        s *= 2;
    return s;
}

/* Empty arrays of n slots for t: 0, or BASE_ENOMEM (t unchanged). */
static int alloc_slots(const struct table *t, size_t n, unsigned char **slots, bool **used)
{
    *slots = calloc(n, t->slot_size);
    *used = calloc(n, sizeof **used);
    if (*slots && *used)
        return 0;
    free(*slots);
    free(*used);
    return BASE_ENOMEM;
}

int table_init(struct table *t, size_t slot_size, size_t key_len, size_t max_entries)
{
    memset(t, 0, sizeof *t);
    /* At most 2^31 slots: home_of() takes 32 bits of the hash. */
    if (key_len == 0 || key_len > slot_size || max_entries == 0 || max_entries > (1u << 30))
        return BASE_EINVAL;
    size_t max_slots = slots_for(max_entries);
    if (max_slots > SIZE_MAX / slot_size)
        return BASE_EINVAL;
    t->slot_size = slot_size;
    t->key_len = key_len;
    t->max_entries = max_entries;
    t->max_slots = max_slots;
    size_t n = max_slots < FIRST_SLOTS ? max_slots : FIRST_SLOTS;
    if (alloc_slots(t, n, &t->slots, &t->used) < 0) {
        memset(t, 0, sizeof *t);
        return BASE_ENOMEM;
    }
    t->nslots = n;
    return 0;
}

void table_free(struct table *t)
{
    free(t->slots);
    free(t->used);
    memset(t, 0, sizeof *t);
}

/* The index holding key, or of the empty slot that ends its probe chain. */
static size_t probe(const struct table *t, const void *key)
{
    size_t mask = t->nslots - 1, i = home_of(t, key);
    while (t->used[i] && memcmp(slot_at(t, i), key, t->key_len) != 0)
        i = (i + 1) & mask;
    return i;
}

void *table_find(const struct table *t, const void *key)
{
    if (!t->nslots)
        return NULL;
    size_t i = probe(t, key);
    return t->used[i] ? slot_at(t, i) : NULL;
}

/* Doubles the array, every entry moved to its place in it: 0, or
 * BASE_ENOMEM (the table unchanged). */
static int grow(struct table *t)
{
    struct table old = *t;
    int rc = alloc_slots(t, 2 * old.nslots, &t->slots, &t->used);
    if (rc < 0) {
        *t = old;
        return rc;
    }
    t->nslots = 2 * old.nslots;
    for (size_t i = 0; i < old.nslots; i++)
        if (old.used[i]) {
            size_t j = probe(t, slot_at(&old, i));
            memcpy(slot_at(t, j), slot_at(&old, i), t->slot_size);
            t->used[j] = true;
        }
    free(old.slots);
    free(old.used);
    return 0;
}

void *table_insert(struct table *t, const void *key)
{
    if (!t->nslots)
        return NULL;
    size_t i = probe(t, key);
    if (t->used[i])
        return slot_at(t, i);
    if (t->count >= t->max_entries)
        return NULL;
    if (2 * (t->count + 1) > t->nslots && t->nslots < t->max_slots) {
        if (grow(t) < 0)
            return NULL;
        i = probe(t, key);
    }
    unsigned char *s = slot_at(t, i);
    memset(s, 0, t->slot_size);
    memcpy(s, key, t->key_len);
    t->used[i] = true;
    t->count++;
    return s;
}

/* Backward shift: after emptying slot i, each later slot j of the chain
 * moves back to i if i lies cyclically in [home(j), j), i.e. if j's probe
 * from its home would otherwise stop at the hole before reaching it. */
void table_remove(struct table *t, void *slot)
{
    if (!slot || !t->nslots)
        return;
    size_t mask = t->nslots - 1, i = (size_t)((unsigned char *)slot - t->slots) / t->slot_size;
    if (i >= t->nslots || !t->used[i])
        return;
    t->used[i] = false;
    t->count--;
    for (size_t j = (i + 1) & mask; t->used[j]; j = (j + 1) & mask) {
        size_t home = home_of(t, slot_at(t, j));
        if (((j - home) & mask) >= ((j - i) & mask)) {
            memcpy(slot_at(t, i), slot_at(t, j), t->slot_size);
            t->used[i] = true;
            t->used[j] = false;
            i = j;
        }
    }
}

size_t table_count(const struct table *t)
{
    return t->count;
}

void *table_next(const struct table *t, size_t *cursor)
{
    for (size_t i = *cursor; i < t->nslots; i++)
        if (t->used[i]) {
            *cursor = i + 1;
            return slot_at(t, i);
        }
    *cursor = t->nslots;
    return NULL;
}
