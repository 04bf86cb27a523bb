/*
 * params.c — the parameter registry. One row per tunable: this table is
 * the single source of names, defaults, bounds, units and help text.
 *
 * Where the defaults come from (server/sim/README.md, "Flocking rules", has
 * the figures, each from a `flockbench --metrics` command):
 *  - max_force 400 units/s^2: boids that converge need the agility to part
 *    within the separation radius; at 200 a 10,000-boid flock's nearest-
 *    neighbour p5 falls to 0.50 of the separation radius (0.66 at 400);
 *  - weights separation 1.5 : alignment 2 : cohesion 0.3. Separation comes
 *    first in the force budget anyway; alignment is the strongest pull: 10 s
 *    after a scattered start it leaves little more than half the disorder
 *    it leaves at 1; cohesion is the weakest (000 damps it to 0.1, 002 uses
 *    1 : 0.4 : 0.2): enough to gather stragglers into distinct flocks,
 *    weak enough not to pack them into mills;
 *  - separation radius about half the perception radius (002's "neighbour
 *    circle vs separation circle");
 *  - field of view 270 degrees: alignment and cohesion follow neighbours in
 *    front and to the sides (001), nobody directly behind;
 *  - min_speed 0 so a group can stop at its target: no rule brakes a boid
 *    that flies with its neighbours, so crowds do not crawl without it;
 *  - seek weight 1 and an arrive radius of 150: a 100-boid group settled at
 *    the separation spacing spans about 130 units from its centre;
 *  - speeds in world units per second: a boid at max_speed crosses the
 *    default 1600-unit world in 16 s.
 */
#include "params.h"

#include <math.h>
#include <string.h>

#define P(field) offsetof(struct sim_params, field)

static const struct sim_param_desc registry[] = {
    {"max_speed", P(max_speed), 100.0f, 1.0f, 1000.0f, "units/s", "Fastest a boid may fly.", 0},
    {"min_speed", P(min_speed), 0.0f, 0.0f, 1000.0f, "units/s",
     "Slowest a moving boid may fly (0 lets boids stop at a target).", 0},
    {"max_force", P(max_force), 400.0f, 1.0f, 10000.0f, "units/s^2",
     "Steering acceleration a boid has, spent on its rules in priority order: how sharply it "
     "turns.",
     0},
    {"perception", P(perception), 50.0f, 1.0f, 250.0f, "units",
     "Radius within which neighbours count for alignment and cohesion.", 0},
    {"separation_radius", P(separation_radius), 25.0f, 0.0f, 250.0f, "units",
     "Radius within which neighbours push each other apart.", 0},
    {"fov", P(fov), 270.0f, 0.0f, 360.0f, "degrees",
     "Field of view centred on the heading; alignment and cohesion ignore neighbours outside it "
     "(separation does not).",
     0},
    {"w_separation", P(w_separation), 1.5f, 0.0f, 10.0f, "",
     "Weight of separation (push away from every boid closer than separation_radius, growing "
     "like 1/distance).",
     0},
    {"w_alignment", P(w_alignment), 2.0f, 0.0f, 10.0f, "",
     "Weight of alignment (steer toward the mean heading of the neighbours in view).", 0},
    {"w_cohesion", P(w_cohesion), 0.3f, 0.0f, 10.0f, "",
     "Weight of cohesion (pull toward the centre of the neighbours in view).", 0},
    {"w_seek", P(w_seek), 1.0f, 0.0f, 10.0f, "",
     "Weight of seek/arrive toward the group's target, if it has one.", 0},
    {"w_avoid", P(w_avoid), 4.0f, 0.0f, 20.0f, "", "Weight of obstacle and edge avoidance.", 0},
    {"arrive_radius", P(arrive_radius), 150.0f, 0.0f, 5000.0f, "units",
     "Inside this distance of its target a boid slows down linearly.", 0},
    {"own_group_only", P(own_group_only), 0.0f, 0.0f, 1.0f, "",
     "1: align and cohere only with the own group (separation still counts every boid); 0: flock "
     "with every boid.",
     1},
    {"sight_radius", P(sight_radius), 300.0f, 0.0f, 100000.0f, "units",
     "In an rts room a team's clients see other teams' units this near one of the team's (fog "
     "of war); the flocking rules do not use it.",
     0},
    {"w_flee", P(w_flee), 0.0f, 0.0f, 10.0f, "",
     "Weight of fleeing: steer away from the centre of other groups' boids within flee_radius "
     "(not a squad that holds).",
     0},
    {"flee_radius", P(flee_radius), 60.0f, 0.0f, 200.0f, "units",
     "Radius within which other groups' boids make a boid flee.", 0},
    {"w_pursue", P(w_pursue), 0.0f, 0.0f, 10.0f, "",
     "Weight of pursuit: steer to the nearest other group's boid within pursue_radius (a boid "
     "with no order or stopped).",
     0},
    {"pursue_radius", P(pursue_radius), 60.0f, 0.0f, 200.0f, "units",
     "Radius within which a boid pursues other groups' boids.", 0},
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
