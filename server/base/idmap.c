/*
 * idmap.c — id -> pointer on the shared open-addressing table (see idmap.h).
 */
#include "idmap.h"

#include "base.h"

struct entry {
    uint64_t id; /* the key */
    void *value;
};

int idmap_init(struct idmap *m, size_t max_entries)
{
    return table_init(&m->t, sizeof(struct entry), sizeof(uint64_t), max_entries);
}

void idmap_free(struct idmap *m)
{
    table_free(&m->t);
}

int idmap_put(struct idmap *m, uint64_t id, void *value)
{
    if (id == 0 || !value || table_find(&m->t, &id))
        return BASE_EINVAL;
    struct entry *e = table_insert(&m->t, &id);
    if (!e)
        return BASE_EFULL;
    e->value = value;
    return 0;
}

void *idmap_get(const struct idmap *m, uint64_t id)
{
    const struct entry *e = table_find(&m->t, &id);
    return e ? e->value : NULL;
}

void idmap_del(struct idmap *m, uint64_t id)
{
    struct entry *e = table_find(&m->t, &id);
    if (e)
        table_remove(&m->t, e);
}

size_t idmap_count(const struct idmap *m)
{
    return table_count(&m->t);
}

void *idmap_next(const struct idmap *m, size_t *cursor)
{
    const struct entry *e = table_next(&m->t, cursor);
    return e ? e->value : NULL;
}
