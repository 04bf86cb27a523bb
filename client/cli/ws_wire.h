/*
 * ws_wire — the bytes of a minimal RFC 6455 WebSocket client, for load
 * testing many connections over raw sockets: the upgrade request and the
 * check of the server's 101 answer (Sec-WebSocket-Accept, with the SHA-1
 * and base64 of libwebsockets), masked client frames, and an incremental
 * frame parser that hands payload over in whole slices (never byte by
 * byte).
 *
 * Never: I/O, sockets, clocks, allocation. Everything works on buffers the
 * caller passes in.
 * Threading: reentrant; a ws_rx belongs to one connection.
 */
#ifndef FLOCKCTL_WS_WIRE_H
#define FLOCKCTL_WS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WS_OP_CONT   0x0
#define WS_OP_TEXT   0x1
#define WS_OP_BINARY 0x2
#define WS_OP_CLOSE  0x8
#define WS_OP_PING   0x9
#define WS_OP_PONG   0xA

#define WS_KEY_LEN     24 /* base64 of 16 random bytes */
#define WS_ACCEPT_LEN  28 /* base64 of a SHA-1 digest */
#define WS_CONTROL_MAX 125

/* A Sec-WebSocket-Key (base64 of 16 bytes) from 16 bytes of randomness the
 * caller supplies. */
void ws_make_key(const uint8_t random16[16], char key[WS_KEY_LEN + 1]);

/* The Sec-WebSocket-Accept a server must answer to key: base64 of the
 * SHA-1 of key and the RFC 6455 GUID. */
void ws_accept_for(const char *key, char accept[WS_ACCEPT_LEN + 1]);

/*
 * Writes the HTTP/1.1 upgrade request for ws://host:port/path offering
 * subprotocol (may be NULL) into buf[0..cap). Returns its length, or -1 if
 * it does not fit.
 */
int ws_request(char *buf, size_t cap, const char *host, int port, const char *path, const char *key,
               const char *subprotocol);

/*
 * Length of the response head in buf[0..len) including the blank line that
 * ends it, or 0 if it is not complete yet.
 */
size_t ws_response_head_len(const char *buf, size_t len);

/*
 * Checks a complete response head: status 101, "Upgrade: websocket",
 * "Connection: upgrade" and a Sec-WebSocket-Accept that matches key.
 * Returns 0, or -1 with *why set to a static reason.
 */
int ws_check_response(const char *head, size_t len, const char *key, const char **why);

/*
 * Writes one client frame (FIN set, payload masked with mask, as clients
 * must) into buf[0..cap). Returns its length, or 0 if it does not fit.
 */
size_t ws_client_frame(uint8_t *buf, size_t cap, int opcode, const uint8_t *payload, size_t len,
                       uint32_t mask);

/* Parser state of one connection's incoming frames; zero it to start. */
struct ws_rx {
    uint64_t left;   /* payload bytes of the current frame still to come */
    uint8_t hdr[14]; /* frame header being collected */
    uint8_t hdr_have, in_payload;
    uint8_t opcode, fin; /* of the current frame */
    uint8_t msg_opcode;  /* TEXT or BINARY of the message in progress, 0 if none */
    uint8_t ctrl_len;
    uint8_t ctrl[WS_CONTROL_MAX]; /* payload of a control frame being collected */
};

struct ws_rx_ops {
    /* A slice of a data message's payload, p[0..n) (n may be 0; p is NULL
     * for bytes passed to ws_rx_skip()); last is 1 when the slice ends the
     * message. opcode is the message's (TEXT or
     * BINARY), also for continuation frames. */
    void (*data)(void *user, int opcode, const uint8_t *p, size_t n, int last);
    /* A whole control frame: CLOSE, PING or PONG with its payload. */
    void (*control)(void *user, int opcode, const uint8_t *p, size_t n);
};

/*
 * Consumes buf[0..len) (any split of the stream is fine). Returns 0, or -1
 * on a protocol violation by the server (a masked frame, reserved bits,
 * an unknown opcode, a control frame that is fragmented or longer than 125
 * bytes, a continuation without a message or a new message inside one, a
 * 64-bit length with its top bit set); the connection should then close.
 */
int ws_rx_feed(struct ws_rx *rx, const uint8_t *buf, size_t len, const struct ws_rx_ops *ops,
               void *user);

/*
 * Payload bytes of the current data frame that the caller may discard
 * unread (e.g. with recv(MSG_TRUNC)) and pass to ws_rx_skip(); 0 outside
 * a data frame's payload.
 */
uint64_t ws_rx_skippable(const struct ws_rx *rx);

/* Consumes n <= ws_rx_skippable() payload bytes that were discarded: the
 * data callback sees them with p NULL. */
void ws_rx_skip(struct ws_rx *rx, size_t n, const struct ws_rx_ops *ops, void *user);

#endif
