/*
 * proto_json — JSON text helpers the codec needs and cJSON lacks.
 * Internal to flockproto: other modules use proto_command.h/proto_reply.h.
 *
 * Lexing: strict checks of single JSON tokens (numbers, strings, UTF-8) and
 * skipping over values of already-validated text, so the command parser can
 * refuse what cJSON would let through and echo an id exactly as sent.
 *
 * Writing: a tiny append-only writer into a caller buffer. It never
 * allocates and never writes past the capacity; an overflow is remembered
 * and reported once by proto_json_finish(). Strings are escaped and any
 * invalid UTF-8 is replaced by U+FFFD, so the output is always valid JSON
 * in valid UTF-8 (a WebSocket text frame must be valid UTF-8).
 *
 * Why not cJSON_PrintPreallocated() over a cJSON tree: every command's
 * reply is built on its room's tick thread, and a tree costs allocations
 * per member. Measured (clang -O3, best of 15 runs of 100,000 on the 2-core
 * build machine, under load), the same builders over cJSON, producing the
 * same bytes, took about 500 ns per ack ({"type","id","tick","obstacle"})
 * against 190-210 ns here, and 30 us per welcome against 21 us. The same
 * bytes need numbers added as raw text anyway: cJSON prints a float32 as
 * the double it widens to (0.3f as 0.30000001192092896, where PROTOCOL.md
 * §6.1 wants 0.3) and, with its own numbers, took 850 ns per ack. It also
 * passes invalid UTF-8 through.
 *
 * Never: I/O, allocation, globals. Threading: reentrant.
 */
#ifndef FLOCKD_PROTO_JSON_H
#define FLOCKD_PROTO_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Longest number token the parser accepts (characters). */
#define PROTO_JSON_NUMBER_MAX 63

/* ---- lexing: each returns a token length, 0 if there is no valid token ---- */

/* Length (1..4) of the valid, shortest-form UTF-8 sequence at s[0..n). */
size_t proto_json_utf8_len(const char *s, size_t n);

/* Length of a strict RFC 8259 number at s[0..n): -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
size_t proto_json_number_len(const char *s, size_t n);

/*
 * Length of the string token at s[0..n), quotes included: valid UTF-8, no
 * raw control characters, only the JSON escapes, \uXXXX surrogates paired,
 * and no \u0000 (C strings could not hold it).
 */
size_t proto_json_string_len(const char *s, size_t n);

/* 1 if s (NUL-terminated) is exactly one JSON null, number or string. */
int proto_json_is_scalar(const char *s);

/* Index of the first non-whitespace byte at or after i (n if none). */
size_t proto_json_skip_ws(const char *s, size_t n, size_t i);

/*
 * In text already known to be valid JSON, the index just past the value
 * that starts at s[i] (object, array, string or literal); n if it runs off.
 */
size_t proto_json_skip_value(const char *s, size_t n, size_t i);

/* ---- writing ---- */

struct proto_json_writer {
    char *buf;
    size_t cap, len;
    int overflow;   /* something did not fit */
    int need_comma; /* a value was written at the current level */
    int after_key;  /* a key was written; its value comes next */
};

/* Starts writing into buf[0..cap). */
void proto_json_init(struct proto_json_writer *w, char *buf, size_t cap);
/* Opens '{' or '[' (as a value). */
void proto_json_open(struct proto_json_writer *w, char bracket);
void proto_json_close(struct proto_json_writer *w, char bracket);
void proto_json_key(struct proto_json_writer *w, const char *key);
void proto_json_str(struct proto_json_writer *w, const char *s);
/* Writes s as it is: the caller guarantees it is one valid JSON value. */
void proto_json_raw(struct proto_json_writer *w, const char *s);
void proto_json_u64(struct proto_json_writer *w, uint64_t v);
void proto_json_i64(struct proto_json_writer *w, int64_t v);
/* Shortest text that reads back as the same float / double; null if not finite. */
void proto_json_float(struct proto_json_writer *w, float v);
void proto_json_double(struct proto_json_writer *w, double v);
void proto_json_bool(struct proto_json_writer *w, int v);
void proto_json_null(struct proto_json_writer *w);

/* A member of the current object: key then value. */
void proto_json_member_str(struct proto_json_writer *w, const char *key, const char *v);
void proto_json_member_u64(struct proto_json_writer *w, const char *key, uint64_t v);
void proto_json_member_i64(struct proto_json_writer *w, const char *key, int64_t v);
void proto_json_member_float(struct proto_json_writer *w, const char *key, float v);

/* NUL-terminates; returns the length written or PROTO_E_NOSPACE. */
int proto_json_finish(struct proto_json_writer *w);

#endif
