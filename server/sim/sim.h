/*
 * sim — the flocking core.
 *
 * A world is a W x H rectangle holding up to `capacity` boids in
 * structure-of-arrays form, up to `max_obstacles` circular obstacles and a
 * seek target per group. sim_step() advances it by one fixed time step:
 * first every boid's steering is computed from the same state (separation,
 * alignment, cohesion, seek/arrive, obstacle avoidance, edge containment),
 * then all boids are integrated with semi-implicit Euler.
 *
 * Never: I/O, clocks, globals, threads, allocation after sim_create().
 * Time comes in as the fixed dt of the config, randomness from the PCG32
 * stream stored in the world, so the same seed and the same sequence of
 * calls give bit-identical state on the same build.
 *
 * Threading: a world is not thread-safe; one thread at a time may call into
 * it. sim_step_forked() is the exception: the caller hands it a way to run
 * the pieces of each phase of a step on several threads of its own (the
 * core starts none), with a result equal bit for bit to sim_step().
 *
 * Errors: functions that can fail return 0 or a negative SIM_E* code;
 * sim_strerror() names it.
 */
#ifndef FLOCKD_SIM_H
#define FLOCKD_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

enum sim_error {
    SIM_OK = 0,
    SIM_EINVAL = -1,    /* malformed argument: NaN, negative count, unknown name */
    SIM_ERANGE = -2,    /* value outside its documented range or the world */
    SIM_ECAPACITY = -3, /* a fixed capacity would be exceeded */
    SIM_ENOENT = -4,    /* no such obstacle id */
    SIM_ENOMEM = -5,    /* allocation failed (only sim_create) */
    SIM_EOTHER = -6,    /* a unit of another group than the one named */
    SIM_EEMPTY = -7,    /* a selection that holds no unit */
};

/* Returns a static, human-readable string for a SIM_E* code. */
const char *sim_strerror(int err);

enum sim_edges {
    SIM_EDGES_WRAP = 0,    /* torus: leaving one side enters the other */
    SIM_EDGES_CONTAIN = 1, /* boids steer back inside a margin; never leave */
};

#define SIM_GROUPS 256 /* group ids are 0..255 */

/* Separation spends at most this share of a boid's max_force; the rest is
 * kept for the rules after it, so a crowd packed tighter than separation
 * allows still aligns instead of jittering in place. */
#define SIM_SEPARATION_SHARE 0.75f
#define SIM_PARTS            8 /* most pieces sim_step_forked() cuts a phase into */

struct sim_config {
    float width, height;    /* world size in units, each in [16, 1e6] */
    float dt;               /* fixed time step in seconds, (0, 1] */
    uint32_t capacity;      /* max boids, [1, 4194304] */
    uint32_t max_obstacles; /* max obstacles, [0, 65536] */
    enum sim_edges edges;
    float edge_margin; /* contain mode: distance at which boids turn back */
    uint64_t seed;     /* PRNG seed for spawns */
    int brute_force;   /* 1: neighbours by O(n^2) scan (tests only) */
    int keep_forces;   /* 1: keep the last step's forces for sim_last_force_x/y (tests);
                          costs 8 bytes per boid */
};

/* Fills *cfg with defaults: 1600 x 1000 world, 60 Hz, 16384 boids, wrap. */
void sim_default_config(struct sim_config *cfg);

/*
 * The default world for n boids: 1600 x 1000 up to 1000 boids; beyond, the
 * same 16:10 shape grown so that every boid keeps 1600 square units (10,000
 * boids: 5060 x 3162), in whole units. A flock packed denser than that
 * cannot keep its members half a separation radius apart.
 */
void sim_world_for(uint32_t boids, float *width, float *height);

struct sim_world;

/*
 * Creates a world with no boids, no obstacles, no targets and default
 * parameters for every group. Returns NULL on failure and, if err is not
 * NULL, stores a static reason in *err. Free with sim_destroy().
 */
struct sim_world *sim_create(const struct sim_config *cfg, const char **err);
void sim_destroy(struct sim_world *w);

/* The config the world was created with (read-only). */
const struct sim_config *sim_config(const struct sim_world *w);

/*
 * Spawns n boids of `group` uniformly in the disc of radius `spread` around
 * (x, y) (clamped or wrapped into the world), with random headings at half
 * their group's max speed. Boids are kept sorted by group (ascending) and,
 * within a group, by spawn order: the new boids go after the group's last.
 * The new boids get the next ids, in order. Returns the number spawned
 * (n) or a negative code: SIM_ECAPACITY if n would exceed capacity or the
 * ids left (nothing spawned), SIM_EINVAL/SIM_ERANGE for bad arguments.
 */
int sim_spawn(struct sim_world *w, uint32_t n, int group, float x, float y, float spread);

/*
 * Spawns n boids of `group` uniformly over the whole world, with random
 * headings at half their group's max speed (same ordering and return
 * values as sim_spawn).
 */
int sim_scatter(struct sim_world *w, uint32_t n, int group);

/*
 * Removes up to n boids of `group`, newest first; with group < 0, the last
 * n boids in boid order (highest group first). Remaining boids keep their
 * relative order. Returns how many were removed.
 */
int sim_despawn(struct sim_world *w, uint32_t n, int group);

/*
 * Removes the boids whose ids are among ids[0..n) (ids of no boid are
 * passed over); the rest keep their order. Returns how many were removed,
 * or SIM_ECAPACITY if memory for the pass ran out (nothing changed).
 */
int sim_remove_ids(struct sim_world *w, const uint32_t *ids, uint32_t n);

/*
 * Moves the boids whose ids are among ids[0..n) into `group` (a team
 * converting units), each out of its squad (squad 0 of the new group),
 * placed among the group's boids in id order (a group's boids are always
 * in id order); every other boid keeps its order. Returns how many changed group, or SIM_EINVAL
 * (bad group) or SIM_ECAPACITY (no memory for the pass) with nothing changed.
 */
int sim_regroup_ids(struct sim_world *w, const uint32_t *ids, uint32_t n, int group);

/*
 * Removes every boid and obstacle, clears every target, restores default
 * parameters, reseeds the PRNG with `seed` and sets tick to 0. Obstacle
 * ids keep counting: an id is never reused within a world's life. Advances
 * the epoch by one.
 */
void sim_reset(struct sim_world *w, uint64_t seed);

/*
 * sim_reset(w, seed), then sim_scatter(w, n, group), as one change: the
 * epoch advances by exactly one. Returns n, or SIM_EINVAL (bad group) or
 * SIM_ECAPACITY (n above capacity) with nothing changed.
 */
int sim_reset_scatter(struct sim_world *w, uint64_t seed, uint32_t n, int group);

/* Sets or clears group's seek/arrive target. Target must lie in the world. */
int sim_target_set(struct sim_world *w, int group, float x, float y);
int sim_target_clear(struct sim_world *w, int group);

/*
 * Adds a circular obstacle; its centre must lie in the world and r must be
 * in [1, min(width, height) / 4]. Returns the new obstacle's id (>= 1,
 * never reused within a world's life) or a negative code.
 */
int64_t sim_obstacle_add(struct sim_world *w, float x, float y, float r);
int sim_obstacle_remove(struct sim_world *w, uint32_t id);
void sim_obstacle_clear(struct sim_world *w);

/*
 * Parameters by name (see params.h for the registry). group in 0..255, or
 * -1 to set every group. A value outside [min, max] or non-finite is
 * refused with SIM_ERANGE and nothing changes; unknown names give
 * SIM_EINVAL.
 */
int sim_param_set(struct sim_world *w, int group, const char *name, float value);
int sim_param_get(const struct sim_world *w, int group, const char *name, float *value);
/* Direct read-only access to a group's whole parameter block. */
const struct sim_params *sim_group_params(const struct sim_world *w, int group);

/* Advances the world by one tick (sim_step_forked(w, NULL)). */
void sim_step(struct sim_world *w);

/* One piece of a phase of a step: computes part `part` of the phase. */
typedef void sim_part_fn(void *arg, unsigned part);

/*
 * How a caller runs the pieces of a phase: run(ctx, fn, arg, parts) must
 * call fn(arg, part) exactly once for every part in 0..parts-1, in any
 * order, on any threads, concurrently or not, and return once every call
 * has returned (with their writes visible to the calling thread).
 */
struct sim_fork {
    void (*run)(void *ctx, sim_part_fn *fn, void *arg, unsigned parts);
    void *ctx;
    unsigned parts; /* pieces per phase: 1..SIM_PARTS (more are cut to SIM_PARTS) */
};

/*
 * Advances the world by one tick with the work of each phase cut into
 * f->parts pieces run through f->run: each boid's cell, the cell-sorted
 * copies of the state, the steering (the neighbour scan and the rules, over
 * the same read-only state) and the integration. Only the counting sort and
 * the groups' constants run on the calling thread. Every boid's result is
 * computed by the same operations in the same order whatever the cut, so
 * the state after the step equals sim_step()'s bit for bit, whatever
 * f->parts and whichever threads run the pieces. f NULL or f->parts <= 1:
 * all on the calling thread.
 */
void sim_step_forked(struct sim_world *w, const struct sim_fork *f);

/*
 * Read-only view of the state, valid until the next mutating call. Boids
 * are in stable order, sorted by group then spawn order: index i is the
 * same boid from tick to tick until a spawn, despawn or reset changes the
 * order, which bumps `epoch`. Each boid also has an id of its own for its
 * whole life in the world: 1, 2, ... in spawn order, never reused (not
 * even across resets), kept by checkpoints and replays. A world that has
 * spawned 2^32 - 1 boids spawns no more (SIM_ECAPACITY).
 */
struct sim_obstacle {
    uint32_t id;
    float x, y, r;
};

struct sim_target {
    uint8_t active;
    float x, y;
};

struct sim_view {
    uint64_t tick;
    uint32_t epoch; /* 0 in a new world; +1 whenever boid order or count changes */
    uint32_t count;
    float width, height;
    const float *x, *y, *vx, *vy;
    const uint8_t *group;
    const uint32_t *id; /* each boid's id (see above) */
    uint32_t next_id;   /* the id the next boid spawned gets; 0: none left */
    uint32_t obstacle_count;
    const struct sim_obstacle *obstacles;
    const struct sim_target *targets; /* SIM_GROUPS entries */
};

void sim_view(const struct sim_world *w, struct sim_view *out);

/*
 * Steering acceleration computed for each boid by the last step (units/s^2,
 * already truncated to max force), in boid order; for tests that compare the
 * grid with brute force. NULL before the first step and in a world created
 * without cfg->keep_forces.
 */
const float *sim_last_force_x(const struct sim_world *w);
const float *sim_last_force_y(const struct sim_world *w);

/* Overwrites one boid's position and velocity (tests and tools). */
int sim_boid_set(struct sim_world *w, uint32_t i, float x, float y, float vx, float vy);

/* 64-bit hash over the exact state: boids, obstacles, targets, params, tick, PRNG. */
uint64_t sim_hash(const struct sim_world *w);

struct sim_stats {
    uint32_t count;
    float polarization;   /* |mean unit velocity| in [0, 1]; 0 if empty */
    float mean_speed;     /* units/s */
    float avg_neighbours; /* boids in perception (and view) per boid, last step */
};

void sim_stats(const struct sim_world *w, struct sim_stats *out);

/* ---- squads, orders and formations (PROTOCOL.md §13) ---------------------
 *
 * Each group's boids (a team's units) can be put in squads 1..SIM_SQUADS;
 * squad 0 is the group's units in none. A squad's units flock only among
 * themselves, keep to a formation's slots when it has one, and carry out
 * the squad's order: its waypoints, a squad or unit it follows, or a
 * place it holds. Orders advance in the serial start of a step, so they
 * are as deterministic as the rest.
 */
#define SIM_SQUADS     32  /* squads per group: 1..32 */
#define SIM_WAYPOINTS  16  /* waypoints a squad holds */
#define SIM_SELECT_MAX 256 /* ids one selection may name */

enum sim_order {
    SIM_ORDER_NONE,   /* flocks where it is */
    SIM_ORDER_MOVE,   /* through its waypoints, stops at the last */
    SIM_ORDER_PATROL, /* through its waypoints, round and round */
    SIM_ORDER_FOLLOW, /* behind a squad of its group or a unit */
    SIM_ORDER_HOLD,   /* stays, does not pursue */
    SIM_ORDER_STOP,   /* stays */
    SIM_ORDER_COUNT
};

enum sim_shape {
    SIM_SHAPE_NONE,
    SIM_SHAPE_LINE,
    SIM_SHAPE_COLUMN,
    SIM_SHAPE_WEDGE,
    SIM_SHAPE_BOX,
    SIM_SHAPE_COUNT
};

/* One squad, as sim_squad() shows it. */
struct sim_squad {
    uint32_t units;
    uint8_t order; /* enum sim_order */
    uint8_t shape; /* enum sim_shape */
    uint8_t nway;  /* waypoints held */
    uint8_t next;  /* the one it heads for */
    float way[SIM_WAYPOINTS][2];
    float spacing; /* between slots, units */
    float ax, ay; /* the anchor: the middle of the formation's front row; without one, the centre */
    float facing; /* radians */
    float avx, avy; /* the anchor's velocity, units/s */
    float cx, cy;   /* the units' centre at the last step */
    float err;      /* the units' mean distance from their slots at the last step */
    float gx, gy;   /* where the anchor (or, without a formation, the squad) heads or stays */
    uint16_t follow_squad; /* SIM_ORDER_FOLLOW: a squad of the group, or 0 */
    uint16_t follow_group; /* and the followed unit's group */
    uint32_t follow_unit;  /* SIM_ORDER_FOLLOW: a unit's id, or 0 */
    uint32_t flags;        /* squad.c's own */
};

/* What a selection takes of a group's units. */
enum sim_select_by { SIM_SELECT_RECT, SIM_SELECT_IDS, SIM_SELECT_ALL, SIM_SELECT_SQUADS };

struct sim_selection {
    enum sim_select_by by;
    float x, y, w, h;    /* RECT: [x, x + w) x [y, y + h), cut at the world's edges */
    const uint32_t *ids; /* IDS: 1..SIM_SELECT_MAX of them */
    uint32_t n;
    uint64_t squads; /* SQUADS: bit s for squad s, 0..SIM_SQUADS */
};

/*
 * Moves the group's selected units into `squad` (0..SIM_SQUADS; -1: the
 * lowest-numbered squad with no units). Returns the squad's number, or
 * SIM_EINVAL (bad group or squad), SIM_ERANGE (a rectangle outside the
 * world or not finite), SIM_ENOENT (an id of no live boid), SIM_EOTHER (an
 * id of another group's unit), SIM_EEMPTY (no unit selected),
 * SIM_ECAPACITY (no squad free): then nothing changed.
 */
int sim_select(struct sim_world *w, int group, int squad, const struct sim_selection *sel);

struct sim_order_args {
    enum sim_order order;
    uint32_t nway; /* MOVE, PATROL: 1..SIM_WAYPOINTS points in the world */
    float way[SIM_WAYPOINTS][2];
    int queue;            /* MOVE: after the current waypoints */
    int follow_squad;     /* FOLLOW: a squad of the group, 1..SIM_SQUADS, or 0 */
    uint32_t follow_unit; /* FOLLOW: a live boid's id, or 0 */
};

/*
 * Gives squad 1..SIM_SQUADS of the group an order. Returns 0, or
 * SIM_EINVAL (bad group, squad or order), SIM_ENOENT (a squad with no
 * units, a squad or unit to follow that does not exist), SIM_ERANGE (a
 * waypoint outside the world, too many waypoints).
 */
int sim_order(struct sim_world *w, int group, int squad, const struct sim_order_args *o);

/* Sets a squad's formation; spacing 0 takes 1.25 x the group's
 * separation_radius, else [1, 200]. Errors as sim_order. */
int sim_formation(struct sim_world *w, int group, int squad, enum sim_shape shape, float spacing);

/* Squad 1..SIM_SQUADS of a group (units 0: none); NULL out of range. */
const struct sim_squad *sim_squad(const struct sim_world *w, int group, int squad);

/* Counts the changes to a group's squads a team hears of: commands, a
 * waypoint reached, an order finished, a squad ended. */
uint32_t sim_squad_news(const struct sim_world *w, int group);

/* Boid i's squad (0: none) and slot in it; 0 for i out of range. */
int sim_boid_squad(const struct sim_world *w, uint32_t i, uint32_t *slot);

/* Slot i of n in a formation, as (a, b): across and back, in spacings
 * (PROTOCOL.md §13.3). */
void sim_slot_offset(enum sim_shape shape, uint32_t n, uint32_t i, float *a, float *b);

/* Slot i of squad s where its anchor is now: its world position (not
 * folded onto a torus). */
void sim_slot_position(const struct sim_squad *s, uint32_t i, float *x, float *y);

#endif
