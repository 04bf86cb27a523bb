/*
 * bucket — one connection's command rate limit (--rate, --burst): a token
 * bucket, and a count of refusals ("strikes") that tells a client still
 * sending into an empty bucket from one that merely bursts.
 *
 * The bucket holds up to `burst` tokens and refills at `rate` per second;
 * each command takes one. Each refusal adds a strike; strikes drain at
 * burst per BUCKET_ABUSE_WINDOW_S seconds, so a client refused about
 * `burst` times within that window is abusing the limit.
 *
 * Time comes in as `now` (monotonic nanoseconds); the bucket never reads a
 * clock. Never: allocates, does I/O. Threading: the owner's thread only.
 */
#ifndef FLOCKD_BUCKET_H
#define FLOCKD_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#define BUCKET_ABUSE_WINDOW_S 10.0

struct bucket {
    double rate;     /* tokens per second */
    uint32_t burst;  /* most tokens held */
    double tokens;   /* available now */
    double strikes;  /* refusals, draining over BUCKET_ABUSE_WINDOW_S */
    int64_t last_ns; /* when tokens and strikes were last brought up to date */
};

/* A full bucket as of `now`. */
void bucket_init(struct bucket *b, double rate, uint32_t burst, int64_t now);

/* Refills for the time since the last call, then takes a token: true; or,
 * if there is none, counts a strike: false. */
bool bucket_take(struct bucket *b, int64_t now);

/* True once the strikes exceed `burst`: the client keeps sending into an
 * empty bucket (flockd then closes it with 1008). */
bool bucket_is_abused(const struct bucket *b);

#endif
