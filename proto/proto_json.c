/*
 * proto_json.c — strict JSON token checks and a bounded JSON writer.
 */
#include "proto_json.h"

#include "proto.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lexing ------------------------------------------------------------- */

/* Valid lead bytes of multi-byte UTF-8 and the range of their second byte,
 * which is what excludes overlong forms, surrogates and > U+10FFFF. */
static const struct {
    unsigned char lead_lo, lead_hi, len, second_lo, second_hi;
} utf8_leads[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
    {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

size_t proto_json_utf8_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0)
        return 0;
    if (u[0] < 0x80)
        return 1;
    for (size_t k = 0; k < sizeof utf8_leads / sizeof utf8_leads[0]; k++) {
        if (u[0] < utf8_leads[k].lead_lo || u[0] > utf8_leads[k].lead_hi)
            continue;
        size_t len = utf8_leads[k].len;
        if (n < len || u[1] < utf8_leads[k].second_lo || u[1] > utf8_leads[k].second_hi)
            return 0;
        for (size_t i = 2; i < len; i++)
            if (u[i] < 0x80 || u[i] > 0xBF)
                return 0;
        return len;
    }
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static size_t skip_digits(const char *s, size_t n, size_t i)
{
    while (i < n && is_digit(s[i]))
        i++;
    return i;
}

size_t proto_json_number_len(const char *s, size_t n)
{
    size_t i = 0, j;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        i = skip_digits(s, n, i);
    else
        return 0;
    if (i < n && s[i] == '.') {
        if ((j = skip_digits(s, n, i + 1)) == i + 1)
            return 0;
        i = j;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if ((j = skip_digits(s, n, i)) == i)
            return 0;
        i = j;
    }
    /* "01", "1.", "1e" and "1.2.3" end here with a number character left. */
    if (i < n && (is_digit(s[i]) || strchr(".eE+-", s[i])) && s[i] != '\0')
        return 0;
    return i;
}

/* The value of hex digit c, or PROTO_E_BAD_JSON if it is none. */
static int hex_digit(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return PROTO_E_BAD_JSON;
}

/* Value of the 4 hex digits at s, or PROTO_E_BAD_JSON. */
static long hex4(const char *s, size_t n)
{
    long v = 0;
    if (n < 4)
        return PROTO_E_BAD_JSON;
    for (size_t i = 0; i < 4; i++) {
        int d = hex_digit(s[i]);
        if (d < 0)
            return d;
        v = v * 16 + d;
    }
    return v;
}

/* Length of the escape at s (s[0] is the backslash), 0 if invalid. */
static size_t escape_len(const char *s, size_t n)
{
    if (n < 2 || s[1] == '\0')
        return 0;
    if (strchr("\"\\/bfnrt", s[1]))
        return 2;
    if (s[1] != 'u')
        return 0;
    long cp = hex4(s + 2, n - 2);
    if (cp <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) /* \u0000 or a lone low surrogate */
        return 0;
    if (cp < 0xD800 || cp > 0xDBFF)
        return 6;
    if (n < 12 || s[6] != '\\' || s[7] != 'u')
        return 0;
    long low = hex4(s + 8, n - 8);
    return low >= 0xDC00 && low <= 0xDFFF ? 12 : 0;
}

size_t proto_json_string_len(const char *s, size_t n)
{
    if (n == 0 || s[0] != '"')
        return 0;
    for (size_t i = 1, step; i < n; i += step) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return 0;
        step = c == '\\' ? escape_len(s + i, n - i) : proto_json_utf8_len(s + i, n - i);
        if (step == 0)
            return 0;
    }
    return 0;
}

int proto_json_is_scalar(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return 0;
    if (strcmp(s, "null") == 0)
        return 1;
    if (s[0] == '"')
        return proto_json_string_len(s, n) == n;
    return proto_json_number_len(s, n) == n;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t proto_json_skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

/* Index just past the string starting at s[i] == '"' (n if unterminated). */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return n;
}

size_t proto_json_skip_value(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return n;
    if (s[i] == '"')
        return skip_string(s, n, i);
    if (s[i] != '{' && s[i] != '[') {
        while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_ws(s[i]))
            i++;
        return i;
    }
    size_t depth = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            i = skip_string(s, n, i);
            continue;
        }
        i++;
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i;
    }
    return n;
}

/* ---- writing ------------------------------------------------------------ */

void proto_json_init(struct proto_json_writer *w, char *buf, size_t cap)
{
    *w = (struct proto_json_writer){.buf = buf, .cap = cap, .overflow = cap == 0 || !buf};
}

/* Appends n bytes, keeping one byte free for the final NUL. */
static void put(struct proto_json_writer *w, const char *s, size_t n)
{
    if (w->overflow || n >= w->cap - w->len) {
        w->overflow = 1;
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

/* Writes the comma a value needs, unless it follows its key. */
static void begin_value(struct proto_json_writer *w)
{
    if (w->after_key)
        w->after_key = 0;
    else if (w->need_comma)
        put(w, ",", 1);
}

static void put_value(struct proto_json_writer *w, const char *text)
{
    begin_value(w);
    put(w, text, strlen(text));
    w->need_comma = 1;
}

void proto_json_open(struct proto_json_writer *w, char bracket)
{
    begin_value(w);
    put(w, &bracket, 1);
    w->need_comma = 0;
}

void proto_json_close(struct proto_json_writer *w, char bracket)
{
    put(w, &bracket, 1);
    w->need_comma = 1;
}

/* Appends the escaped body of a string (no quotes). */
static void put_escaped(struct proto_json_writer *w, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0, step; i < n; i += step) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        step = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(w, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)c);
            put(w, esc, 6);
        } else if ((step = proto_json_utf8_len(s + i, n - i)) != 0) {
            put(w, s + i, step);
        } else {
            step = 1;
            put(w, "\\ufffd", 6);
        }
    }
}

/* Appends s as a JSON string, quotes included. */
static void put_quoted(struct proto_json_writer *w, const char *s)
{
    put(w, "\"", 1);
    put_escaped(w, s);
    put(w, "\"", 1);
}

void proto_json_key(struct proto_json_writer *w, const char *key)
{
    begin_value(w);
    put_quoted(w, key);
    put(w, ":", 1);
    w->after_key = 1;
}

void proto_json_str(struct proto_json_writer *w, const char *s)
{
    begin_value(w);
    put_quoted(w, s);
    w->need_comma = 1;
}

void proto_json_raw(struct proto_json_writer *w, const char *s)
{
    put_value(w, s);
}

void proto_json_u64(struct proto_json_writer *w, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, v);
    put_value(w, t);
}

void proto_json_i64(struct proto_json_writer *w, int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, v);
    put_value(w, t);
}

/* Shortest "%.Ng" text that reads back as v: as a float32 if single (6 to 9
 * digits), else as a double (15 to 17); null if v is not finite. */
static void put_shortest(struct proto_json_writer *w, double v, int single)
{
    char t[32];
    if (!isfinite(v)) {
        proto_json_null(w);
        return;
    }
    for (int prec = single ? 6 : 15; prec <= (single ? 9 : 17); prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (single ? strtof(t, NULL) == (float)v : strtod(t, NULL) == v)
            break;
    }
    for (char *p = t; *p; p++) /* a locale's decimal comma must not leak into JSON */
        if (*p == ',')
            *p = '.';
    put_value(w, t);
}

void proto_json_float(struct proto_json_writer *w, float v)
{
    put_shortest(w, v, 1);
}

void proto_json_double(struct proto_json_writer *w, double v)
{
    put_shortest(w, v, 0);
}

void proto_json_bool(struct proto_json_writer *w, int v)
{
    put_value(w, v ? "true" : "false");
}

void proto_json_null(struct proto_json_writer *w)
{
    put_value(w, "null");
}

void proto_json_member_str(struct proto_json_writer *w, const char *key, const char *v)
{
    proto_json_key(w, key);
    proto_json_str(w, v);
}

void proto_json_member_u64(struct proto_json_writer *w, const char *key, uint64_t v)
{
    proto_json_key(w, key);
    proto_json_u64(w, v);
}

void proto_json_member_i64(struct proto_json_writer *w, const char *key, int64_t v)
{
    proto_json_key(w, key);
    proto_json_i64(w, v);
}

void proto_json_member_float(struct proto_json_writer *w, const char *key, float v)
{
    proto_json_key(w, key);
    proto_json_float(w, v);
}

int proto_json_finish(struct proto_json_writer *w)
{
    if (w->overflow || w->len > INT_MAX) {
        if (w->buf && w->cap)
            w->buf[0] = '\0';
        return PROTO_E_NOSPACE;
    }
    w->buf[w->len] = '\0';
    return (int)w->len;
}
