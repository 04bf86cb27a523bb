/*
 * params — the per-group flocking parameters and their registry.
 *
 * Every tunable of a group lives in struct sim_params and is described once
 * in a table (name, default, min, max, unit, help). The server lists and
 * validates parameters from this table, the viewer builds its sliders from
 * it and scripts discover names from it: nothing else repeats these values.
 * It is a library of its own (flockparams) that the core and the protocol
 * codec both link: the one part of the simulation that proto knows.
 *
 * Never: I/O, globals that change. The table is immutable.
 */
#ifndef FLOCKD_SIM_PARAMS_H
#define FLOCKD_SIM_PARAMS_H

#include <stddef.h>

struct sim_params {
    float max_speed;         /* units/s */
    float min_speed;         /* units/s, <= max_speed in effect */
    float max_force;         /* units/s^2: cap on the summed steering */
    float perception;        /* radius for alignment and cohesion, units */
    float separation_radius; /* radius for separation, units */
    float fov;               /* field of view, degrees, centred on heading */
    float w_separation;
    float w_alignment;
    float w_cohesion;
    float w_seek;
    float w_avoid;        /* obstacle and edge avoidance */
    float arrive_radius;  /* seek slows down linearly inside this radius */
    float own_group_only; /* 1: flock only with the same group; 0: with all */
    float sight_radius;   /* an rts unit sees other teams' units this near, units */
    float w_flee;         /* steer away from other groups' units within flee_radius */
    float flee_radius;    /* units */
    float w_pursue;       /* steer to the nearest other group's unit within pursue_radius */
    float pursue_radius;  /* units */
};

struct sim_param_desc {
    const char *name;
    size_t offset; /* offsetof(struct sim_params, field) */
    float def, min, max;
    const char *unit;
    const char *help;
    int integer; /* 1: only whole numbers are valid (switches) */
};

/* The registry: sim_param_count() entries, in a fixed documented order. */
size_t sim_param_count(void);
const struct sim_param_desc *sim_param_at(size_t i);
/* Returns the descriptor for `name`, or NULL if there is none. */
const struct sim_param_desc *sim_param_find(const char *name);

/* Fills *p with every default from the registry. */
void sim_params_default(struct sim_params *p);

/* Returns 1 if v is finite, in [d->min, d->max] and whole where required. */
int sim_param_valid(const struct sim_param_desc *d, float v);

/* Pointer to the field described by d inside p. */
float *sim_param_field(struct sim_params *p, const struct sim_param_desc *d);

#endif
