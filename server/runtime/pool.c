/*
 * pool.c — worker threads over a deadline heap (see pool.h).
 *
 * Locking: `lock` guards the heap and every task's deadline, slot and
 * state, and the list of forked jobs with pieces left. One idle worker,
 * the timer, sleeps on `due` until the earliest deadline (or until a new
 * earlier task or a forked job arrives); the other idle workers sleep on
 * `spare` until the timer leaves to run a task while others wait, or a
 * forked job arrives. So an idle pool wakes one thread per deadline, not
 * every worker. pool_remove sleeps on `idle` until a running task comes
 * back, pool_fork on `joined` until its pieces are done. Poked tasks wait
 * in a list in the order they were poked, queued or running; a free
 * worker takes the first one that is queued.
 */
#define _POSIX_C_SOURCE 200809L

#include "pool.h"

#include "clock.h"
#include "metrics.h"
#include "proto.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define POOL_TASKS_MAX 4096

enum { T_IDLE, T_QUEUED, T_RUNNING, T_REMOVING };

/* One pool_fork call's pieces, on the caller's stack while it waits. */
struct job {
    void (*fn)(void *arg, unsigned part);
    void *arg;
    unsigned parts, taken; /* under lock */
    atomic_uint done;      /* written under lock, watched without it by the caller */
    struct job *next;      /* in the list while pieces are left */
};

struct pool {
    pthread_mutex_t lock;
    pthread_cond_t due, spare, idle, joined;
    bool has_timer;       /* a worker sleeps on `due` until the earliest deadline */
    struct job *jobs;     /* forked jobs with pieces not taken yet */
    atomic_uint has_jobs; /* jobs != NULL, for workers watching without the lock */
    struct pool_task *heap[POOL_TASKS_MAX];
    size_t count;
    struct pool_task *poked, **poked_tail; /* tasks with a poke to run */
    int stop;
    unsigned nworkers, size; /* running; started */
    pthread_t *workers;
};

/* ---- the heap (under lock) ------------------------------------------------ */

static void heap_set(struct pool *p, size_t i, struct pool_task *t)
{
    p->heap[i] = t;
    t->slot = i;
}

static void sift_up(struct pool *p, size_t i)
{
    struct pool_task *t = p->heap[i];
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (p->heap[up]->deadline_ns <= t->deadline_ns)
            break;
        heap_set(p, i, p->heap[up]);
        i = up;
    }
    heap_set(p, i, t);
}

static void sift_down(struct pool *p, size_t i)
{
    struct pool_task *t = p->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= p->count)
            break;
        if (c + 1 < p->count && p->heap[c + 1]->deadline_ns < p->heap[c]->deadline_ns)
            c++;
        if (t->deadline_ns <= p->heap[c]->deadline_ns)
            break;
        heap_set(p, i, p->heap[c]);
        i = c;
    }
    heap_set(p, i, t);
}

/* Queues t. A new earliest deadline re-times the timer, or makes a spare
 * worker the timer when there is none, unless the caller is a worker that
 * goes on to wait for it itself (`by_worker`). */
static void heap_push(struct pool *p, struct pool_task *t, bool by_worker)
{
    p->count++;
    heap_set(p, p->count - 1, t);
    sift_up(p, p->count - 1);
    t->state = T_QUEUED;
    if (t->slot != 0)
        return;
    if (p->has_timer)
        pthread_cond_signal(&p->due);
    else if (!by_worker)
        pthread_cond_signal(&p->spare);
}

static void heap_take(struct pool *p, size_t i)
{
    struct pool_task *last = p->heap[--p->count];
    if (i < p->count) {
        heap_set(p, i, last);
        sift_down(p, i);
        sift_up(p, last->slot);
    }
}

/* ---- pokes (under lock) ---------------------------------------------------- */

/* Takes t off the list of poked tasks, if it is on it. */
static void unpoke(struct pool *p, struct pool_task *t)
{
    if (!t->is_poked)
        return;
    struct pool_task **at = &p->poked;
    while (*at != t)
        at = &(*at)->poked_next;
    *at = t->poked_next;
    if (p->poked_tail == &t->poked_next)
        p->poked_tail = at;
    t->poked_next = NULL;
    t->is_poked = false;
}

/* The first poked task that no worker runs, or NULL. */
static struct pool_task *poke_ready(const struct pool *p)
{
    for (struct pool_task *t = p->poked; t; t = t->poked_next)
        if (t->state == T_QUEUED)
            return t;
    return NULL;
}

/* Puts a task a worker ran (or poked) back on the heap, or lets its
 * remover go on. */
static void put_back(struct pool *p, struct pool_task *t)
{
    if (t->state == T_REMOVING) {
        unpoke(p, t);
        t->state = T_IDLE;
        pthread_cond_broadcast(&p->idle);
    } else {
        heap_push(p, t, true);
    }
}

/* Runs a poked task's poke outside the lock, off the heap meanwhile so no
 * tick of it starts; its deadline stays. */
static void run_poke(struct pool *p, struct pool_task *t)
{
    unpoke(p, t);
    heap_take(p, t->slot);
    t->state = T_RUNNING;
    if (p->count > 0 && !p->has_timer)
        pthread_cond_signal(&p->spare); /* the next deadline needs a timer */
    pthread_mutex_unlock(&p->lock);
    t->poke(t->arg);
    pthread_mutex_lock(&p->lock);
    put_back(p, t);
}

void pool_poke(struct pool *p, struct pool_task *t)
{
    if (!t->poke)
        return;
    pthread_mutex_lock(&p->lock);
    if ((t->state == T_QUEUED || t->state == T_RUNNING) && !t->is_poked) {
        t->is_poked = true;
        t->poked_next = NULL;
        *p->poked_tail = t;
        p->poked_tail = &t->poked_next;
        if (t->state == T_QUEUED) { /* a free worker: the timer, or a spare one */
            if (p->has_timer)
                pthread_cond_signal(&p->due);
            else
                pthread_cond_signal(&p->spare);
        }
    }
    pthread_mutex_unlock(&p->lock);
}

/* ---- forked pieces (under lock) -------------------------------------------- */

/* How long a thread about to sleep on a fork (a worker that has just run a
 * piece, a caller whose last pieces a worker runs) watches for what it
 * waits for first: waking a sleeping thread takes tens of microseconds,
 * as long as a piece of a mid-sized room's phase. Only threads inside a
 * fork ever watch, so a pool with nothing to fork never spins. */
#define POOL_WATCH_NS 50000

/* Spins, without the lock, until *v >= target or POOL_WATCH_NS have
 * passed. */
static void watch(const atomic_uint *v, unsigned target)
{
    int64_t until = clock_mono_ns() + POOL_WATCH_NS;
    while (atomic_load_explicit(v, memory_order_acquire) < target && clock_mono_ns() < until)
        for (int i = 0; i < 64; i++)
            __asm__ __volatile__("" ::: "memory");
}

/* Takes job j's next piece and runs it outside the lock; unlinks j once its
 * last piece is taken and wakes its caller once its last piece is done. */
static void run_piece(struct pool *p, struct job *j)
{
    unsigned part = j->taken++, parts = j->parts;
    if (j->taken == parts) {
        struct job **at = &p->jobs;
        while (*at && *at != j)
            at = &(*at)->next;
        if (*at)
            *at = j->next;
        atomic_store_explicit(&p->has_jobs, p->jobs != NULL, memory_order_release);
    }
    pthread_mutex_unlock(&p->lock);
    j->fn(j->arg, part);
    pthread_mutex_lock(&p->lock);
    /* The caller watches `done` without the lock and may return, ending j,
     * as soon as the last piece counts: j is not touched after that. */
    if (atomic_fetch_add_explicit(&j->done, 1, memory_order_release) + 1 == parts)
        pthread_cond_broadcast(&p->joined);
}

void pool_fork(struct pool *p, void (*fn)(void *arg, unsigned part), void *arg, unsigned parts)
{
    if (parts == 0)
        return;
    struct job j = {.fn = fn, .arg = arg, .parts = parts};
    pthread_mutex_lock(&p->lock);
    if (parts > 1) {
        j.next = p->jobs;
        p->jobs = &j;
        atomic_store_explicit(&p->has_jobs, 1, memory_order_release);
        pthread_cond_broadcast(&p->due); /* idle workers: a piece each */
        pthread_cond_broadcast(&p->spare);
    }
    while (j.taken < j.parts)
        run_piece(p, &j);
    if (atomic_load_explicit(&j.done, memory_order_acquire) < j.parts) {
        /* A worker is finishing the last pieces: watch a moment, as a
         * sleeping caller would take long to wake. */
        pthread_mutex_unlock(&p->lock);
        watch(&j.done, j.parts);
        pthread_mutex_lock(&p->lock);
    }
    while (atomic_load_explicit(&j.done, memory_order_acquire) < j.parts)
        pthread_cond_wait(&p->joined, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* ---- workers ---------------------------------------------------------------- */

/* Called with the lock held after a piece, no job left: watches, without
 * the lock, for the run's next fork for a moment. Returns with the lock
 * held. */
static void await_next_job(struct pool *p)
{
    pthread_mutex_unlock(&p->lock);
    watch(&p->has_jobs, 1);
    pthread_mutex_lock(&p->lock);
}

/* A task's deadline has come (lock held). */
static bool is_task_due(const struct pool *p)
{
    return p->count > 0 && p->heap[0]->deadline_ns <= clock_mono_ns();
}

static void *worker_main(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        /* A poke comes after a tick that is due, before pieces. Pieces of
         * a running tick come before a tick not yet due, never before one
         * that is: its forking run finishes its pieces itself, and a big
         * room's steady forks must not make the others late. */
        bool is_due = (p->poked || p->jobs) && is_task_due(p);
        struct pool_task *poked = p->poked && !is_due ? poke_ready(p) : NULL;
        if (poked) {
            run_poke(p, poked);
            continue;
        }
        if (p->jobs && !is_due) {
            run_piece(p, p->jobs);
            if (!p->jobs)
                await_next_job(p);
            continue;
        }
        if (p->count == 0) {
            pthread_cond_wait(&p->spare, &p->lock);
            continue;
        }
        struct pool_task *t = p->heap[0];
        int64_t now = clock_mono_ns();
        if (t->deadline_ns > now) {
            if (p->has_timer) { /* another worker waits for it */
                pthread_cond_wait(&p->spare, &p->lock);
                continue;
            }
            struct timespec ts = {(time_t)(t->deadline_ns / 1000000000LL),
                                  (long)(t->deadline_ns % 1000000000LL)};
            p->has_timer = true;
            pthread_cond_timedwait(&p->due, &p->lock, &ts);
            p->has_timer = false;
            continue;
        }
        heap_take(p, 0);
        unpoke(p, t); /* the run takes what the poke was for */
        t->state = T_RUNNING;
        if (p->count > 0 && !p->has_timer)
            pthread_cond_signal(&p->spare); /* the next deadline needs a timer */
        pthread_mutex_unlock(&p->lock);

        struct pool_time at = {.now_ns = now,
                               .late_ns = now - t->deadline_ns + t->carry_ns,
                               .wall_us = clock_wall_us(),
                               .last_ns = t->last_ns,
                               .pool = p};
        t->run(t->arg, &at);
        int64_t end = clock_mono_ns();
        metrics_tick((uint64_t)(end - now));

        pthread_mutex_lock(&p->lock);
        t->last_ns = end - now;
        t->deadline_ns += t->period_ns;
        t->carry_ns = 0;
        if (end > t->deadline_ns) {
            /* Late: count it and start again from now instead of bursting
             * to catch up; the next run reports how late it really is. */
            atomic_fetch_add_explicit(&g_metrics.tick_overruns, 1, memory_order_relaxed);
            t->carry_ns = end - t->deadline_ns;
            t->deadline_ns = end;
        }
        put_back(p, t);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- life cycle ---------------------------------------------------------------- */

struct pool *pool_create(unsigned workers, const char **err)
{
    if (workers == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cores > 0 ? (unsigned)cores : 1;
    }
    struct pool *p = calloc(1, sizeof *p);
    if (p)
        p->workers = calloc(workers, sizeof *p->workers);
    if (!p || !p->workers) {
        free(p);
        *err = "out of memory";
        return NULL;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->due, &attr);
    pthread_cond_init(&p->spare, &attr);
    pthread_cond_init(&p->idle, &attr);
    pthread_cond_init(&p->joined, &attr);
    pthread_condattr_destroy(&attr);
    p->poked_tail = &p->poked;
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
            *err = "cannot start the tick threads";
            pool_destroy(p);
            return NULL;
        }
        p->nworkers++;
    }
    p->size = workers;
    return p;
}

void pool_stop(struct pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->due);
    pthread_cond_broadcast(&p->spare);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    p->nworkers = 0;
}

void pool_destroy(struct pool *p)
{
    if (!p)
        return;
    pool_stop(p);
    pthread_cond_destroy(&p->due);
    pthread_cond_destroy(&p->spare);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->joined);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
}

unsigned pool_workers(const struct pool *p)
{
    return p->size;
}

int pool_add(struct pool *p, struct pool_task *t)
{
    pthread_mutex_lock(&p->lock);
    int ok = p->count < POOL_TASKS_MAX;
    if (ok) {
        t->deadline_ns = clock_mono_ns();
        t->carry_ns = 0;
        t->last_ns = 0;
        t->is_poked = false;
        t->poked_next = NULL;
        heap_push(p, t, false);
    }
    pthread_mutex_unlock(&p->lock);
    return ok ? 0 : PROTO_E_CAPACITY;
}

void pool_remove(struct pool *p, struct pool_task *t)
{
    pthread_mutex_lock(&p->lock);
    if (t->state == T_QUEUED) {
        heap_take(p, t->slot);
        unpoke(p, t);
        t->state = T_IDLE;
    } else if (t->state == T_RUNNING) {
        t->state = T_REMOVING;
    }
    while (t->state == T_REMOVING)
        pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
