/*
 * secret — the two operations flockd does on secrets: comparing a client's
 * token or password with the expected one in constant time, and making
 * fresh random tokens (the RTS teams' rejoin tokens).
 *
 * Never: logs or keeps a secret. Threading: safe from any thread.
 */
#ifndef FLOCKD_SECRET_H
#define FLOCKD_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SECRET_MAX         128 /* longest secret compared (>= PROTO_TOKEN_MAX, roles.c) */
#define SECRET_TOKEN_BYTES 16  /* random bytes of a token */
#define SECRET_TOKEN_LEN   (2 * SECRET_TOKEN_BYTES) /* its hex digits */

/* True if the NUL-terminated `given` equals `expected`; the time taken
 * depends on neither content nor length (each counts up to SECRET_MAX
 * bytes). */
bool secret_matches(const char *given, const char *expected);

/* Writes a fresh token of SECRET_TOKEN_LEN lowercase hex digits and a NUL
 * into out (SECRET_TOKEN_LEN + 1 bytes). From getrandom(); without an
 * entropy source, unique within the process (a counter mixed with `now`)
 * but not secret. */
void secret_token(char *out, int64_t now);

#endif
