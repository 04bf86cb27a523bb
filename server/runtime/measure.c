/*
 * measure.c — the measuring thread and its one-frame mailbox (measure.h).
 *
 * `pending` is the client whose copy sits in the buffer; while it is set
 * offers are declined. `busy` says the thread is measuring it (the lock
 * released); measure_forget() waits for busy to clear, so a client's
 * callback never runs after its owner let go of it.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "measure.h"

#include "clock.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CAPACITY 1024u

/* Buffers for more boids than this (a copy of 256 KiB and measuring space
 * of about 0.5 MiB) are let go after each measure: a big flock is measured
 * a fraction of the time, and its buffers are mappings of their own that
 * freeing hands back. Smaller ones are kept for the next. */
#define KEEP_CAPACITY 16384u

/* The most of one core the measures take (measure.h): after a measure
 * that used c of CPU time, offers are declined for c x (1 / MEASURE_SHARE
 * - 1). */
#define MEASURE_SHARE 0.1

struct measure {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    bool stop, busy;
    int64_t rest_until_ns; /* offers are declined until then */
    struct measure_client *pending;
    uint64_t tick;
    struct flockstats_frame frame; /* points into the buffer below */
    float *x, *y, *vx, *vy;
    uint32_t cap;             /* boids the buffer holds */
    struct flockstats *stats; /* the measuring thread's only */
    uint32_t stats_cap;
};

/* Smallest power of two >= n, from MIN_CAPACITY up; 0 past the limit. */
static uint32_t grown(uint32_t n)
{
    uint32_t c = MIN_CAPACITY;
    while (c < n && c <= FLOCKSTATS_MAX_CAPACITY / 2)
        c *= 2;
    return c >= n ? c : 0;
}

/* The copy buffer holds at least n boids: 0 or SIM_ECAPACITY. Lock held,
 * thread not busy. */
static int reserve(struct measure *m, uint32_t n)
{
    if (n <= m->cap)
        return 0;
    uint32_t cap = grown(n);
    if (!cap)
        return SIM_ECAPACITY;
    float **arrays[] = {&m->x, &m->y, &m->vx, &m->vy};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        float *p = realloc(*arrays[i], (size_t)cap * sizeof *p);
        if (!p)
            return SIM_ECAPACITY; /* the arrays already grown stay grown */
        *arrays[i] = p;
    }
    m->cap = cap;
    return 0;
}

int measure_offer(struct measure *m, struct measure_client *c, const struct flockstats_frame *f,
                  uint64_t tick)
{
    if (f->count && (!f->x || !f->y || !f->vx || !f->vy))
        return SIM_EINVAL;
    pthread_mutex_lock(&m->lock);
    if (m->pending || m->stop || clock_mono_ns() < m->rest_until_ns) {
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    int rc = reserve(m, f->count);
    if (rc < 0) {
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    size_t bytes = (size_t)f->count * sizeof(float);
    if (bytes) {
        memcpy(m->x, f->x, bytes);
        memcpy(m->y, f->y, bytes);
        memcpy(m->vx, f->vx, bytes);
        memcpy(m->vy, f->vy, bytes);
    }
    m->frame = *f;
    m->frame.x = m->x;
    m->frame.y = m->y;
    m->frame.vx = m->vx;
    m->frame.vy = m->vy;
    m->frame.ux = m->vx; /* the copy is measured once: headings over velocities */
    m->frame.uy = m->vy;
    m->tick = tick;
    m->pending = c;
    pthread_cond_signal(&m->work);
    pthread_mutex_unlock(&m->lock);
    return 1;
}

/* The measuring thread at the idle scheduling class (true) or the normal
 * one. Best effort. */
static void set_idle(pthread_t thread, bool idle)
{
    struct sched_param sp = {.sched_priority = 0};
    (void)pthread_setschedparam(thread, idle ? SCHED_IDLE : SCHED_OTHER, &sp);
}

void measure_forget(struct measure *m, struct measure_client *c)
{
    pthread_mutex_lock(&m->lock);
    /* Waited for at the normal class: at the idle one, a busy machine
     * could starve the measure (and a room's close) for minutes. */
    if (m->pending == c && m->busy)
        set_idle(m->thread, false);
    while (m->pending == c && m->busy)
        pthread_cond_wait(&m->idle, &m->lock);
    if (m->pending == c)
        m->pending = NULL;
    pthread_mutex_unlock(&m->lock);
}

/* Measures the buffer into *out: 0 or a SIM_E* code. Measuring thread,
 * lock not held (busy keeps the buffer still). */
static int measure_buffer(struct measure *m, struct flockstats_result *out)
{
    uint32_t n = m->frame.count;
    if (n > m->stats_cap || !m->stats) {
        uint32_t cap = grown(n);
        if (!cap)
            return SIM_ECAPACITY;
        const char *err;
        struct flockstats *s = flockstats_create(cap, &err);
        if (!s)
            return SIM_ECAPACITY;
        flockstats_destroy(m->stats);
        m->stats = s;
        m->stats_cap = cap;
    }
    return flockstats_measure(m->stats, &m->frame, out);
}

/* Lets the copy and the measuring space go if they are big (lock held,
 * thread not busy): the next offer and measure allocate them again. */
static void release_big(struct measure *m)
{
    if (m->cap > KEEP_CAPACITY) {
        float **arrays[] = {&m->x, &m->y, &m->vx, &m->vy};
        for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
            free(*arrays[i]);
            *arrays[i] = NULL;
        }
        m->cap = 0;
    }
    if (m->stats_cap > KEEP_CAPACITY) {
        flockstats_destroy(m->stats);
        m->stats = NULL;
        m->stats_cap = 0;
    }
}

static void *run(void *arg)
{
    struct measure *m = arg;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->stop && !m->pending)
            pthread_cond_wait(&m->work, &m->lock);
        if (m->stop)
            break;
        struct measure_client *c = m->pending;
        uint64_t tick = m->tick;
        m->busy = true;
        /* A measure should only take time nothing else wants (until a
         * close waits for it: measure_forget()). */
        set_idle(pthread_self(), true);
        pthread_mutex_unlock(&m->lock);

        struct flockstats_result res;
        int64_t t0 = clock_mono_ns(), cpu = clock_thread_ns();
        int rc = measure_buffer(m, &res);
        cpu = clock_thread_ns() - cpu;
        double ms = (double)(clock_mono_ns() - t0) / 1e6;
        if (rc == 0)
            c->done(c->arg, &res, tick, ms);

        pthread_mutex_lock(&m->lock);
        m->rest_until_ns = clock_mono_ns() + (int64_t)((double)cpu * (1.0 / MEASURE_SHARE - 1.0));
        release_big(m);
        m->busy = false;
        m->pending = NULL;
        pthread_cond_broadcast(&m->idle);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

struct measure *measure_create(const char **err)
{
    struct measure *m = calloc(1, sizeof *m);
    if (!m) {
        *err = "out of memory";
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->work, NULL);
    pthread_cond_init(&m->idle, NULL);
    if (pthread_create(&m->thread, NULL, run, m) != 0) {
        *err = "measure: cannot start its thread";
        pthread_cond_destroy(&m->idle);
        pthread_cond_destroy(&m->work);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    return m;
}

void measure_destroy(struct measure *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->stop = true;
    pthread_cond_signal(&m->work);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    flockstats_destroy(m->stats);
    free(m->x);
    free(m->y);
    free(m->vx);
    free(m->vy);
    pthread_cond_destroy(&m->idle);
    pthread_cond_destroy(&m->work);
    pthread_mutex_destroy(&m->lock);
    free(m);
}
