/*
 * pace — what a room does when its work outgrows its rates: it sends
 * fewer snapshots first, then slows its simulated clock (time dilation),
 * and never bursts to catch up.
 *
 * The room hands pace_tick() each tick's start and what its previous run
 * cost (the whole run, and the part of it that encoded a snapshot: its
 * work, CPU time, not the wall clock, so that a machine busy with other
 * processes does not make a room shed). From
 * those it keeps two estimates, a tick's work without its snapshot and a
 * snapshot's encoding (each rises at once, falls slowly), and chooses the
 * rates, in this order:
 *
 *   1. the nominal rates, tick_hz ticks and snapshot_hz snapshots a second,
 *      when their work fits the room's budget: its tick thread busy at
 *      most the whole time;
 *   2. else fewer snapshots, down to PACE_SNAPSHOT_FLOOR_HZ a second (or
 *      snapshot_hz if lower), ticks still at tick_hz;
 *   3. else fewer ticks (dilation), snapshots at the floor, or on every
 *      tick once the ticks come slower than the floor.
 *
 * A room that sheds work aims at PACE_HEADROOM of its budget, and goes
 * back to its nominal rates only once they fit that: a room near its limit
 * does not flap between the two. A step's dt never changes: a dilated room
 * takes fewer steps a second, each the same, so its ticks, hashes and
 * replays are those of an undilated one.
 *
 * The dilation it reports is 1.0 unless the room dilates; then the ticks
 * a second it gets over tick_hz: the lower of the rate it chose and the
 * rate its ticks start at, smoothed over about PACE_SMOOTH_S seconds (a
 * room that overruns even its slower period gets less than it chose),
 * rounded to 0.001, at most 0.999. A room that does not dilate reports
 * 1.0 even while the machine holds its ticks back (that shows as their
 * lateness): one late tick is no reason to tell anyone that its clock
 * runs slow. pace_should_tell() says when the room's
 * members are to be told: when it enters or leaves dilation or the factor
 * moved by PACE_TELL_STEP since they were last told, at most once every
 * PACE_TELL_GAP_S seconds.
 *
 * Never: reads the clock (times come in), allocates, locks.
 * Threading: a room's pace is its tick's alone.
 */
#ifndef FLOCKD_PACE_H
#define FLOCKD_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define PACE_SNAPSHOT_FLOOR_HZ 5.0 /* snapshots a second a room keeps while it dilates */
#define PACE_HEADROOM          0.9 /* of its budget, a room shedding work aims at */
#define PACE_SMOOTH_S          1.0 /* the dilation's time constant, seconds */
#define PACE_TELL_STEP         0.05
#define PACE_TELL_GAP_S        1.0

struct pace {
    double tick_hz, snapshot_hz; /* nominal */
    double tick_ns, snap_ns;     /* the estimates; 0 until measured */
    bool is_shedding;            /* below the nominal rates: aims at PACE_HEADROOM */
    double rate_hz, snap_hz;     /* the rates chosen: ticks and snapshots a second */
    int64_t last_start_ns;       /* the previous tick's start; 0: none yet */
    double achieved_hz;          /* ticks a second, smoothed */
    double told;                 /* the factor members were last told */
    int64_t told_ns;             /* when; 0: never */
};

/* A pace at the nominal rates (tick_hz > 0, 0 < snapshot_hz <= tick_hz). */
void pace_init(struct pace *p, double tick_hz, double snapshot_hz);

/*
 * One tick starts at now_ns. The run before it took run_ns (0: no run
 * before, or not known), of which snap_ns encoded a snapshot (< 0: it
 * published none). Updates the estimates, the rates and the measured
 * dilation.
 */
void pace_tick(struct pace *p, int64_t now_ns, int64_t run_ns, int64_t snap_ns);

/* Whether the ticks come slower than tick_hz by the room's own choice. */
bool pace_is_dilated(const struct pace *p);

/* The time from one tick's deadline to the next: 1/tick_hz, longer when
 * dilated. */
int64_t pace_period_ns(const struct pace *p);

/* What a tick adds to a snapshot phase that publishes each time it
 * reaches tick_hz: snapshot_hz at the nominal rates, less while shedding,
 * so that snapshots come at snap_hz a second. */
double pace_snapshot_step(const struct pace *p);

/* Snapshots a second now (snapshot_hz when not shedding). */
double pace_snapshot_hz(const struct pace *p);

/* The measured dilation, 0 < factor <= 1 (above). */
double pace_dilation(const struct pace *p);

/* True if the room's members are to be told its dilation now (above);
 * then it counts as told at now_ns. */
bool pace_should_tell(struct pace *p, int64_t now_ns);

#endif
