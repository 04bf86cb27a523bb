/*
 * cluster_wire — the bytes of the messages flockd nodes send each other
 * over NATS (server/cluster/CLUSTER.md §3): a room's frame from its owner, a
 * client's command for the owner, the owner's reply, the kinds of
 * frame a relay's clients take, and the owner's parameters (and a relay's
 * question for them). Pure functions on memory buffers.
 *
 * Everything from NATS is network input: a decoder checks magic, version,
 * every length against the message's size and every value against its
 * range before it fills anything, and refuses the message otherwise with
 * a negative PROTO_E_* code (and nothing allocated).
 *
 * Never: NATS calls, threads, clocks. Threading: none of its own.
 */
#ifndef FLOCKD_CLUSTER_WIRE_H
#define FLOCKD_CLUSTER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_command.h"
#include "room.h"
#include "snapenc.h"

#define CLUSTER_WIRE_VERSION 1
#define CLUSTER_CMD_VERSION  2 /* commands and replies: with the command's origin */
#define CLUSTER_KIND_VERSION 2 /* frames and wants: the kinds of frame.h, twenty deltas */

#define CLUSTER_FRAME_HEADER 196        /* bytes before a frame message's parts */
#define CLUSTER_TEXT_MAX     (1u << 20) /* the longest command or reply text */

/* ---- frames: the owner's snapshot, every kind it encoded ---- */

/* Bytes cluster_frame_encode() writes for f. */
size_t cluster_frame_size(const struct frame *f);
/* f under lease term into buf: its length, or PROTO_E_NOSPACE. */
int cluster_frame_encode(const struct frame *f, uint64_t term, uint8_t *buf, size_t cap);
/* What a frame message says besides its frame. */
struct cluster_frame_meta {
    uint64_t term;
    uint32_t boids; /* from the parts' headers */
    bool paused;
};

/*
 * A frame message into a new frame with `pre` writable bytes before each
 * part (one reference, the caller's), and its term and figures in *meta.
 * Each part's header is checked as a client would (PROTOCOL.md §4.6 and
 * §11.7 up to the body: counts against its length) and must name the
 * frame's tick, and a version 2 part the plan's sequence number and its
 * kind's bases; bodies are not inflated (a client checks those). NULL and
 * a negative code in *rc (PROTO_E_TRUNCATED, _BAD_MAGIC, _BAD_VERSION,
 * _BAD_VALUE, _BAD_LENGTH, or a part's own refusal; _INTERNAL: out of
 * memory).
 */
struct frame *cluster_frame_decode(const uint8_t *buf, size_t len, size_t pre,
                                   struct cluster_frame_meta *meta, int *rc);

/* ---- commands: a relay's client's command for the owner ---- */

struct cluster_cmd {
    char room[PROTO_ROOM_MAX + 1];
    struct room_actor who; /* as the relay's lobby knows the client */
    int refused;           /* 0: text is a command's JSON; else a wire code and text its message */
    char id[PROTO_ID_TEXT_MAX]; /* refusals: the id's JSON text */
    const char *text;           /* points into the message */
    size_t text_len;
};

/* c into buf: its length, or PROTO_E_NOSPACE. */
int cluster_cmd_encode(const struct cluster_cmd *c, uint8_t *buf, size_t cap);
/* A command message into *c (c->text points into buf). 0 or a negative code. */
int cluster_cmd_decode(const uint8_t *buf, size_t len, struct cluster_cmd *c);

/* ---- replies: the owner's answer, for one client of the relay ---- */

struct cluster_reply {
    char room[PROTO_ROOM_MAX + 1];
    uint64_t client;
    uint64_t origin; /* the command's (struct room_actor) */
    enum room_reply_kind kind;
    const char *text; /* points into the message */
    size_t text_len;
};

/* r into buf: its length, or PROTO_E_NOSPACE. */
int cluster_reply_encode(const struct cluster_reply *r, uint8_t *buf, size_t cap);
/* A reply message into *r (r->text points into buf): 0, or a negative code. */
int cluster_reply_decode(const uint8_t *buf, size_t len, struct cluster_reply *r);

/* ---- wants: the kinds of frame a relay's clients take ---- */

#define CLUSTER_WANT_SIZE 12
/* kinds into buf: CLUSTER_WANT_SIZE, or PROTO_E_NOSPACE. */
int cluster_want_encode(unsigned kinds, uint8_t *buf, size_t cap);
/* 0 and *kinds (only bits of SNAPENC kinds), or a negative code. */
int cluster_want_decode(const uint8_t *buf, size_t len, unsigned *kinds);

/* ---- parameters: every group's flocking parameters, from the owner ---- */

/* The most bytes a parameters message takes. */
size_t cluster_params_size(void);
/* values (SIM_GROUPS groups) into buf: group 0 and each group that
 * differs from it. Its length, or PROTO_E_NOSPACE. */
int cluster_params_encode(const struct sim_params values[SIM_GROUPS], uint8_t *buf, size_t cap);
/* A parameters message into values (every group; those not listed get
 * group 0's), each value checked against the registry: 0, or a negative
 * code (values untouched). */
int cluster_params_decode(const uint8_t *buf, size_t len, struct sim_params values[SIM_GROUPS]);

/* A relay's question for the owner's parameters (answered with a
 * parameters message): 8 bytes. */
#define CLUSTER_ASK_SIZE 8
/* The question into buf: CLUSTER_ASK_SIZE, or PROTO_E_NOSPACE. */
int cluster_ask_encode(uint8_t *buf, size_t cap);
/* 0, or a negative code. */
int cluster_ask_decode(const uint8_t *buf, size_t len);

/* True if s[0..len) is 1..max characters of [A-Za-z0-9_-] (a node id,
 * a room name, a single subject token). */
bool cluster_is_token(const char *s, size_t len, size_t max);

/* True if name is a room name ([A-Za-z0-9_-], 1..PROTO_ROOM_MAX). */
bool cluster_is_room_name(const char *name, size_t len);

#endif
