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

/* ---- squads: the team is resolved (the room's as_applied) ---------------- */

/* Returns the squad the units went into. */
static int64_t select_units(struct sim_world *w, enum proto_mode mode,
                            const struct proto_command *c)
{
    (void)mode;
    const struct proto_select_args *a = &c->args.select;
    struct sim_selection sel = {.by = (enum sim_select_by)a->by,
                                .x = a->rect[0],
                                .y = a->rect[1],
                                .w = a->rect[2],
                                .h = a->rect[3],
                                .ids = a->ids,
                                .n = a->n,
                                .squads = a->squads};
    return sim_select(w, a->team, a->squad, &sel);
}

static int64_t order(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    const struct proto_order_args *a = &c->args.order;
    struct sim_order_args o = {.order = (enum sim_order)a->order,
                               .nway = a->nway,
                               .queue = a->queue,
                               .follow_squad = a->squad_of,
                               .follow_unit = a->unit};
    _Static_assert(sizeof o.way == sizeof a->way, "waypoints of the wire and the core");
    memcpy(o.way, a->way, sizeof o.way);
    return sim_order(w, a->team, a->squad, &o);
}

static int64_t formation(struct sim_world *w, enum proto_mode mode, const struct proto_command *c)
{
    (void)mode;
    const struct proto_formation_args *a = &c->args.formation;
    return sim_formation(w, a->team, a->squad, (enum sim_shape)a->shape, a->spacing);
}

_Static_assert((int)PROTO_ORDER_STOP == (int)SIM_ORDER_STOP &&
                   (int)PROTO_ORDER_MOVE == (int)SIM_ORDER_MOVE &&
                   (int)PROTO_SHAPE_BOX == (int)SIM_SHAPE_BOX &&
                   (int)PROTO_SELECT_SQUADS == (int)SIM_SELECT_SQUADS &&
                   PROTO_SQUADS == SIM_SQUADS && PROTO_WAYPOINTS == SIM_WAYPOINTS &&
                   PROTO_SELECT_MAX == SIM_SELECT_MAX,
               "the wire's squads are the core's");

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
    [PROTO_CMD_SELECT] = select_units,
    [PROTO_CMD_MOVE] = order,
    [PROTO_CMD_PATROL] = order,
    [PROTO_CMD_FOLLOW] = order,
    [PROTO_CMD_HOLD] = order,
    [PROTO_CMD_STOP] = order,
    [PROTO_CMD_FORMATION] = formation,
};

int64_t apply_command(struct sim_world *w, enum proto_mode mode, const struct proto_command *cmd)
{
    apply_fn fn = (unsigned)cmd->kind < PROTO_CMD_COUNT ? appliers[cmd->kind] : NULL;
    return fn ? fn(w, mode, cmd) : 0;
}
