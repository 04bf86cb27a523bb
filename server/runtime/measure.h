/*
 * measure — the flock's live measures (flockstats.h), taken off the
 * tick's path.
 *
 * One measuring thread serves every room of the process. A room, a few
 * times a second, offers it a frame of its world (measure_offer()): if the
 * thread is idle the frame's arrays are copied into the thread's buffer
 * and the call returns at once; if it is still measuring another room's
 * copy the offer is declined and the room offers again at its next tick.
 * The thread measures the copy and hands the result to the offering
 * client's callback, then rests: it declines offers until its measures
 * have used at most a tenth of a core (a measure of 250,000 boids takes
 * about 0.2 s of CPU, so the next is taken 1.8 s later where rooms offer
 * four times a second): even at the idle class a big measure streams
 * through the memory and caches the ticks share. It runs at the idle
 * scheduling class (SCHED_IDLE), so on a busy machine it only takes time
 * the tick and network threads leave;
 * a client that forgets it while it measures (a room closing) lifts it to
 * the normal class for the rest of that measure, so as not to wait on it
 * for as long as the machine stays busy.
 *
 * The copy costs the tick 16 bytes per boid of memcpy (about 0.2 ms for
 * 100,000 boids, a little more when its buffer is allocated again); the
 * measure itself (milliseconds to tens of milliseconds) never runs on a
 * tick. The copy and the measuring space (56 bytes per boid they hold) of a
 * flock of more than 16,384 boids are held only from the offer to the end
 * of its measure, not between measures.
 *
 * Never: touches a world (it copies the frame the caller points at).
 * Threading: every function is safe from any thread; a client's callback
 * runs on the measuring thread and must not call back into measure.
 */
#ifndef FLOCKD_MEASURE_H
#define FLOCKD_MEASURE_H

#include <stdint.h>

#include "flockstats.h"

/* Who offers frames: embedded in its owner, registered by nothing (an
 * offer names it); it must outlive any frame it offered, which
 * measure_forget() guarantees. */
struct measure_client {
    /* The measure of the frame offered at `tick`, and how long it took
     * (ms). Runs on the measuring thread. */
    void (*done)(void *arg, const struct flockstats_result *res, uint64_t tick, double ms);
    void *arg;
};

struct measure;

/* Starts the measuring thread. NULL and a static reason in *err on failure. */
struct measure *measure_create(const char **err);

/* Stops the thread (a measure in progress finishes first) and frees everything. */
void measure_destroy(struct measure *m);

/*
 * Offers frame f (its arrays are copied before the call returns) taken at
 * `tick` by client c. Returns 1 if taken, 0 if the thread is busy (offer
 * again later), or a negative SIM_ECAPACITY / SIM_EINVAL if the copy
 * buffer could not grow or f has no arrays.
 */
int measure_offer(struct measure *m, struct measure_client *c, const struct flockstats_frame *f,
                  uint64_t tick);

/* Drops c's offer if it waits and waits out a measure of it in progress:
 * after the call no callback of c runs again. */
void measure_forget(struct measure *m, struct measure_client *c);

#endif
