/*
 * bucket.c — token bucket with strikes (see bucket.h).
 */
#include "bucket.h"

void bucket_init(struct bucket *b, double rate, uint32_t burst, int64_t now)
{
    *b = (struct bucket){
        .rate = rate, .burst = burst, .tokens = burst, .strikes = 0, .last_ns = now};
}

/* Brings tokens and strikes up to `now`; time never runs backwards here. */
static void refill(struct bucket *b, int64_t now)
{
    double dt = now > b->last_ns ? (double)(now - b->last_ns) * 1e-9 : 0.0;
    if (now > b->last_ns)
        b->last_ns = now;
    b->tokens += dt * b->rate;
    if (b->tokens > b->burst)
        b->tokens = b->burst;
    b->strikes -= dt * b->burst / BUCKET_ABUSE_WINDOW_S;
    if (b->strikes < 0)
        b->strikes = 0;
}

bool bucket_take(struct bucket *b, int64_t now)
{
    refill(b, now);
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return true;
    }
    b->strikes += 1.0;
    return false;
}

bool bucket_is_abused(const struct bucket *b)
{
    return b->strikes > b->burst;
}
