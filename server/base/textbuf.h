/*
 * textbuf — a bounded text appender over a caller's buffer, for the bodies
 * flockd renders as text (/metrics, /api/rooms, /healthz).
 *
 * Appends are printf-style and never write past the buffer; the first
 * append that does not fit marks the buffer overflowed, later appends do
 * nothing, and textbuf_finish() reports it once, so a renderer appends
 * unconditionally and checks a single result at the end. The text is
 * always NUL-terminated (when cap > 0).
 *
 * Never: allocates, does I/O. Threading: a textbuf belongs to its caller.
 */
#ifndef FLOCKD_TEXTBUF_H
#define FLOCKD_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

struct textbuf {
    char *buf; /* the caller's, cap bytes */
    size_t cap, len;
    bool overflowed;
};

/* Starts an empty text in buf (cap bytes, owned by the caller). */
void textbuf_init(struct textbuf *t, char *buf, size_t cap);

/* Appends printf-style; on overflow the text stays as it was before. */
__attribute__((format(printf, 2, 3))) void textbuf_printf(struct textbuf *t, const char *fmt, ...);

/* The text's length, or BASE_ENOSPACE if any append did not fit. */
int textbuf_finish(const struct textbuf *t);

#endif
