/*
 * apply.c — each command's effect on a world, one function per command
 * kind in a table (see apply.h).
 */
#include "apply.h"

#include <string.h>

typedef int64_t (*apply_fn)(struct sim_world *w, enum proto_mode mode,
                            const struct proto_command *c);

void apply_mode_params(struct sim_world *w, enum proto_mode mode)
{
    if (mode == PROTO_MODE_RTS) /* every group flocks with its own kind only */
        sim_param_set(w, -1, "own_group_only", 1.0f);
}

/* The value of d in a world of a room in `mode` until a command sets it. */
static float mode_default(enum proto_mode mode, const struct sim_param_desc *d)
{
    if (mode == PROTO_MODE_RTS && strcmp(d->name, "own_group_only") == 0)
        return 1.0f;
    return d->def;
}

void apply_resolve_params(enum proto_mode mode, struct proto_params_args *a)
{
    if (!a->reset)
        return;
    struct proto_params_args given = *a;
    a->reset = 0;
    a->count = 0;
    for (size_t i = 0; i < sim_param_count() && a->count < PROTO_MAX_PARAMS; i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        float v = mode_default(mode, d);
        for (uint32_t k = 0; k < given.count; k++)
            if (given.items[k].desc == d)
                v = given.items[k].value;
        a->items[a->count++] = (struct proto_param_value){.desc = d, .value = v};
    }
}

static int64_t seek(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    return sim_target_set(w, c->args.seek.group, c->args.seek.x, c->args.seek.y);
}

static int64_t seek_clear(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    return sim_target_clear(w, c->args.seek_clear.group);
}

static int64_t obstacle_add(struct sim_world *w, enum proto_mode mode,
                            const struct proto_command *c)
{
    (void)mode;
    const struct proto_obstacle_add_args *a = &c->args.obstacle_add;
    return sim_obstacle_add(w, a->x, a->y, a->r);
}

static int64_t obstacle_remove(struct sim_world *w, enum proto_mode mode,
                               const struct proto_command *c)
{
    (void)mode;
    return sim_obstacle_remove(w, c->args.obstacle_remove.id);
}

static int64_t obstacle_clear(struct sim_world *w, enum proto_mode mode,
                              const struct proto_command *c)
{
    (void)mode, (void)c;
    sim_obstacle_clear(w);
    return 0;
}

static int64_t spawn(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    const struct proto_spawn_args *a = &c->args.spawn;
    return sim_spawn(w, a->n, a->group, a->x, a->y, a->spread);
}

static int64_t despawn(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    return sim_despawn(w, c->args.despawn.n, c->args.despawn.group);
}

/* Every value is checked before any is set, so a refusal changes none. */
static int64_t params(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    const struct proto_params_args *a = &c->args.params;
    for (uint32_t k = 0; k < a->count; k++)
        if (!sim_param_valid(a->items[k].desc, a->items[k].value))
            return SIM_ERANGE;
    for (uint32_t k = 0; k < a->count; k++) {
        int rc = sim_param_set(w, a->group, a->items[k].desc->name, a->items[k].value);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The seed and boid count as resolved by the room (apply.h). */
static int64_t reset(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    int rc = sim_reset_scatter(w, c->args.reset.seed, c->args.reset.boids, 0);
    if (rc >= 0)
        apply_mode_params(w, mode);
    return rc;
}

static const apply_fn appliers[PROTO_CMD_COUNT] = {
    [PROTO_CMD_SEEK] = seek,
    [PROTO_CMD_SEEK_CLEAR] = seek_clear,
    [PROTO_CMD_OBSTACLE_ADD] = obstacle_add,
    [PROTO_CMD_OBSTACLE_REMOVE] = obstacle_remove,
    [PROTO_CMD_OBSTACLE_CLEAR] = obstacle_clear,
    [PROTO_CMD_SPAWN] = spawn,
    [PROTO_CMD_DESPAWN] = despawn,
    [PROTO_CMD_PARAMS] = params,
    [PROTO_CMD_RESET] = reset,
};

int64_t apply_command(struct sim_world *w, enum proto_mode mode, const struct proto_command *cmd)
{
    apply_fn fn = (unsigned)cmd->kind < PROTO_CMD_COUNT ? appliers[cmd->kind] : NULL;
    return fn ? fn(w, mode, cmd) : 0;
}
