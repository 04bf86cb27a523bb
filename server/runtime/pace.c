/*
 * pace.c — a room's rates under load (see pace.h).
 */
#include "pace.h"

#include <math.h>

/* How an estimate follows its samples: a higher one at most doubles it
 * (a room that grew is caught up with in a few ticks, one tick the machine
 * held up does not stop the room for as long), a lower one takes a fifth
 * of the way down. */
#define RISE_MAX 2.0
#define FALL     0.2

void pace_init(struct pace *p, double tick_hz, double snapshot_hz)
{
    *p = (struct pace){.tick_hz = tick_hz,
                       .snapshot_hz = snapshot_hz,
                       .rate_hz = tick_hz,
                       .snap_hz = snapshot_hz,
                       .achieved_hz = tick_hz,
                       .told = 1.0};
}

static void estimate(double *e, double sample)
{
    if (*e <= 0)
        *e = sample;
    else if (sample > *e)
        *e = fmin(sample, RISE_MAX * *e);
    else
        *e += FALL * (sample - *e);
}

/* The rates for the estimates, in pace.h's order. */
static void choose(struct pace *p)
{
    double budget = (p->is_shedding ? PACE_HEADROOM : 1.0) * 1e9; /* work a second, ns */
    double tick = p->tick_ns, snap = p->snap_ns, hz = p->tick_hz, snap_hz = p->snapshot_hz;
    p->is_shedding = hz * tick + snap_hz * snap > budget;
    p->rate_hz = hz;
    p->snap_hz = snap_hz;
    if (!p->is_shedding)
        return;
    double floor = fmin(snap_hz, PACE_SNAPSHOT_FLOOR_HZ);
    double fewer = snap > 0 ? (budget - hz * tick) / snap : snap_hz;
    if (fewer >= floor) { /* fewer snapshots are enough */
        p->snap_hz = fmin(snap_hz, fewer);
        return;
    }
    double rate = tick > 0 ? (budget - floor * snap) / tick : 0;
    if (rate >= floor) { /* fewer ticks, snapshots at the floor */
        p->rate_hz = fmin(hz, rate);
        p->snap_hz = floor;
        return;
    }
    p->rate_hz = fmin(hz, budget / (tick + snap)); /* a snapshot every tick */
    p->snap_hz = p->rate_hz;
}

/* The rate since the last tick's start into the smoothed rate, weighted
 * by how long that interval lasted. */
static void measure(struct pace *p, int64_t now_ns)
{
    if (p->last_start_ns > 0 && now_ns > p->last_start_ns) {
        double gap_s = (double)(now_ns - p->last_start_ns) / 1e9;
        p->achieved_hz += (1.0 - exp(-gap_s / PACE_SMOOTH_S)) * (1.0 / gap_s - p->achieved_hz);
    }
    p->last_start_ns = now_ns;
}

void pace_tick(struct pace *p, int64_t now_ns, int64_t run_ns, int64_t snap_ns)
{
    measure(p, now_ns);
    if (run_ns <= 0)
        return;
    double snap = snap_ns > 0 ? (double)snap_ns : 0.0;
    estimate(&p->tick_ns, fmax(0.0, (double)run_ns - snap));
    if (snap_ns >= 0)
        estimate(&p->snap_ns, snap);
    choose(p);
}

bool pace_is_dilated(const struct pace *p)
{
    return p->rate_hz < p->tick_hz;
}

int64_t pace_period_ns(const struct pace *p)
{
    if (!pace_is_dilated(p))
        return (int64_t)(1e9 / p->tick_hz);
    return llround(1e9 / p->rate_hz);
}

double pace_snapshot_step(const struct pace *p)
{
    if (!p->is_shedding)
        return p->snapshot_hz;
    return p->tick_hz * p->snap_hz / p->rate_hz;
}

double pace_snapshot_hz(const struct pace *p)
{
    return p->snap_hz;
}

double pace_dilation(const struct pace *p)
{
    if (!pace_is_dilated(p))
        return 1.0;
    double f = fmin(p->achieved_hz, p->rate_hz) / p->tick_hz;
    return fmin(0.999, fmax(0.001, round(f * 1000.0) / 1000.0));
}

bool pace_should_tell(struct pace *p, int64_t now_ns)
{
    double f = pace_dilation(p);
    bool is_news = (f < 1.0) != (p->told < 1.0) || fabs(f - p->told) >= PACE_TELL_STEP - 1e-9;
    if (!is_news || (p->told_ns > 0 && now_ns - p->told_ns < (int64_t)(PACE_TELL_GAP_S * 1e9)))
        return false;
    p->told = f;
    p->told_ns = now_ns;
    return true;
}
