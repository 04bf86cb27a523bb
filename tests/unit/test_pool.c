/*
 * test_pool — the tick threads: tasks run on their period, a slow task
 * does not hold back a fast one while another worker is free, a task never
 * runs on two workers at once, removal waits for a run in progress, and
 * each run is told when it started and how late, against deadlines that
 * advance by one period (or start again after an overrun), and how long
 * its previous run took. A poke runs between two runs at once, never beside
 * one, without moving the deadline or counting as a run; pokes made while
 * the task cannot take one make one call, and a removed task's is dropped.
 * pool_fork runs every piece exactly once, on idle
 * workers beside the caller, or on the caller alone when no worker is free.
 * A run that paces its task moves its next deadline by the pace; tasks
 * behind share all workers but one while a task on time is added (their
 * runs and their pieces), and all of them when none is; the worker left
 * takes a behind run's pieces only when no task on time falls due before
 * they would end.
 */
#define _POSIX_C_SOURCE 200809L

#include "pool.h"

#include "clock.h"
#include "metrics.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#define RECORDED 64

struct probe {
    struct pool_task task;
    atomic_int runs, inside, overlap;
    atomic_int pokes;
    _Atomic int64_t poked_at_ns; /* when the last poke began */
    _Atomic int64_t run_end_ns;  /* when the last run ended */
    int64_t busy_ns;             /* how long each run takes */
    bool spins;                  /* busy_ns of CPU time, not asleep */
    int64_t pace_ns;             /* each run paces its task so (pool_pace), with: */
    bool behind;
    /* Written by its runs only, read once the probe is removed. */
    int late_runs;        /* runs that started over 20 ms late ... */
    int64_t late_from_ns; /* ... at or after this time */
    int recorded;
    struct pool_time times[RECORDED]; /* what the first runs were told */
    int64_t mono_ns[RECORDED];        /* the clocks as each of them began */
    int64_t wall_us[RECORDED];
};

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Runs of tasks behind under way now, and the most there were at once
 * (a task's first run is not behind yet: not counted). */
static atomic_int behind_inside, behind_most;

static void count_behind(int delta)
{
    int now = atomic_fetch_add(&behind_inside, delta) + delta;
    for (int most = atomic_load(&behind_most); now > most;)
        if (atomic_compare_exchange_weak(&behind_most, &most, now))
            break;
}

static void probe_run(void *arg, const struct pool_time *t)
{
    struct probe *p = arg;
    bool is_behind = p->behind && atomic_load(&p->runs) > 0;
    if (is_behind)
        count_behind(1);
    if (p->behind || p->pace_ns)
        pool_pace(&p->task, p->pace_ns, p->behind);
    if (p->recorded < RECORDED) {
        p->mono_ns[p->recorded] = clock_mono_ns();
        p->wall_us[p->recorded] = clock_wall_us();
        p->times[p->recorded++] = *t;
    }
    if (atomic_fetch_add(&p->inside, 1) != 0)
        atomic_store(&p->overlap, 1);
    if (t->late_ns > 20000000 && t->now_ns >= p->late_from_ns)
        p->late_runs++;
    if (p->busy_ns && p->spins)
        for (int64_t from = clock_thread_ns(); clock_thread_ns() - from < p->busy_ns;)
            ;
    else if (p->busy_ns)
        sleep_ns(p->busy_ns);
    if (is_behind)
        count_behind(-1);
    atomic_fetch_add(&p->runs, 1);
    atomic_store(&p->run_end_ns, clock_mono_ns());
    atomic_fetch_sub(&p->inside, 1);
}

static void probe_poke(void *arg)
{
    struct probe *p = arg;
    if (atomic_fetch_add(&p->inside, 1) != 0)
        atomic_store(&p->overlap, 1);
    atomic_store(&p->poked_at_ns, clock_mono_ns());
    atomic_fetch_add(&p->pokes, 1);
    atomic_fetch_sub(&p->inside, 1);
}

static void probe_init(struct probe *p, int64_t period_ns, int64_t busy_ns)
{
    *p = (struct probe){.busy_ns = busy_ns};
    p->task =
        (struct pool_task){.run = probe_run, .poke = probe_poke, .arg = p, .period_ns = period_ns};
}

/* Waits up to 2 s for *v to reach n. */
static int wait_for(atomic_int *v, int n)
{
    for (int i = 0; i < 2000 && atomic_load(v) < n; i++)
        sleep_ns(1000000);
    return atomic_load(v);
}

static void runs_on_its_period(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    assert_int_equal(pool_workers(pool), 2);
    struct probe p;
    probe_init(&p, 10000000, 0); /* 100 Hz */
    assert_int_equal(pool_add(pool, &p.task), 0);
    sleep_ns(500000000);
    pool_remove(pool, &p.task);
    int runs = atomic_load(&p.runs);
    assert_in_range(runs, 40, 52); /* 0.5 s at 100 Hz, first run at once */
    sleep_ns(50000000);
    assert_int_equal(atomic_load(&p.runs), runs); /* removed: runs no more */
    pool_destroy(pool);
}

static void a_slow_task_does_not_delay_a_fast_one(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe slow, fast;
    probe_init(&slow, 50000000, 40000000); /* busy 40 ms of every 50 ms */
    probe_init(&fast, 10000000, 0);
    assert_int_equal(pool_add(pool, &slow.task), 0);
    assert_int_equal(pool_add(pool, &fast.task), 0);
    sleep_ns(600000000);
    pool_remove(pool, &fast.task);
    pool_remove(pool, &slow.task);
    assert_in_range(atomic_load(&fast.runs), 50, 66); /* 0.6 s at 100 Hz */
    /* Queued behind the slow task, most fast runs would start up to 40 ms
     * late; with a second worker free they start on time (a couple of
     * scheduling hiccups on a busy machine are tolerated). */
    assert_true(fast.late_runs <= 3);
    assert_int_equal(atomic_load(&slow.overlap), 0);
    assert_int_equal(atomic_load(&fast.overlap), 0);
    pool_destroy(pool);
}

static void a_task_never_runs_twice_at_once(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(4, &err);
    assert_non_null(pool);
    struct probe p;
    probe_init(&p, 1000000, 3000000); /* always late: runs back to back */
    assert_int_equal(pool_add(pool, &p.task), 0);
    sleep_ns(100000000);
    pool_remove(pool, &p.task);
    assert_int_equal(atomic_load(&p.overlap), 0);
    assert_true(atomic_load(&p.runs) >= 10);
    pool_destroy(pool);
}

static void removal_waits_for_a_run_in_progress(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(1, &err);
    assert_non_null(pool);
    struct probe p;
    probe_init(&p, 1000000000, 100000000); /* one run of 100 ms, then 1 s idle */
    assert_int_equal(pool_add(pool, &p.task), 0);
    sleep_ns(20000000); /* the run is under way */
    pool_remove(pool, &p.task);
    assert_int_equal(atomic_load(&p.inside), 0);
    assert_int_equal(atomic_load(&p.runs), 1);
    pool_remove(pool, &p.task); /* idempotent */
    pool_destroy(pool);
}

/* Runs timed in the tick-duration histogram. */
static uint64_t histogram_count(void)
{
    uint64_t n = 0;
    for (int b = 0; b <= METRICS_BUCKETS; b++)
        n += atomic_load(&g_metrics.tick.bucket[b]);
    return n;
}

static void each_run_is_told_its_start_and_a_deadline_one_period_after_the_last(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(1, &err);
    assert_non_null(pool);
    struct probe p;
    probe_init(&p, 5000000, 0); /* 200 Hz */
    uint64_t timed = histogram_count();
    uint64_t overruns = atomic_load(&g_metrics.tick_overruns);
    int64_t before = clock_mono_ns();
    assert_int_equal(pool_add(pool, &p.task), 0);
    int64_t after = clock_mono_ns();
    sleep_ns(100000000);
    pool_remove(pool, &p.task);
    int runs = atomic_load(&p.runs);
    assert_true(runs >= 2 && p.recorded >= 2);
    /* A run's deadline is now - late. The first is the moment the task was
     * added; each next one is exactly one period after the last, unless the
     * run before the last overran: the pool then starts again from where
     * that run ended (at or before the last run started), so the step is
     * longer, and each such step has an overrun counted. */
    int64_t period = p.task.period_ns, first = p.times[0].now_ns - p.times[0].late_ns;
    uint64_t rebased = 0;
    assert_true(first >= before && first <= after);
    for (int k = 0; k < p.recorded; k++) {
        const struct pool_time *t = &p.times[k];
        assert_true(t->late_ns >= 0);
        assert_true(t->now_ns <= p.mono_ns[k]); /* read by the worker, before the run */
        assert_true(llabs(p.wall_us[k] - t->wall_us) < 1000000); /* the wall clock may step */
        if (k + 1 == p.recorded)
            break;
        int64_t deadline = t->now_ns - t->late_ns;
        int64_t next = p.times[k + 1].now_ns - p.times[k + 1].late_ns;
        assert_true(next == deadline + period ||
                    (next > deadline + period && next <= t->now_ns + period));
        rebased += next != deadline + period;
    }
    assert_true(rebased <= atomic_load(&g_metrics.tick_overruns) - overruns);
    /* Each run after the first is told its previous run's duration. */
    assert_int_equal(p.times[0].last_ns, 0);
    for (int k = 1; k < p.recorded; k++) {
        assert_true(p.times[k].last_ns > 0);
        assert_true(p.times[k].last_ns <= p.times[k].now_ns - p.times[k - 1].now_ns);
        assert_ptr_equal(p.times[k].pool, pool);
    }
    /* Every run is timed in the tick-duration histogram. */
    assert_int_equal(histogram_count() - timed, (uint64_t)runs);
    pool_destroy(pool);
}

/* A run is told what of its last run was its work (CPU time), not time
 * its thread spent off the CPU: a run asleep 10 ms worked next to nothing,
 * one spinning 10 ms of CPU time worked all of it. */
static void each_run_is_told_the_work_of_its_last_run_apart_from_its_length(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe asleep, spinning;
    probe_init(&asleep, 30000000, 10000000);
    probe_init(&spinning, 30000000, 10000000);
    spinning.spins = true;
    assert_int_equal(pool_add(pool, &asleep.task), 0);
    assert_int_equal(pool_add(pool, &spinning.task), 0);
    wait_for(&asleep.runs, 4);
    wait_for(&spinning.runs, 4);
    pool_remove(pool, &asleep.task);
    pool_remove(pool, &spinning.task);
    assert_true(asleep.recorded >= 3 && spinning.recorded >= 3);
    for (int k = 1; k < asleep.recorded; k++) {
        const struct pool_time *t = &asleep.times[k];
        assert_true(t->last_ns >= 10000000);
        assert_true(t->last_work_ns >= 0 && t->last_work_ns < 3000000);
    }
    for (int k = 1; k < spinning.recorded; k++) {
        const struct pool_time *t = &spinning.times[k];
        assert_true(t->last_work_ns >= 10000000 && t->last_work_ns <= t->last_ns);
    }
    pool_destroy(pool);
}

/* ---- pool_poke ---- */

static void a_poke_runs_at_once_between_runs_and_keeps_the_deadline(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe p;
    probe_init(&p, 400000000, 0); /* a run every 400 ms */
    uint64_t timed = histogram_count();
    assert_int_equal(pool_add(pool, &p.task), 0);
    assert_int_equal(wait_for(&p.runs, 1), 1);
    for (int k = 1; k <= 3; k++) { /* each poke long before the next run */
        sleep_ns(20000000);
        int64_t at = clock_mono_ns();
        pool_poke(pool, &p.task);
        assert_int_equal(wait_for(&p.pokes, k), k);
        assert_true(atomic_load(&p.poked_at_ns) - at < 100000000); /* not at the next run */
        assert_int_equal(atomic_load(&p.runs), 1);
    }
    assert_int_equal(wait_for(&p.runs, 2), 2);
    pool_remove(pool, &p.task);
    /* The second run came one period after the first, as without pokes,
     * and only runs were timed as ticks. */
    int64_t first = p.times[0].now_ns - p.times[0].late_ns;
    assert_true(p.times[1].now_ns - p.times[1].late_ns == first + p.task.period_ns);
    assert_int_equal(histogram_count() - timed, 2);
    assert_int_equal(atomic_load(&p.overlap), 0);
    pool_destroy(pool);
}

static void a_running_task_takes_its_poke_after_the_run_once(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe p;
    probe_init(&p, 1000000000, 100000000); /* one run of 100 ms, then 1 s idle */
    assert_int_equal(pool_add(pool, &p.task), 0);
    sleep_ns(20000000); /* the run is under way */
    for (int k = 0; k < 5; k++)
        pool_poke(pool, &p.task);
    assert_int_equal(wait_for(&p.pokes, 1), 1);
    sleep_ns(50000000);
    assert_int_equal(atomic_load(&p.pokes), 1); /* five pokes, one call */
    assert_true(atomic_load(&p.poked_at_ns) >= atomic_load(&p.run_end_ns));
    assert_int_equal(atomic_load(&p.overlap), 0);
    pool_remove(pool, &p.task);
    pool_destroy(pool);
}

static void a_removed_task_drops_the_poke_it_did_not_take(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(1, &err);
    assert_non_null(pool);
    struct probe busy, idle;
    probe_init(&busy, 1000000000, 150000000); /* holds the only worker 150 ms */
    probe_init(&idle, 1000000000, 0);
    assert_int_equal(pool_add(pool, &idle.task), 0);
    assert_int_equal(wait_for(&idle.runs, 1), 1);
    assert_int_equal(pool_add(pool, &busy.task), 0);
    sleep_ns(30000000); /* busy's run is under way */
    pool_poke(pool, &idle.task);
    pool_poke(pool, &busy.task);
    pool_remove(pool, &idle.task);
    assert_int_equal(wait_for(&busy.pokes, 1), 1); /* the worker is free again */
    sleep_ns(20000000);
    assert_int_equal(atomic_load(&idle.pokes), 0);
    pool_poke(pool, &idle.task); /* not added: nothing */
    sleep_ns(20000000);
    assert_int_equal(atomic_load(&idle.pokes), 0);
    pool_remove(pool, &busy.task);
    pool_destroy(pool);
}

/* ---- pool_fork ---- */

#define PIECES 64

struct pieces {
    atomic_int calls[PIECES]; /* calls per piece */
    int value[PIECES];        /* written by each piece, read by the caller after the fork */
    atomic_int started;       /* bit k: piece k has started */
    atomic_int saw_other;     /* piece 0 saw piece 1 start while it ran */
    int wait_for_other;       /* piece 0 waits (up to wait_ms, 0: 10 s) for piece 1 to start */
    int wait_ms;
    int64_t busy_ns;      /* how long each piece takes */
    pthread_t caller;     /* the thread that forked them ... */
    atomic_int elsewhere; /* ... and whether a piece ran on another */
};

static void piece(void *arg, unsigned part)
{
    struct pieces *ps = arg;
    atomic_fetch_or(&ps->started, 1 << (part % 31));
    if (part == 0 && ps->wait_for_other) {
        for (int i = 0; i < (ps->wait_ms ? ps->wait_ms : 10000) && !(atomic_load(&ps->started) & 2);
             i++)
            sleep_ns(1000000);
        atomic_store(&ps->saw_other, (atomic_load(&ps->started) & 2) != 0);
    }
    if (ps->busy_ns)
        sleep_ns(ps->busy_ns);
    if (!pthread_equal(pthread_self(), ps->caller))
        atomic_store(&ps->elsewhere, 1);
    atomic_fetch_add(&ps->calls[part], 1);
    ps->value[part] = (int)part * 3 + 1;
}

static void assert_each_piece_ran_once(struct pieces *ps, unsigned parts)
{
    for (unsigned k = 0; k < PIECES; k++) {
        assert_int_equal(atomic_load(&ps->calls[k]), k < parts ? 1 : 0);
        assert_int_equal(ps->value[k], k < parts ? (int)k * 3 + 1 : 0);
    }
}

static void a_fork_runs_every_piece_once_and_returns_when_all_are_done(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(3, &err);
    assert_non_null(pool);
    for (unsigned parts = 0; parts <= PIECES; parts += 7) {
        static struct pieces ps;
        ps = (struct pieces){0};
        pool_fork(pool, piece, &ps, parts);
        assert_each_piece_ran_once(&ps, parts);
    }
    pool_destroy(pool);
}

static void an_idle_worker_takes_pieces_beside_the_caller(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(1, &err);
    assert_non_null(pool);
    static struct pieces ps;
    ps = (struct pieces){.wait_for_other = 1};
    /* The caller takes piece 0 and waits in it until piece 1 starts: only
     * the worker can start it. */
    pool_fork(pool, piece, &ps, 2);
    assert_int_equal(atomic_load(&ps.saw_other), 1);
    assert_each_piece_ran_once(&ps, 2);
    pool_destroy(pool);
}

static void without_free_workers_the_caller_runs_every_piece(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    pool_stop(pool); /* no workers left */
    static struct pieces ps;
    ps = (struct pieces){0};
    pool_fork(pool, piece, &ps, 9);
    assert_each_piece_ran_once(&ps, 9);
    pool_destroy(pool);
}

/* A task that forks `parts` pieces from inside its run number fork_at
 * (0: the first; -1: every run but the first), as a room's tick does; `behind`: each run
 * says it is behind, as a dilated room's tick does. ok: every fork ran
 * each piece once. */
struct forking {
    struct pool_task task;
    atomic_int runs;
    struct pieces ps;
    unsigned parts;
    int fork_at;
    bool behind;
    int ok;
};

static void forking_run(void *arg, const struct pool_time *t)
{
    struct forking *f = arg;
    if (f->behind)
        pool_pace(&f->task, 0, true);
    int run = atomic_load(&f->runs);
    if (run == f->fork_at || (f->fork_at < 0 && run > 0)) {
        bool first = f->fork_at >= 0 || run == 1;
        for (unsigned k = 0; k < f->parts; k++)
            atomic_store(&f->ps.calls[k], 0);
        f->ps.caller = pthread_self();
        pool_fork(t->pool, piece, &f->ps, f->parts);
        f->ok = first ? 1 : f->ok;
        for (unsigned k = 0; k < f->parts; k++)
            f->ok &= atomic_load(&f->ps.calls[k]) == 1;
    }
    atomic_fetch_add(&f->runs, 1);
}

static void a_run_can_fork_its_work_over_the_other_workers(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    static struct forking f;
    f = (struct forking){.ps.wait_for_other = 1, .parts = 5};
    f.task = (struct pool_task){.run = forking_run, .arg = &f, .period_ns = 5000000};
    assert_int_equal(pool_add(pool, &f.task), 0);
    for (int i = 0; i < 10000 && atomic_load(&f.runs) < 3; i++)
        sleep_ns(1000000);
    pool_remove(pool, &f.task);
    assert_true(atomic_load(&f.runs) >= 3); /* and the task went on ticking */
    assert_int_equal(f.ok, 1);
    assert_int_equal(atomic_load(&f.ps.saw_other), 1);
    pool_destroy(pool);
}

/* ---- pool_pace ---- */

static void a_paced_task_runs_its_pace_apart(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe p;
    probe_init(&p, 5000000, 0);
    p.pace_ns = 40000000;
    assert_int_equal(pool_add(pool, &p.task), 0);
    sleep_ns(300000000);
    pool_remove(pool, &p.task);
    assert_true(p.recorded >= 4 && p.recorded <= 9); /* 300 ms at 25 Hz, not 200 Hz */
    for (int k = 0; k + 1 < p.recorded; k++) {       /* as with periods (above), paces apart */
        int64_t deadline = p.times[k].now_ns - p.times[k].late_ns;
        int64_t next = p.times[k + 1].now_ns - p.times[k + 1].late_ns;
        assert_true(next == deadline + p.pace_ns ||
                    (next > deadline + p.pace_ns && next <= p.times[k].now_ns + p.pace_ns));
    }
    pool_destroy(pool);
}

static void tasks_behind_leave_a_worker_to_the_tasks_on_time(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe slow[2], fast;
    for (int k = 0; k < 2; k++) {
        probe_init(&slow[k], 10000000, 30000000); /* 30 ms runs every 10 ms: behind */
        slow[k].behind = true;
    }
    probe_init(&fast, 10000000, 0);
    atomic_store(&behind_most, 0);
    /* The slow tasks' first runs, before they say they are behind, take
     * both workers at once: the fast task's first runs are late (and a few
     * lost) for that; its lateness counts from 100 ms on. */
    fast.late_from_ns = clock_mono_ns() + 100000000;
    assert_int_equal(pool_add(pool, &slow[0].task), 0);
    assert_int_equal(pool_add(pool, &slow[1].task), 0);
    assert_int_equal(pool_add(pool, &fast.task), 0);
    sleep_ns(600000000);
    pool_remove(pool, &slow[0].task); /* first: without fast, both would take a worker */
    pool_remove(pool, &slow[1].task);
    pool_remove(pool, &fast.task);
    /* With both workers on the slow tasks the fast one would start up to
     * 30 ms late, often; one worker is kept for it. */
    assert_in_range(atomic_load(&fast.runs), 47, 66);
    assert_true(fast.late_runs <= 3);
    assert_int_equal(atomic_load(&behind_most), 1);
    /* They took turns on their worker, neither starved. */
    assert_true(atomic_load(&slow[0].runs) >= 4 && atomic_load(&slow[1].runs) >= 4);
    pool_destroy(pool);
}

static void tasks_behind_take_every_worker_when_none_is_on_time(void **state)
{
    (void)state;
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    struct probe slow[2];
    for (int k = 0; k < 2; k++) {
        probe_init(&slow[k], 10000000, 30000000);
        slow[k].behind = true;
    }
    atomic_store(&behind_most, 0);
    assert_int_equal(pool_add(pool, &slow[0].task), 0);
    assert_int_equal(pool_add(pool, &slow[1].task), 0);
    sleep_ns(300000000);
    pool_remove(pool, &slow[0].task);
    pool_remove(pool, &slow[1].task);
    assert_int_equal(atomic_load(&behind_most), 2);
    pool_destroy(pool);
}

/* A task behind forking two pieces of 3 ms on each run (but its first,
 * before it is behind), beside a task on time of the given period, on two
 * workers, until it ran 12 times: whether any piece ran on the other
 * worker. */
static int behind_pieces_elsewhere(int64_t period_ns)
{
    const char *err = NULL;
    struct pool *pool = pool_create(2, &err);
    assert_non_null(pool);
    static struct forking f;
    f = (struct forking){.ps.busy_ns = 3000000, .parts = 2, .fork_at = -1, .behind = true};
    f.task = (struct pool_task){.run = forking_run, .arg = &f, .period_ns = 5000000};
    struct probe fast;
    probe_init(&fast, period_ns, 0);
    assert_int_equal(pool_add(pool, &fast.task), 0);
    assert_int_equal(pool_add(pool, &f.task), 0);
    for (int i = 0; i < 10000 && atomic_load(&f.runs) < 12; i++)
        sleep_ns(1000000);
    pool_remove(pool, &f.task);
    pool_remove(pool, &fast.task);
    assert_int_equal(f.ok, 1);
    pool_destroy(pool);
    return atomic_load(&f.ps.elsewhere);
}

static void
a_behind_runs_pieces_stay_its_own_when_a_task_on_time_is_due_before_they_end(void **state)
{
    (void)state;
    assert_int_equal(behind_pieces_elsewhere(2000000), 0); /* due every 2 ms */
}

static void
a_behind_runs_pieces_go_to_the_worker_left_when_none_is_due_before_they_end(void **state)
{
    (void)state;
    /* From its second run on (the first measures the pieces) the idle
     * worker takes them: the task on time is due a second later. */
    assert_int_equal(behind_pieces_elsewhere(1000000000), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_on_its_period),
        cmocka_unit_test(a_slow_task_does_not_delay_a_fast_one),
        cmocka_unit_test(a_task_never_runs_twice_at_once),
        cmocka_unit_test(removal_waits_for_a_run_in_progress),
        cmocka_unit_test(each_run_is_told_its_start_and_a_deadline_one_period_after_the_last),
        cmocka_unit_test(each_run_is_told_the_work_of_its_last_run_apart_from_its_length),
        cmocka_unit_test(a_poke_runs_at_once_between_runs_and_keeps_the_deadline),
        cmocka_unit_test(a_running_task_takes_its_poke_after_the_run_once),
        cmocka_unit_test(a_removed_task_drops_the_poke_it_did_not_take),
        cmocka_unit_test(a_fork_runs_every_piece_once_and_returns_when_all_are_done),
        cmocka_unit_test(an_idle_worker_takes_pieces_beside_the_caller),
        cmocka_unit_test(without_free_workers_the_caller_runs_every_piece),
        cmocka_unit_test(a_run_can_fork_its_work_over_the_other_workers),
        cmocka_unit_test(a_paced_task_runs_its_pace_apart),
        cmocka_unit_test(tasks_behind_leave_a_worker_to_the_tasks_on_time),
        cmocka_unit_test(tasks_behind_take_every_worker_when_none_is_on_time),
        cmocka_unit_test(
            a_behind_runs_pieces_stay_its_own_when_a_task_on_time_is_due_before_they_end),
        cmocka_unit_test(
            a_behind_runs_pieces_go_to_the_worker_left_when_none_is_due_before_they_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
