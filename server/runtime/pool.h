/*
 * pool — a fixed set of worker threads that run periodic tasks (the rooms'
 * ticks) on absolute deadlines.
 *
 * Tasks wait in min-heaps ordered by their next deadlines (one for the
 * tasks behind, below, one for the others). A free worker takes the
 * earliest task it may run once it is due, runs it outside the lock, and
 * puts it back one period (or its pace, below) later; a task never runs on
 * two workers at once.
 * With W workers, a task that takes long delays others only when all W are
 * busy. A task that finishes past its next deadline starts again from now
 * instead of running back to back to catch up (counted as an overrun);
 * its next run is reported late by the overrun.
 *
 * A run may pace its task (pool_pace): its next deadlines come a longer
 * period apart than period_ns, and it may say the task is behind: it
 * cannot keep its own rate (a room that dilates its clock, pace.h). Behind
 * tasks share at most W - 1 workers, their runs and their runs' pieces
 * counted together, while some task that is not behind is added: one
 * worker is always left to the tasks that keep their rate, so a task that
 * cannot keep up never holds the worker one that can needs, however long
 * its runs (with W = 1 there is none to leave: a long run delays every
 * other). A behind task waits for a worker it may take, however early its
 * deadline; the others come first. With only behind tasks added they take
 * all W. The worker left may still take a piece of a behind run when no
 * task on time falls due before the piece would end (a piece is taken to
 * last as long as the longest of its fork so far or of its task's last
 * run; of unknown length, it stays the run's own): a big room's long
 * pieces stay its own, a middling room's short ones are shared. (What
 * the machine's other threads and processes do to a worker's wake-up is
 * the kernel's: a busy machine still delays a tick that is due.)
 *
 * The workers are the tick threads' edge to the clock (clock.h): each reads
 * the time once as a run starts and passes it in (struct pool_time), so a
 * task never reads the clock itself and a test can run it with times of
 * its choosing. Deadlines are on clock_mono_ns(). Each run's duration is
 * counted as one tick in the metrics (flockd_tick_duration_seconds), and
 * each overrun as a tick overrun.
 *
 * A task may also be poked (pool_poke): its `poke` function runs on a
 * free worker as soon as one is, between two of its runs and never beside
 * one, without moving its deadline; a poke of a running task waits for
 * the run to end. A task that is due runs before any poke, a poke before
 * another run's pieces. Pokes are not runs: no tick is counted for them.
 * Poking a poked task again does nothing, so many pokes before a worker
 * is free make one call.
 *
 * A run may also cut its work into pieces (pool_fork): workers that are
 * idle at that moment take pieces, the caller takes the rest itself, and
 * the call returns when every piece is done. A worker takes a task that
 * is due before another run's pieces, so one room's forks never make
 * another late, and a behind run's pieces only within the workers behind
 * tasks may have (above). A busy pool therefore costs a forking run
 * nothing but a few locks. Idle workers sleep; only a thread
 * inside a fork (a worker that has just run a piece, a caller waiting for
 * a worker's last piece) watches for up to 50 microseconds before it
 * sleeps, as waking it would take longer, so a pool with nothing to fork
 * never spins.
 *
 * Threading: every function is safe from any thread except that
 * pool_remove() must not be called from inside the task it removes.
 */
#ifndef FLOCKD_POOL_H
#define FLOCKD_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* When a run starts, as its worker read the clocks. */
struct pool_time {
    int64_t now_ns;  /* clock_mono_ns() as the run starts */
    int64_t late_ns; /* how long after its deadline the run started */
    int64_t wall_us; /* clock_wall_us() at the same moment: the time clients see */
    int64_t last_ns; /* how long the task's previous run took; 0 before its first */
    /* What of last_ns was the task's own work: the CPU time its thread
     * used plus the time it waited for its pieces on other workers (at
     * most last_ns; the rest the machine gave to other threads). */
    int64_t last_work_ns;
    struct pool *pool; /* the pool running it: a run may hand it pieces (pool_fork) */
};

/* Owned by the caller (embed it), managed by the pool while added. */
struct pool_task {
    /* Runs one period's work, started at *t (valid during the call). */
    void (*run)(void *arg, const struct pool_time *t);
    /* What pool_poke runs between two runs; NULL: pokes do nothing. */
    void (*poke)(void *arg);
    void *arg;
    int64_t period_ns;
    /* Written by the task's own run (pool_pace), read once it returns. */
    int64_t pace_ns; /* from the next deadline on, instead of period_ns; 0: period_ns */
    bool is_behind;
    /* Pool-private. */
    int64_t deadline_ns;
    int64_t carry_ns;     /* how far the last run overran the next deadline */
    int64_t last_ns;      /* the last run's duration */
    int64_t last_work_ns; /* the part of it that was its work (pool_time) */
    int64_t piece_ns;     /* the longest piece the last run forked; 0: none */
    size_t slot;
    int queue; /* which of the pool's queues holds it: on time, behind */
    int state;
    struct pool_task *poked_next; /* in the pool's list of poked tasks */
    bool is_poked;
};

struct pool;

/* Starts `workers` threads (0: one per online CPU). NULL and *err on failure. */
struct pool *pool_create(unsigned workers, const char **err);
/* Stops and joins the workers: no task runs after this returns; tasks can
 * still be removed. */
void pool_stop(struct pool *p);
/* pool_stop, then frees the pool; tasks still added are simply dropped. */
void pool_destroy(struct pool *p);
unsigned pool_workers(const struct pool *p);

/* Schedules t to run now and then every t->period_ns, neither paced nor
 * behind. Returns 0, or PROTO_E_CAPACITY when the pool holds its most
 * tasks. */
int pool_add(struct pool *p, struct pool_task *t);
/* Unschedules t, waiting for a run or poke in progress to end; a poke
 * not run yet is dropped. Idempotent. */
void pool_remove(struct pool *p, struct pool_task *t);
/* Has t->poke run once, soon, between t's runs (above). Does nothing for a
 * task not added or without a poke function. From any thread, a task's own
 * run or poke included (then it runs after that ends). */
void pool_poke(struct pool *p, struct pool_task *t);

/*
 * From inside t's own run only: t's next deadline comes period_ns after
 * this run's (0 or less: t->period_ns), and so on until the next call;
 * `behind` says whether t cannot keep its rate (the sharing rule above).
 * Takes effect when the run returns. Nothing can fail.
 */
void pool_pace(struct pool_task *t, int64_t period_ns, bool behind);

/*
 * Calls fn(arg, part) once for each part in 0..parts-1 and returns when all
 * have returned, their writes visible to the caller. Pieces are taken in
 * order of part, by the caller and by whichever workers are idle (none
 * after pool_stop), so which thread runs a piece is unknown and several
 * run at once. From any thread, a pool task's run included; fn must not
 * call pool_fork itself. Nothing can fail.
 */
void pool_fork(struct pool *p, void (*fn)(void *arg, unsigned part), void *arg, unsigned parts);

#endif
