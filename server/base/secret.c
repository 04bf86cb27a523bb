/*
 * secret.c — constant-time comparison and random tokens (see secret.h).
 */
#define _GNU_SOURCE

#include "secret.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

bool secret_matches(const char *given, const char *expected)
{
    unsigned char a[SECRET_MAX + 1] = {0}, b[SECRET_MAX + 1] = {0};
    size_t la = strnlen(given, SECRET_MAX), lb = strnlen(expected, SECRET_MAX);
    memcpy(a, given, la);
    memcpy(b, expected, lb);
    volatile unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < sizeof a; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

void secret_token(char *out, int64_t now)
{
    unsigned char raw[SECRET_TOKEN_BYTES];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        static _Atomic uint64_t counter;
        uint64_t v = ++counter ^ (uint64_t)now;
        memcpy(raw, &v, sizeof v);
        memcpy(raw + 8, &v, sizeof v);
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}
