/*
 * overload — `flockbench --overload`: a small room beside a room given
 * many times what the machine can tick, both ticking on a pool of tick
 * threads as flockd runs them (room.h, pool.h), with a version 1 viewer
 * of each emulated (room_want), no network. It reports how late the
 * small room's ticks start (p50, p99, most) and, second by second, the big
 * room's dilation and snapshot rate (pace.h): whether overload degrades
 * the big room alone, and steadily.
 *
 * Never: sockets. Threading: one run at a time; it makes and stops its
 * own pool.
 */
#ifndef FLOCKD_OVERLOAD_H
#define FLOCKD_OVERLOAD_H

struct overload_opts {
    long big;       /* the big room's boids; 0: `load` times what the machine ticks */
    double load;    /* how many times, for big 0 */
    long small;     /* the small room's boids */
    double seconds; /* measured, once the small room is added */
    double warmup;  /* seconds the big room ticks alone first */
    double tick_hz; /* both rooms' */
    double snapshot_hz;
    unsigned workers; /* tick threads; 0: one per core */
};

/* Runs it, printing as it goes and, last, one JSON line. Returns 0, or
 * PROTO_E_INTERNAL when the pool or a room cannot be made (said on
 * stderr). */
int overload_run(const struct overload_opts *o);

#endif
