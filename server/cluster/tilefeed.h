/*
 * tilefeed — version 3 tiles between the nodes of a cluster
 * (server/cluster/CLUSTER.md §3.7, §3.8): a relay tells the owner of a room
 * which super-tiles its clients look at (a view message: per audience,
 * grid shift and sample, a bitmap of super-tiles), and the owner sends it,
 * per snapshot, exactly those as version 3 parts (a tiles message) with
 * what its clients' plans weigh (every tile's count of boids) and what
 * their frames' headers say; the relay makes tilestates of them
 * (tiles_state_given()) and serves its clients from those with the code
 * the owner serves its own with (view.h), so that their frames are the
 * same.
 *
 * The owner keeps a feed per relay node: what it asked for and what it
 * was sent lately, the bases its next deltas name (a part is a delta on
 * the newest of its super-tile the relay got, or a key). Parts are taken
 * from the owner's tilesets (tiles_set_part()), so a part the owner's own
 * clients take is encoded once for both. The relay keeps an inbox per
 * room: the tilestates of the last snapshots per audience, on which the
 * next message's deltas (parts and counts) are decoded. A relay that
 * finds a base missing (a message lost) asks for a restart: every part of
 * the next message is a key.
 *
 * Everything from NATS is network input: decoders check magic, version,
 * every length and value, each part's tile hash and its boids against the
 * counts before anything is used, and refuse the message otherwise with a
 * negative PROTO_E_* code.
 *
 * Never: NATS calls, clocks (times come in), locks. Threading: a feed or
 * an inbox is used by one thread at a time (the caller's lock).
 * Memory: *_create() allocate, *_destroy() free; a message built is the
 * caller's buffer (grown with realloc); tilesets made by an inbox carry
 * one reference each for the caller (struct frame_v3 owns them).
 */
#ifndef FLOCKD_TILEFEED_H
#define FLOCKD_TILEFEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "proto_command.h"
#include "proto_v3.h"
#include "tileneed.h"
#include "tiles.h"

#define TILEFEED_HEADER       40 /* bytes before a tiles message's audiences */
#define TILEFEED_AUDIENCE_MAX TILENEED_AUDIENCES

/* ---- the view message: what a relay's clients look at ---- */

struct tilefeed_want {
    char node[PROTO_NODE_MAX + 1]; /* the relay: tiles go to flockd.room.NAME.tiles.NODE */
    bool restart;                  /* every part of the next tiles message a key */
    uint8_t cols, rows;            /* the relay's tile grid (must be the owner's) */
    struct tileneed_wants w;       /* audiences and layers (bitmaps allocated) */
};

/* want into *buf (malloc'd, the caller frees it): its length, or a
 * negative code. */
int tilefeed_want_encode(const struct tilefeed_want *want, uint8_t **buf);
/* A view message into *out (free with tilefeed_want_free()): 0, or a
 * negative code (nothing allocated). */
int tilefeed_want_decode(const uint8_t *buf, size_t len, struct tilefeed_want *out);
void tilefeed_want_free(struct tilefeed_want *want);

/* ---- the owner: a feed per relay node ---- */

struct tilefeed;

/* A feed for relay node `node`; NULL if memory ran out. */
struct tilefeed *tilefeed_create(const char *node);
void tilefeed_destroy(struct tilefeed *f);
const char *tilefeed_node(const struct tilefeed *f);

/* The relay asked for want (taken: want->w is emptied) at `now`
 * (monotonic ns). Layers it still asks for keep their bases, unless it
 * asks for a restart. */
void tilefeed_set_want(struct tilefeed *f, struct tilefeed_want *want, int64_t now);
/* When it last asked (tilefeed_set_want()). */
int64_t tilefeed_seen(const struct tilefeed *f);

/*
 * The tiles message of frame fr (its version 3 tilesets) under lease term
 * for the relay, into *buf (grown with realloc; *cap its size): its
 * length, 0 if fr holds nothing the relay asked for, or a negative code
 * (PROTO_E_INTERNAL: no memory). Parts are encoded with enc when no thread
 * did yet. What it holds becomes the relay's bases once
 * tilefeed_sent(f, true) says it went; tilefeed_sent(f, false) forgets
 * every base instead (the next message is keys).
 */
ptrdiff_t tilefeed_message(struct tilefeed *f, const struct frame *fr, uint64_t term,
                           struct proto_v3_encoder *enc, uint8_t **buf, size_t *cap);
void tilefeed_sent(struct tilefeed *f, bool went);

/* ---- the relay: an inbox per room ---- */

struct tileinbox;

/* An inbox for a room of grid g whose tilestates note their clients'
 * plans in need (referenced); NULL if memory ran out. */
struct tileinbox *tileinbox_create(const struct tiles_grid *g, struct tileneed *need);
void tileinbox_destroy(struct tileinbox *in);

/* What a tiles message brought. */
struct tileinbox_out {
    uint64_t term, frame_seq;
    struct frame_v3 v3; /* the tilesets, one reference each: the caller's */
    uint32_t parts;     /* parts decoded */
    bool restart;       /* a base was missing: ask the owner for keys */
};

/*
 * Decodes a tiles message into *out. A message of a term above the
 * inbox's forgets every state kept (a new owner), one below it is refused
 * (PROTO_E_STALE... see below). 0 and *out (free its tilesets with
 * tileinbox_out_free()), or a negative code: PROTO_E_TRUNCATED,
 * _BAD_MAGIC, _BAD_VERSION, _BAD_VALUE, _BAD_LENGTH, _BAD_BODY,
 * _HASH_MISMATCH, _OVER_LIMIT, _INTERNAL; then out->restart says whether
 * to ask for keys, and nothing else is set.
 */
int tileinbox_take(struct tileinbox *in, const uint8_t *buf, size_t len, struct tileinbox_out *out);
void tileinbox_out_free(struct tileinbox_out *out);

/* The term the inbox follows (0: none yet). */
uint64_t tileinbox_term(const struct tileinbox *in);

#endif
