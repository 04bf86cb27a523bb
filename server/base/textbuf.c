/*
 * textbuf.c — bounded printf-style appends (see textbuf.h).
 */
#include "textbuf.h"

#include "base.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

void textbuf_init(struct textbuf *t, char *buf, size_t cap)
{
    *t = (struct textbuf){.buf = buf, .cap = cap, .len = 0, .overflowed = cap == 0};
    if (cap)
        buf[0] = '\0';
}

void textbuf_printf(struct textbuf *t, const char *fmt, ...)
{
    if (t->overflowed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->cap - t->len) {
        t->overflowed = true;
        t->buf[t->len] = '\0'; /* drop the partial append */
        return;
    }
    t->len += (size_t)n;
}

int textbuf_finish(const struct textbuf *t)
{
    if (t->overflowed || t->len > INT_MAX)
        return BASE_ENOSPACE;
    return (int)t->len;
}
