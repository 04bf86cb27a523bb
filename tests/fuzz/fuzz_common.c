/*
 * fuzz_common.c — shared checks of the fuzz targets.
 */
#include "fuzz_common.h"

#include "proto_command.h"
#include "proto_reply.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz check failed: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

size_t fuzz_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len;
    uint32_t v, min;
    if (n == 0)
        return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    if ((u[0] & 0xE0) == 0xC0) {
        len = 2;
        v = u[0] & 0x1Fu;
        min = 0x80;
    } else if ((u[0] & 0xF0) == 0xE0) {
        len = 3;
        v = u[0] & 0x0Fu;
        min = 0x800;
    } else if ((u[0] & 0xF8) == 0xF0) {
        len = 4;
        v = u[0] & 0x07u;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((u[k] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (u[k] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

int fuzz_utf8_valid(const char *s, size_t n)
{
    uint32_t cp;
    for (size_t i = 0, step; i < n; i += step)
        if ((step = fuzz_utf8_next(s + i, n - i, &cp)) == 0)
            return 0;
    return 1;
}

const struct proto_limits *fuzz_limits(void)
{
    static const struct proto_limits lim = {.width = 1600.0f,
                                            .height = 1000.0f,
                                            .capacity = 16384,
                                            .max_message = PROTO_DEFAULT_MAX_MESSAGE};
    return &lim;
}

/* Aborts unless text[0..len) is valid UTF-8, one JSON object and starts
 * with prefix (which pins "type" and the echoed id). */
static void check_reply(const char *what, const char *text, int len, const char *prefix)
{
    const char *end = NULL;
    if (len < 0)
        fuzz_fail("%s reply did not fit %d bytes: %d", what, PROTO_REPLY_BYTES, len);
    if ((size_t)len != strlen(text) || !fuzz_utf8_valid(text, (size_t)len))
        fuzz_fail("%s reply is not valid UTF-8 of its stated length: %s", what, text);
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root || !cJSON_IsObject(root))
        fuzz_fail("%s reply is not a JSON object: %s", what, text);
    cJSON_Delete(root);
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fuzz_fail("%s reply does not start with %s: %s", what, prefix, text);
}

void fuzz_check_replies(const char *id, int code, const char *message)
{
    static const struct proto_ack_field extra[] = {{"count", -1, NULL}, {"until", INT64_MAX, NULL}};
    char buf[PROTO_REPLY_BYTES], prefix[PROTO_ID_TEXT_MAX + 64];
    const char *echo = id && id[0] ? id : "null";

    int len = proto_reply_ack(buf, sizeof buf, id, UINT64_MAX, extra, 2);
    snprintf(prefix, sizeof prefix, "{\"type\":\"ack\",\"id\":%s,\"tick\":", echo);
    check_reply("ack", buf, len, prefix);

    len = proto_reply_error(buf, sizeof buf, id, code, message);
    snprintf(prefix, sizeof prefix, "{\"type\":\"error\",\"id\":%s,\"code\":\"%s\"", echo,
             proto_status_name(proto_status_is_wire(code) ? code : PROTO_E_INTERNAL));
    check_reply("error", buf, len, prefix);
}

void fuzz_each_frame(const uint8_t *data, size_t size, void (*one)(const uint8_t *, size_t))
{
    while (size >= 2) {
        size_t len = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2, size -= 2;
        if (len > size)
            len = size;
        one(data, len);
        data += len, size -= len;
    }
}
