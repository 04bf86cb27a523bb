/*
 * ws_wire.c — minimal WebSocket client wire format (see ws_wire.h).
 *
 * The frame parser collects a header (2 to 10 bytes from a server, which
 * never masks), then hands the payload to the caller in as large slices as
 * the input buffer allows; only control frames (at most 125 bytes) are
 * copied, so that they can be answered whole.
 */
#define _POSIX_C_SOURCE 200809L

#include "ws_wire.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- keys --------------------------------------------------------------------- */

void ws_make_key(const uint8_t random16[16], char key[WS_KEY_LEN + 1])
{
    lws_b64_encode_string((const char *)random16, 16, key, WS_KEY_LEN + 1);
}

void ws_accept_for(const char *key, char accept[WS_ACCEPT_LEN + 1])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s%s", key, guid);
    unsigned char digest[20];
    lws_SHA1((const unsigned char *)buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : 0, digest);
    lws_b64_encode_string((const char *)digest, sizeof digest, accept, WS_ACCEPT_LEN + 1);
}

/* ---- handshake -------------------------------------------------------------- */

int ws_request(char *buf, size_t cap, const char *host, int port, const char *path, const char *key,
               const char *subprotocol)
{
    int v6 = strchr(host, ':') != NULL;
    int n = snprintf(buf, cap,
                     "GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                     path, v6 ? "[" : "", host, v6 ? "]" : "", port, key,
                     subprotocol ? "Sec-WebSocket-Protocol: " : "", subprotocol ? subprotocol : "",
                     subprotocol ? "\r\n" : "");
    return n > 0 && (size_t)n < cap ? n : -1;
}

size_t ws_response_head_len(const char *buf, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

/* Finds header name in head and returns its value (leading blanks skipped)
 * and its length through *vlen; NULL if absent. */
static const char *header_value(const char *head, size_t len, const char *name, size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *end = head + len, *line = memchr(head, '\n', len);
    while (line && line + 1 < end) {
        line++;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            break;
        if ((size_t)(eol - line) > nlen && line[nlen] == ':' && !strncasecmp(line, name, nlen)) {
            const char *v = line + nlen + 1, *ve = eol;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        line = eol;
    }
    return NULL;
}

/* 1 if the comma-separated value v[0..n) contains token (case-insensitive). */
static int has_token(const char *v, size_t n, const char *token)
{
    size_t t = strlen(token);
    for (size_t i = 0; i + t <= n; i++)
        if (!strncasecmp(v + i, token, t) && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
            (i + t == n || v[i + t] == ',' || v[i + t] == ' '))
            return 1;
    return 0;
}

int ws_check_response(const char *head, size_t len, const char *key, const char **why)
{
    size_t n;
    const char *v;
    char accept[WS_ACCEPT_LEN + 1];
    if (len < 12 || strncmp(head, "HTTP/1.1 101", 12)) {
        *why = "the server did not answer 101 Switching Protocols";
        return -1;
    }
    if (!(v = header_value(head, len, "Upgrade", &n)) || !has_token(v, n, "websocket")) {
        *why = "no 'Upgrade: websocket' in the response";
        return -1;
    }
    if (!(v = header_value(head, len, "Connection", &n)) || !has_token(v, n, "upgrade")) {
        *why = "no 'Connection: upgrade' in the response";
        return -1;
    }
    ws_accept_for(key, accept);
    if (!(v = header_value(head, len, "Sec-WebSocket-Accept", &n)) || n != WS_ACCEPT_LEN ||
        memcmp(v, accept, WS_ACCEPT_LEN)) {
        *why = "Sec-WebSocket-Accept does not match the key";
        return -1;
    }
    return 0;
}

/* ---- frames ----------------------------------------------------------------- */

size_t ws_client_frame(uint8_t *buf, size_t cap, int opcode, const uint8_t *payload, size_t len,
                       uint32_t mask)
{
    size_t hdr = len < 126 ? 2 : len < 65536 ? 4 : 10;
    if (cap < hdr + 4 || cap - hdr - 4 < len)
        return 0;
    buf[0] = (uint8_t)(0x80 | (opcode & 0x0F));
    if (len < 126) {
        buf[1] = (uint8_t)(0x80 | len);
    } else if (len < 65536) {
        buf[1] = 0x80 | 126;
        buf[2] = (uint8_t)(len >> 8);
        buf[3] = (uint8_t)len;
    } else {
        buf[1] = 0x80 | 127;
        for (int i = 0; i < 8; i++)
            buf[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
    }
    uint8_t m[4] = {(uint8_t)(mask >> 24), (uint8_t)(mask >> 16), (uint8_t)(mask >> 8),
                    (uint8_t)mask};
    memcpy(buf + hdr, m, 4);
    for (size_t i = 0; i < len; i++)
        buf[hdr + 4 + i] = payload[i] ^ m[i & 3];
    return hdr + 4 + len;
}

/* Bytes the header being collected needs in all: 2, then 4 or 10. */
static size_t header_need(const struct ws_rx *rx)
{
    if (rx->hdr_have < 2)
        return 2;
    int l7 = rx->hdr[1] & 0x7F;
    return l7 == 126 ? 4 : l7 == 127 ? 10 : 2;
}

/* Interprets a complete header; -1 on a protocol violation. */
static int start_frame(struct ws_rx *rx)
{
    uint8_t b0 = rx->hdr[0], b1 = rx->hdr[1];
    int l7 = b1 & 0x7F, op = b0 & 0x0F;
    if ((b0 & 0x70) || (b1 & 0x80))
        return -1;
    if (l7 < 126) {
        rx->left = (uint64_t)l7;
    } else if (l7 == 126) {
        rx->left = (uint64_t)rx->hdr[2] << 8 | rx->hdr[3];
    } else {
        rx->left = 0;
        for (int i = 0; i < 8; i++)
            rx->left = rx->left << 8 | rx->hdr[2 + i];
        if (rx->left >> 63)
            return -1;
    }
    rx->opcode = (uint8_t)op;
    rx->fin = (uint8_t)(b0 >> 7);
    if (op >= 0x8) {
        if (op > WS_OP_PONG || !rx->fin || rx->left > WS_CONTROL_MAX)
            return -1;
        rx->ctrl_len = 0;
    } else if (op == WS_OP_CONT) {
        if (!rx->msg_opcode)
            return -1;
    } else if (op == WS_OP_TEXT || op == WS_OP_BINARY) {
        if (rx->msg_opcode)
            return -1;
        rx->msg_opcode = (uint8_t)op;
    } else {
        return -1;
    }
    rx->in_payload = 1;
    rx->hdr_have = 0;
    return 0;
}

/* Takes up to len payload bytes from p; returns how many it took. */
static size_t take_payload(struct ws_rx *rx, const uint8_t *p, size_t len,
                           const struct ws_rx_ops *ops, void *user)
{
    size_t n = rx->left < len ? (size_t)rx->left : len;
    rx->left -= n;
    int done = rx->left == 0;
    if (rx->opcode >= 0x8) {
        if (p) /* NULL only from ws_rx_skip, which skips data frames, never these */
            memcpy(rx->ctrl + rx->ctrl_len, p, n);
        rx->ctrl_len = (uint8_t)(rx->ctrl_len + n);
        if (done)
            ops->control(user, rx->opcode, rx->ctrl, rx->ctrl_len);
    } else {
        int last = done && rx->fin;
        int op = rx->msg_opcode;
        if (last)
            rx->msg_opcode = 0;
        if (n || done)
            ops->data(user, op, p, n, last);
    }
    if (done)
        rx->in_payload = 0;
    return n;
}

int ws_rx_feed(struct ws_rx *rx, const uint8_t *buf, size_t len, const struct ws_rx_ops *ops,
               void *user)
{
    size_t i = 0;
    while (i < len || (rx->in_payload && rx->left == 0)) {
        if (rx->in_payload) {
            i += take_payload(rx, buf + i, len - i, ops, user);
            continue;
        }
        size_t need = header_need(rx);
        while (rx->hdr_have < need && i < len) {
            rx->hdr[rx->hdr_have++] = buf[i++];
            need = header_need(rx);
        }
        if (rx->hdr_have < need)
            break;
        if (start_frame(rx))
            return -1;
    }
    return 0;
}

uint64_t ws_rx_skippable(const struct ws_rx *rx)
{
    return rx->in_payload && rx->opcode < 0x8 ? rx->left : 0;
}

void ws_rx_skip(struct ws_rx *rx, size_t n, const struct ws_rx_ops *ops, void *user)
{
    if (n && n <= ws_rx_skippable(rx))
        take_payload(rx, NULL, n, ops, user);
}
