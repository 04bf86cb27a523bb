/*
 * fuzz_common — what the libFuzzer targets share: the entry point
 * prototypes, an abort that says why, an independent UTF-8 decoder, the
 * limits of a default world, the check that ack and error replies are
 * valid JSON carrying an id back byte for byte (PROTOCOL.md §5.1, §6), and
 * the split of an input into length-prefixed frames.
 *
 * A failed check prints one line to stderr and calls abort(); libFuzzer
 * reports that as a crash and saves the input. Nothing here allocates
 * beyond a call, and nothing keeps state between calls.
 */
#ifndef FLOCKD_FUZZ_COMMON_H
#define FLOCKD_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define FUZZ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FUZZ_PRINTF(f, a)
#endif

struct proto_limits;

/* libFuzzer's entry points (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Prints "fuzz check failed: MESSAGE" and aborts. */
_Noreturn void fuzz_fail(const char *fmt, ...) FUZZ_PRINTF(1, 2);

/*
 * Decodes the UTF-8 sequence at s[0..n): returns its length (1..4) and sets
 * *cp, or returns 0 if it is not a valid shortest-form sequence of a scalar
 * value (no surrogates, nothing above U+10FFFF). Written from RFC 3629, not
 * shared with the codec, so that the two can disagree.
 */
size_t fuzz_utf8_next(const char *s, size_t n, uint32_t *cp);

/* 1 if s[0..n) is valid UTF-8. */
int fuzz_utf8_valid(const char *s, size_t n);

/* What commands are parsed against: a default world's size and capacity
 * (1600 x 1000, 16384 boids) and a max_message of 4096 bytes. Static. */
const struct proto_limits *fuzz_limits(void);

/*
 * Builds an ack and an error reply carrying id (a command's id text, "" if
 * none) with code and message, and aborts unless each fits
 * PROTO_REPLY_BYTES, is valid UTF-8, parses as a JSON object of the right
 * "type", and echoes id exactly (null when id is "").
 */
void fuzz_check_replies(const char *id, int code, const char *message);

/*
 * Splits an input into frames, each a u16 little-endian length and that
 * many bytes (the last one cut short if the input ends), and hands them
 * to one() in order: the streams of the snapshot_v2 and snapshot_v3
 * targets.
 */
void fuzz_each_frame(const uint8_t *data, size_t size, void (*one)(const uint8_t *, size_t));

#endif
