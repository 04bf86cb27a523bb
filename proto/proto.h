/*
 * proto — what every part of the flockd wire protocol shares.
 *
 * The protocol (proto/PROTOCOL.md is normative) has two halves: JSON
 * control messages in WebSocket text frames (proto_command.h parses what
 * clients send, proto_reply.h writes what the server answers) and binary
 * state in binary frames (proto_snapshot.h). This header holds their common
 * constants and the one error convention of the codec.
 *
 * Never: I/O, sockets, clocks, threads, allocation, mutable globals, the
 * simulation (proto knows the flocking core only through the parameter
 * registry, params.h, which the protocol describes to clients). Every
 * function works on memory the caller passes in.
 *
 * Threading: every function of this header is reentrant.
 *
 * Errors: every function of the codec that can fail returns 0 (or a length)
 * on success and a negative enum proto_status on failure. The first block
 * are the wire error codes: the server sends them to clients as the stable
 * string proto_status_name() returns ("bad_json"). The second block only
 * ever reaches C callers (snapshot codec, reply buffers).
 */
#ifndef FLOCKD_PROTO_H
#define FLOCKD_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PROTO_VERSION             1          /* protocol and snapshot version */
#define PROTO_SUBPROTOCOL         "flock.v1" /* WebSocket subprotocol of PROTO_VERSION */
#define PROTO_WS_PATH             "/ws"
#define PROTO_DEFAULT_MAX_MESSAGE 4096 /* bytes of one client message */
#define PROTO_GROUPS              256  /* group ids 0..255: one byte on the wire */

enum proto_status {
    PROTO_OK = 0,
    /* Wire error codes (sent in {"type":"error","code":...}). */
    PROTO_E_BAD_JSON = -1,     /* not JSON, not an object, NUL, bad UTF-8, too deep */
    PROTO_E_TOO_LARGE = -2,    /* message longer than the server's max_message */
    PROTO_E_UNKNOWN_CMD = -3,  /* "cmd" names no command */
    PROTO_E_BAD_ARG = -4,      /* missing, unknown, duplicated or mistyped field */
    PROTO_E_OUT_OF_RANGE = -5, /* a well-typed value outside its range */
    PROTO_E_CAPACITY = -6,     /* a world capacity would be exceeded */
    PROTO_E_NOT_FOUND = -7,    /* no such obstacle */
    PROTO_E_QUEUE_FULL = -8,   /* the room's command queue is full; nothing done */
    PROTO_E_RATE_LIMITED = -9, /* the client sends commands too fast */
    PROTO_E_FORBIDDEN = -10,   /* the client's role may not do this */
    PROTO_E_NOT_JOINED = -11,  /* the command needs a room and the client has none */
    PROTO_E_BAD_ROOM = -12,    /* join: no such room, or it cannot take this client */
    PROTO_E_INTERNAL = -13,    /* a server fault; the command may not have applied */
    PROTO_E_REFUSED = -14,     /* the room's script refused the command (its reason says why) */
    PROTO_E_UNAVAILABLE = -15, /* a cluster room could not make it durable; it did not apply */
    /* Codec status codes (never sent on the wire). */
    PROTO_E_NOSPACE = -20,     /* the caller's output buffer is too small */
    PROTO_E_UNENCODABLE = -21, /* the view breaks a limit of the snapshot format */
    PROTO_E_TRUNCATED = -22,   /* input shorter than its header says */
    PROTO_E_BAD_MAGIC = -23,
    PROTO_E_BAD_VERSION = -24,
    PROTO_E_BAD_TYPE = -25,
    PROTO_E_BAD_LENGTH = -26, /* input longer than its header says */
    PROTO_E_BAD_VALUE = -27,  /* a field breaks the format's rules */
    PROTO_E_OVER_LIMIT = -28, /* a count exceeds the caller's array capacity */
    /* Snapshot v2 decoding (proto_v2.h). */
    PROTO_E_NO_BASE = -29,       /* a delta's base is not held (or of another epoch) */
    PROTO_E_BAD_BODY = -30,      /* the body does not inflate to what the header says */
    PROTO_E_HASH_MISMATCH = -31, /* the reconstructed state's hash differs */
};

/*
 * The stable lower_snake name of a status ("bad_json", "truncated"), or
 * "unknown" for a value that is not in enum proto_status. Static string.
 */
const char *proto_status_name(int status);

/* 1 if status is one of the wire error codes (PROTO_E_BAD_JSON..UNAVAILABLE). */
int proto_status_is_wire(int status);

#endif
