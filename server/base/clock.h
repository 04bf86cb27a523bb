/*
 * clock — the server's one source of time.
 *
 * Everything that needs "now" either takes it as an argument (so tests can
 * drive time) or asks here, at the edge: the tick threads, the service loop
 * and main. Monotonic time orders deadlines, timeouts and rates; wall time
 * is only ever stamped into messages for clients.
 *
 * Never: sleeps or blocks. Threading: safe from any thread.
 */
#ifndef FLOCKD_CLOCK_H
#define FLOCKD_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: deadlines, timeouts, rate buckets. */
int64_t clock_mono_ns(void);

/* CLOCK_REALTIME in microseconds since the Unix epoch: what clients see. */
int64_t clock_wall_us(void);

/* The CPU time the calling thread has used, in nanoseconds: what a piece
 * of work cost, whatever else the machine ran meanwhile. */
int64_t clock_thread_ns(void);

#endif
