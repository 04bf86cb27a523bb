/*
 * params.c — the parameter registry. One row per tunable: this table is
 * the single source of names, defaults, bounds, units and help text.
 *
 * Where the defaults come from (see README "Flocking rules"):
 *  - weights separation 1.5 : alignment 1.0 : cohesion 1.0 follow the
 *    ordering every seed write-up agrees on (separation strongest, cohesion
 *    no stronger than alignment; 002 uses 1 : 0.4 : 0.2, 000 damps cohesion
 *    to 0.1) rescaled for our per-rule steering, which truncates each rule
 *    to max_force before weighting;
 *  - separation radius about half the perception radius (002's "neighbour
 *    circle vs separation circle");
 *  - field of view 270 degrees: neighbours only in front and to the sides
 *    (001), nobody directly behind;
 *  - seek weight 1 and an arrive radius of two perception radii so a group
 *    slows before it reaches its target instead of orbiting it (000);
 *  - speeds in world units per second: a lone boid at max_speed crosses the
 *    default 1600-unit world in 16 s; a flock cruises slower, since
 *    separation and cohesion keep pulling its members about.
 */
#include "params.h"

#include <math.h>
#include <string.h>

#define P(field) offsetof(struct sim_params, field)

static const struct sim_param_desc registry[] = {
    {"max_speed", P(max_speed), 100.0f, 1.0f, 1000.0f, "units/s", "Fastest a boid may fly.", 0},
    {"min_speed", P(min_speed), 0.0f, 0.0f, 1000.0f, "units/s",
     "Slowest a moving boid may fly (0 lets boids stop at a target).", 0},
    {"max_force", P(max_force), 200.0f, 1.0f, 10000.0f, "units/s^2",
     "Cap on the summed steering acceleration: how sharply a boid turns.", 0},
    {"perception", P(perception), 50.0f, 1.0f, 250.0f, "units",
     "Radius within which neighbours count for alignment and cohesion.", 0},
    {"separation_radius", P(separation_radius), 25.0f, 0.0f, 250.0f, "units",
     "Radius within which neighbours push each other apart.", 0},
    {"fov", P(fov), 270.0f, 0.0f, 360.0f, "degrees",
     "Field of view centred on the heading; neighbours outside it are ignored.", 0},
    {"w_separation", P(w_separation), 1.5f, 0.0f, 10.0f, "",
     "Weight of separation (steer away from close neighbours, by 1/distance).", 0},
    {"w_alignment", P(w_alignment), 1.0f, 0.0f, 10.0f, "",
     "Weight of alignment (steer toward the neighbours' mean heading).", 0},
    {"w_cohesion", P(w_cohesion), 1.0f, 0.0f, 10.0f, "",
     "Weight of cohesion (steer toward the neighbours' centre of mass).", 0},
    {"w_seek", P(w_seek), 1.0f, 0.0f, 10.0f, "",
     "Weight of seek/arrive toward the group's target, if it has one.", 0},
    {"w_avoid", P(w_avoid), 4.0f, 0.0f, 20.0f, "", "Weight of obstacle and edge avoidance.", 0},
    {"arrive_radius", P(arrive_radius), 100.0f, 0.0f, 5000.0f, "units",
     "Inside this distance of its target a boid slows down linearly.", 0},
    {"own_group_only", P(own_group_only), 0.0f, 0.0f, 1.0f, "",
     "1: align and cohere only with the own group (separation still counts every boid); 0: flock "
     "with every boid.",
     1},
};

#undef P

size_t sim_param_count(void)
{
    return sizeof registry / sizeof registry[0];
}

const struct sim_param_desc *sim_param_at(size_t i)
{
    return i < sim_param_count() ? &registry[i] : NULL;
}

const struct sim_param_desc *sim_param_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sim_param_count(); i++)
        if (strcmp(registry[i].name, name) == 0)
            return &registry[i];
    return NULL;
}

float *sim_param_field(struct sim_params *p, const struct sim_param_desc *d)
{
    return (float *)((char *)p + d->offset);
}

void sim_params_default(struct sim_params *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < sim_param_count(); i++)
        *sim_param_field(p, &registry[i]) = registry[i].def;
}

int sim_param_valid(const struct sim_param_desc *d, float v)
{
    if (!isfinite(v) || v < d->min || v > d->max)
        return 0;
    return !d->integer || v == floorf(v);
}
