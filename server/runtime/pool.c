/*
 * pool.c — worker threads over a deadline heap (see pool.h).
 *
 * Locking: `lock` guards the queues (two heaps: the tasks on time and the
 * tasks behind), every task's deadline, slot and state, the counts of
 * tasks and of workers doing behind work, and the list of forked jobs
 * with pieces left. One idle worker,
 * the timer, sleeps on `due` until the earliest deadline (or until a new
 * earlier task or a forked job arrives); the other idle workers sleep on
 * `spare` until the timer leaves to run a task while others wait, or a
 * forked job arrives. So an idle pool wakes one thread per deadline, not
 * every worker. Behind work that ends wakes one worker, as behind tasks
 * or pieces it could not take may now be its to take. pool_remove sleeps
 * on `idle` until a running task comes
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
enum { ON_TIME, BEHIND, QUEUES }; /* a task's queue */

/* Tasks waiting for their deadlines: a min-heap by deadline. */
struct queue {
    struct pool_task *at[POOL_TASKS_MAX];
    size_t count;
};

/* One pool_fork call's pieces, on the caller's stack while it waits. */
struct job {
    void (*fn)(void *arg, unsigned part);
    void *arg;
    bool is_behind;        /* forked by a behind task's run */
    int64_t longest_ns;    /* its longest piece so far */
    int64_t last_run_ns;   /* the longest piece of its run's task's last run; 0: none */
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
    struct queue queue[QUEUES];
    size_t tasks, behind;                  /* tasks added; those of them behind */
    unsigned behind_busy;                  /* workers running a behind task or one of its pieces */
    struct pool_task *poked, **poked_tail; /* tasks with a poke to run */
    int stop;
    unsigned nworkers, size; /* running; started */
    pthread_t *workers;
};

/* ---- the queues (under lock) ---------------------------------------------- */

static void heap_set(struct queue *q, size_t i, struct pool_task *t)
{
    q->at[i] = t;
    t->slot = i;
}

static void sift_up(struct queue *q, size_t i)
{
    struct pool_task *t = q->at[i];
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (q->at[up]->deadline_ns <= t->deadline_ns)
            break;
        heap_set(q, i, q->at[up]);
        i = up;
    }
    heap_set(q, i, t);
}

static void sift_down(struct queue *q, size_t i)
{
    struct pool_task *t = q->at[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->count)
            break;
        if (c + 1 < q->count && q->at[c + 1]->deadline_ns < q->at[c]->deadline_ns)
            c++;
        if (t->deadline_ns <= q->at[c]->deadline_ns)
            break;
        heap_set(q, i, q->at[c]);
        i = c;
    }
    heap_set(q, i, t);
}

/* Wakes one free worker to look again: the timer, or a spare one. */
static void wake_one(struct pool *p)
{
    pthread_cond_signal(p->has_timer ? &p->due : &p->spare);
}

/* Queues t, in the behind tasks' queue if it is behind. A new earliest
 * deadline re-times the timer, or makes a spare worker the timer when
 * there is none, unless the caller is a worker that goes on to wait for
 * it itself (`by_worker`). */
static void heap_push(struct pool *p, struct pool_task *t, bool by_worker)
{
    t->queue = t->is_behind ? BEHIND : ON_TIME;
    struct queue *q = &p->queue[t->queue];
    q->count++;
    heap_set(q, q->count - 1, t);
    sift_up(q, q->count - 1);
    t->state = T_QUEUED;
    if (t->slot == 0 && (p->has_timer || !by_worker))
        wake_one(p);
}

static void heap_take(struct pool *p, struct pool_task *t)
{
    struct queue *q = &p->queue[t->queue];
    struct pool_task *last = q->at[--q->count];
    if (t->slot < q->count) {
        heap_set(q, t->slot, last);
        sift_down(q, last->slot);
        sift_up(q, last->slot);
    }
}

static bool has_queued(const struct pool *p)
{
    return p->queue[ON_TIME].count + p->queue[BEHIND].count > 0;
}

/* Whether one more worker may do behind work (pool.h's rule). */
static bool may_do_behind(const struct pool *p)
{
    bool shared = p->tasks > p->behind && p->size > 1; /* a task on time is added */
    return p->behind_busy < (shared ? p->size - 1 : p->size);
}

/* The task a free worker runs next, once it is due: the earliest of the
 * queue on time and, if one more worker may do behind work, of the queue
 * behind (on time first at equal deadlines); NULL: none it may run. */
static struct pool_task *next_task(const struct pool *p)
{
    const struct queue *on = &p->queue[ON_TIME], *be = &p->queue[BEHIND];
    struct pool_task *t = on->count ? on->at[0] : NULL;
    if (be->count && may_do_behind(p) && (!t || be->at[0]->deadline_ns < t->deadline_ns))
        t = be->at[0];
    return t;
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
    heap_take(p, t);
    t->state = T_RUNNING;
    if (has_queued(p) && !p->has_timer)
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

/* Takes job j's next piece and runs it outside the lock, timed; unlinks j
 * once its last piece is taken and wakes its caller once its last piece
 * is done. `busy`: 1 if the piece counts as a worker's behind work (a
 * worker's piece of a behind job; the caller's pieces are its run's),
 * else 0. */
static void run_piece(struct pool *p, struct job *j, unsigned busy)
{
    unsigned part = j->taken++, parts = j->parts;
    p->behind_busy += busy;
    if (j->taken == parts) {
        struct job **at = &p->jobs;
        while (*at && *at != j)
            at = &(*at)->next;
        if (*at)
            *at = j->next;
        atomic_store_explicit(&p->has_jobs, p->jobs != NULL, memory_order_release);
    }
    pthread_mutex_unlock(&p->lock);
    int64_t start = clock_mono_ns();
    j->fn(j->arg, part);
    int64_t took = clock_mono_ns() - start;
    pthread_mutex_lock(&p->lock);
    if (took > j->longest_ns)
        j->longest_ns = took;
    if (busy) {
        p->behind_busy--;
        wake_one(p);
    }
    /* The caller watches `done` without the lock and may return, ending j,
     * as soon as the last piece counts: j is not touched after that. */
    if (atomic_fetch_add_explicit(&j->done, 1, memory_order_release) + 1 == parts)
        pthread_cond_broadcast(&p->joined);
}

/* The run the calling worker is in (set around it): the pieces a behind
 * task's run forks are behind work, and their length is remembered. */
static _Thread_local struct {
    struct pool_task *task; /* NULL: not in a run */
    bool is_behind;
    int64_t longest; /* the longest piece it forked so far */
    int64_t waited;  /* ns it waited for its pieces on other workers */
} running;

/* Whether a worker beyond the behind tasks' share may spend ns on a
 * behind run's piece: no task on time falls due before it would end. An
 * unknown length (0) may not. Lock held. */
static bool is_clear_for(const struct pool *p, int64_t ns)
{
    const struct queue *on = &p->queue[ON_TIME];
    return ns > 0 && (on->count == 0 || on->at[0]->deadline_ns > clock_mono_ns() + ns);
}

/* Whether a free worker may take a piece of job j now (lock held): a
 * piece takes as long as the longest of the job's so far, or of its
 * task's last run. */
static bool may_take(const struct pool *p, const struct job *j)
{
    int64_t piece = j->longest_ns > j->last_run_ns ? j->longest_ns : j->last_run_ns;
    return !j->is_behind || may_do_behind(p) || is_clear_for(p, piece);
}

void pool_fork(struct pool *p, void (*fn)(void *arg, unsigned part), void *arg, unsigned parts)
{
    if (parts == 0)
        return;
    struct job j = {.fn = fn,
                    .arg = arg,
                    .parts = parts,
                    .is_behind = running.task && running.is_behind,
                    .last_run_ns = running.task ? running.task->piece_ns : 0};
    pthread_mutex_lock(&p->lock);
    if (parts > 1 && (!j.is_behind || may_do_behind(p) || j.last_run_ns > 0)) {
        j.next = p->jobs;
        p->jobs = &j;
        atomic_store_explicit(&p->has_jobs, 1, memory_order_release);
        pthread_cond_broadcast(&p->due); /* idle workers: a piece each */
        pthread_cond_broadcast(&p->spare);
    }
    while (j.taken < j.parts)
        run_piece(p, &j, 0);
    int64_t wait_from = clock_mono_ns();
    if (atomic_load_explicit(&j.done, memory_order_acquire) < j.parts) {
        /* A worker is finishing the last pieces: watch a moment, as a
         * sleeping caller would take long to wake. */
        pthread_mutex_unlock(&p->lock);
        watch(&j.done, j.parts);
        pthread_mutex_lock(&p->lock);
    }
    while (atomic_load_explicit(&j.done, memory_order_acquire) < j.parts)
        pthread_cond_wait(&p->joined, &p->lock);
    if (j.longest_ns > running.longest)
        running.longest = j.longest_ns;
    running.waited += clock_mono_ns() - wait_from;
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

/* The deadline of a task a free worker may run has come (lock held). */
static bool is_task_due(const struct pool *p)
{
    const struct pool_task *t = next_task(p);
    return t && t->deadline_ns <= clock_mono_ns();
}

/* The first job with pieces left that a free worker may take a piece of,
 * or NULL (lock held). */
static struct job *next_job(const struct pool *p)
{
    for (struct job *j = p->jobs; j; j = j->next)
        if (may_take(p, j))
            return j;
    return NULL;
}

/* Runs t, due, outside the lock (held on entry and on return), and puts it
 * back with its next deadline: one period (or its pace) after the last,
 * or from the run's end if it overran. */
static void run_task(struct pool *p, struct pool_task *t, int64_t now)
{
    heap_take(p, t);
    unpoke(p, t); /* the run takes what the poke was for */
    t->state = T_RUNNING;
    bool behind = t->is_behind;
    p->behind_busy += behind;
    if (has_queued(p) && !p->has_timer)
        pthread_cond_signal(&p->spare); /* the next deadline needs a timer */
    pthread_mutex_unlock(&p->lock);

    struct pool_time at = {.now_ns = now,
                           .late_ns = now - t->deadline_ns + t->carry_ns,
                           .wall_us = clock_wall_us(),
                           .last_ns = t->last_ns,
                           .last_work_ns = t->last_work_ns,
                           .pool = p};
    running.task = t;
    running.is_behind = behind;
    running.longest = 0;
    running.waited = 0;
    int64_t cpu = clock_thread_ns();
    t->run(t->arg, &at);
    cpu = clock_thread_ns() - cpu;
    t->piece_ns = running.longest;
    running.task = NULL;
    int64_t end = clock_mono_ns();
    metrics_tick((uint64_t)(end - now));

    pthread_mutex_lock(&p->lock);
    p->behind_busy -= behind;
    if (t->is_behind != behind) /* pool_pace changed it */
        p->behind = t->is_behind ? p->behind + 1 : p->behind - 1;
    t->last_ns = end - now;
    t->last_work_ns = cpu + running.waited < t->last_ns ? cpu + running.waited : t->last_ns;
    t->deadline_ns += t->pace_ns > 0 ? t->pace_ns : t->period_ns;
    t->carry_ns = 0;
    if (end > t->deadline_ns) {
        /* Late: count it and start again from now instead of bursting
         * to catch up; the next run reports how late it really is. */
        atomic_fetch_add_explicit(&g_metrics.tick_overruns, 1, memory_order_relaxed);
        t->carry_ns = end - t->deadline_ns;
        t->deadline_ns = end;
    }
    put_back(p, t);
    if (behind)
        wake_one(p); /* a worker for behind work is free again */
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
        struct job *j = p->jobs && !is_due ? next_job(p) : NULL;
        if (j) {
            run_piece(p, j, j->is_behind);
            if (!p->jobs)
                await_next_job(p);
            continue;
        }
        struct pool_task *t = next_task(p);
        if (!t) {
            pthread_cond_wait(&p->spare, &p->lock);
            continue;
        }
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
        run_task(p, t, now);
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
    p->size = workers; /* before any worker reads it */
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
            *err = "cannot start the tick threads";
            pool_destroy(p);
            return NULL;
        }
        p->nworkers++;
    }
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
    int ok = p->tasks < POOL_TASKS_MAX; /* running ones included: each comes back */
    if (ok) {
        t->deadline_ns = clock_mono_ns();
        t->carry_ns = 0;
        t->last_ns = 0;
        t->last_work_ns = 0;
        t->piece_ns = 0;
        t->pace_ns = 0;
        t->is_behind = false;
        t->is_poked = false;
        t->poked_next = NULL;
        p->tasks++;
        heap_push(p, t, false);
    }
    pthread_mutex_unlock(&p->lock);
    return ok ? 0 : PROTO_E_CAPACITY;
}

void pool_remove(struct pool *p, struct pool_task *t)
{
    pthread_mutex_lock(&p->lock);
    bool is_added = t->state == T_QUEUED || t->state == T_RUNNING; /* by this call's count */
    if (t->state == T_QUEUED) {
        heap_take(p, t);
        unpoke(p, t);
        t->state = T_IDLE;
    } else if (t->state == T_RUNNING) {
        t->state = T_REMOVING;
    }
    while (t->state == T_REMOVING)
        pthread_cond_wait(&p->idle, &p->lock);
    if (is_added) {
        p->tasks--;
        p->behind -= t->is_behind;
        wake_one(p); /* the last task on time gone: behind ones may take every worker */
    }
    pthread_mutex_unlock(&p->lock);
}

void pool_pace(struct pool_task *t, int64_t period_ns, bool behind)
{
    t->pace_ns = period_ns > 0 ? period_ns : 0;
    t->is_behind = behind;
}
