/*
 * stepper.c — one thread or several for a room's step (see stepper.h).
 */
#include "stepper.h"

#include "metrics.h"

/* sim_fork's runner: the pool's idle workers and the calling thread. */
static void fork_on_pool(void *ctx, sim_part_fn *fn, void *arg, unsigned parts)
{
    pool_fork(ctx, fn, arg, parts);
}

struct sim_fork stepper_fork(struct pool *p, unsigned parts)
{
    return (struct sim_fork){fork_on_pool, p, parts};
}

/* Updates the choice from the last tick's duration and the boid count. A
 * split tick run by `threads` threads took at least 1/threads of what it
 * would alone: that bounds the cost per boid from above, so a cost taken
 * from one unusually long tick comes down on the next. */
static void choose(struct stepper *s, uint32_t boids, int64_t last_ns, int64_t period_ns,
                   unsigned threads)
{
    double share = (double)period_ns / STEPPER_SHARE;
    if (boids == 0) {
        s->is_split = false;
        s->long_ticks = 0;
    } else if (!s->is_split) {
        s->long_ticks = (double)last_ns > share ? s->long_ticks + 1 : 0;
        if (s->long_ticks >= 2) {
            s->is_split = true;
            s->long_ticks = 0;
            s->ns_per_boid = (double)last_ns / boids;
        }
    } else {
        double most = (double)last_ns * threads / boids;
        if (most < s->ns_per_boid)
            s->ns_per_boid = most;
        if (s->ns_per_boid * boids < 0.5 * share)
            s->is_split = false;
    }
}

void stepper_step(struct stepper *s, struct sim_world *w, const struct pool_time *t,
                  int64_t period_ns)
{
    struct sim_view v;
    sim_view(w, &v);
    if (!t || !t->pool || pool_workers(t->pool) < 2) {
        s->is_split = false;
        sim_step(w);
        return;
    }
    unsigned threads = pool_workers(t->pool);
    choose(s, v.count, t->last_ns, period_ns, threads < SIM_PARTS ? threads : SIM_PARTS);
    if (!s->is_split) {
        sim_step(w);
        return;
    }
    struct sim_fork fork = stepper_fork(t->pool, SIM_PARTS);
    sim_step_forked(w, &fork);
    atomic_fetch_add_explicit(&g_metrics.split_ticks, 1, memory_order_relaxed);
}

bool stepper_is_split(const struct stepper *s)
{
    return s->is_split;
}
