/*
 * test_measure — the measuring thread: a frame offered is copied at once
 * and measured exactly as flockstats measures it in place; an offer while
 * the thread is busy or resting after a measure is declined; after
 * measure_forget() no callback of that client runs.
 */
#define _POSIX_C_SOURCE 200809L

#include "measure.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "splitmix.h"

#define N 500

struct probe {
    sem_t measured; /* posted after each callback */
    sem_t release;  /* the callback waits for it when hold is set */
    int hold;
    int calls;
    uint64_t tick;
    struct flockstats_result res;
};

static void done(void *arg, const struct flockstats_result *res, uint64_t tick, double ms)
{
    struct probe *p = arg;
    assert_true(ms >= 0);
    p->res = *res;
    p->tick = tick;
    __atomic_add_fetch(&p->calls, 1, __ATOMIC_RELEASE);
    if (p->hold)
        sem_wait(&p->release);
    sem_post(&p->measured);
}

static float x[N], y[N], vx[N], vy[N];

static double unit(uint64_t *s)
{
    return (double)(splitmix_next(s) >> 11) * 0x1.0p-53;
}

/* n boids scattered over a w x h torus into the arrays given. */
static struct flockstats_frame scatter(uint64_t seed, uint32_t n, float w, float h, float *bx,
                                       float *by, float *bvx, float *bvy)
{
    uint64_t s = seed;
    for (uint32_t i = 0; i < n; i++) {
        bx[i] = (float)(unit(&s) * w);
        by[i] = (float)(unit(&s) * h);
        bvx[i] = (float)(unit(&s) * 2 - 1);
        bvy[i] = (float)(unit(&s) * 2 - 1);
    }
    return (struct flockstats_frame){.count = n,
                                     .width = w,
                                     .height = h,
                                     .wrap = 1,
                                     .radius = 50,
                                     .x = bx,
                                     .y = by,
                                     .vx = bvx,
                                     .vy = bvy};
}

static struct flockstats_frame frame_of_random_boids(uint64_t seed)
{
    return scatter(seed, N, 400, 300, x, y, vx, vy);
}

static void probe_init(struct probe *p)
{
    memset(p, 0, sizeof *p);
    sem_init(&p->measured, 0, 0);
    sem_init(&p->release, 0, 0);
}

static void an_offered_frame_is_measured_as_flockstats_measures_it(void **state)
{
    (void)state;
    const char *err = NULL;
    struct measure *m = measure_create(&err);
    assert_non_null(m);
    struct probe p;
    probe_init(&p);
    struct measure_client c = {.done = done, .arg = &p};
    struct flockstats_frame f = frame_of_random_boids(1);
    assert_int_equal(measure_offer(m, &c, &f, 42), 1);
    memset(x, 0, sizeof x); /* the copy was taken: changing the source changes nothing */
    sem_wait(&p.measured);
    f = frame_of_random_boids(1);
    struct flockstats *s = flockstats_create(N, &err);
    struct flockstats_result want;
    assert_int_equal(flockstats_measure(s, &f, &want), 0);
    assert_int_equal(p.calls, 1);
    assert_true(p.tick == 42);
    assert_memory_equal(&p.res, &want, sizeof want);
    flockstats_destroy(s);
    measure_forget(m, &c);
    measure_destroy(m);
}

static void a_busy_thread_declines_and_forget_waits_for_the_callback(void **state)
{
    (void)state;
    const char *err = NULL;
    struct measure *m = measure_create(&err);
    struct probe a, b;
    probe_init(&a);
    probe_init(&b);
    a.hold = 1;
    struct measure_client ca = {.done = done, .arg = &a}, cb = {.done = done, .arg = &b};
    struct flockstats_frame f = frame_of_random_boids(2);
    assert_int_equal(measure_offer(m, &ca, &f, 1), 1);
    while (__atomic_load_n(&a.calls, __ATOMIC_ACQUIRE) == 0) /* a's callback holds the thread */
        sched_yield();
    assert_int_equal(measure_offer(m, &cb, &f, 2), 0);
    sem_post(&a.release);
    sem_wait(&a.measured);
    measure_forget(m, &ca); /* returns once a's measure is over */
    int taken = 0;
    for (int k = 0; k < 100000 && !taken; k++) {
        taken = measure_offer(m, &cb, &f, 3);
        if (!taken)
            sched_yield();
    }
    assert_int_equal(taken, 1);
    measure_forget(m, &cb); /* drops it, or waits for it */
    assert_true(b.calls <= 1);
    int calls = b.calls;
    measure_destroy(m);
    assert_int_equal(b.calls, calls); /* nothing of b ran after the forget */
    assert_int_equal(a.calls, 1);
}

static void a_frame_without_arrays_is_refused(void **state)
{
    (void)state;
    const char *err = NULL;
    struct measure *m = measure_create(&err);
    struct probe p;
    probe_init(&p);
    struct measure_client c = {.done = done, .arg = &p};
    struct flockstats_frame f = frame_of_random_boids(3);
    f.vy = NULL;
    assert_int_equal(measure_offer(m, &c, &f, 1), SIM_EINVAL);
    measure_destroy(m);
    assert_int_equal(p.calls, 0);
}

/* After a measure the thread declines offers for nine times the CPU time
 * it took (a tenth of a core at most), then takes them again. */
static void the_thread_rests_after_a_measure(void **state)
{
    (void)state;
    enum { BIG = 50000 };
    float *big = calloc(4 * (size_t)BIG, sizeof *big);
    assert_non_null(big);
    const char *err = NULL;
    struct measure *m = measure_create(&err);
    struct probe p;
    probe_init(&p);
    struct measure_client c = {.done = done, .arg = &p};
    struct flockstats_frame f =
        scatter(5, BIG, 4000, 3000, big, big + BIG, big + 2 * BIG, big + 3 * BIG);
    assert_int_equal(measure_offer(m, &c, &f, 1), 1);
    sem_wait(&p.measured);
    measure_forget(m, &c); /* returns once the measure is over */
    assert_int_equal(measure_offer(m, &c, &f, 2), 0);
    int taken = 0;
    for (int k = 0; k < 60000 && !taken; k++) { /* up to a minute */
        taken = measure_offer(m, &c, &f, 3);
        if (!taken)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    assert_int_equal(taken, 1);
    sem_wait(&p.measured);
    assert_int_equal(p.calls, 2);
    assert_true(p.tick == 3);
    measure_forget(m, &c);
    measure_destroy(m);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_offered_frame_is_measured_as_flockstats_measures_it),
        cmocka_unit_test(a_busy_thread_declines_and_forget_waits_for_the_callback),
        cmocka_unit_test(a_frame_without_arrays_is_refused),
        cmocka_unit_test(the_thread_rests_after_a_measure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
