/*
 * tileneed — what the version 3 clients of a room on a relay node look at
 * lately (server/cluster/CLUSTER.md §3.7): per audience, grid shift and
 * sample (a layer), the super-tiles their frames held and, around a view
 * that moved lately, a ring of one super-tile, so that a view that pans
 * finds its next super-tiles already there (a still view costs only its
 * own). A relay asks the room's owner for exactly
 * these (and lets go of what nobody looked at for a while); its tilestates
 * point at it so that each client's frame notes its plan here
 * (view_frame()).
 *
 * Time is counted in epochs, which the caller advances (the cluster's
 * steward, every step): a super-tile is wanted while it was noted within
 * the last `linger` epochs.
 *
 * Never: sockets, clocks, NATS. Threading: any thread notes (one lock);
 * references are atomic. Memory: tileneed_create() allocates, each new
 * layer allocates its stamps (at most TILENEED_LAYERS), the last
 * tileneed_release() frees everything; tileneed_take() fills a caller's
 * struct whose bitmaps it allocates (tileneed_wants_free()).
 */
#ifndef FLOCKD_TILENEED_H
#define FLOCKD_TILENEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Audiences: 0 every boid, 1..31 an rts team's fog (fog.h), and the
 * delayed spectators'. */
#define TILENEED_DELAYED   255
#define TILENEED_LAYERS    16 /* layers noted at once; the stalest goes for a new one */
#define TILENEED_AUDIENCES (TILENEED_LAYERS + 2) /* the layers' and two more */

struct tileneed;

/* A need for a grid of cols x rows tiles; NULL if memory ran out. */
struct tileneed *tileneed_create(uint8_t cols, uint8_t rows);
struct tileneed *tileneed_ref(struct tileneed *n);
void tileneed_release(struct tileneed *n);

/* The epoch now (a client notes its plan again when it changes). */
uint32_t tileneed_epoch(const struct tileneed *n);

/*
 * A client of `audience` takes super-tiles [rect_x, + cols) x [rect_y, +
 * rows) of the grid at shift and sample (wrapping around it): they (and,
 * with `ring`, a ring of one around them) are wanted from now on.
 * Out-of-range values are ignored.
 */
void tileneed_note(struct tileneed *n, unsigned audience, unsigned shift, unsigned sample,
                   uint32_t rect_x, uint32_t rect_y, uint32_t cols, uint32_t rows, bool ring);

/* True once after a note that wanted a super-tile not wanted before (the
 * caller asks its owner at once instead of at its next round). */
bool tileneed_take_news(struct tileneed *n);

/* One layer wanted: a bit per super-tile of its grid at `shift`, row by
 * row (bit st of byte st / 8). */
struct tileneed_layer {
    uint8_t audience, shift, sample;
    uint32_t gc, gr;
    uint8_t *bits; /* (gc * gr + 7) / 8 bytes */
};

/* What is wanted: the audiences (ascending) whose snapshots the clients
 * need at all, and the layers (ascending by audience, shift, sample). */
struct tileneed_wants {
    uint8_t audiences[TILENEED_AUDIENCES];
    uint32_t naudiences;
    struct tileneed_layer layers[TILENEED_LAYERS];
    uint32_t nlayers;
};

/*
 * Into *out: the layers noted within the last `linger` epochs (a layer
 * noted no longer is forgotten), their audiences and the audiences in
 * `also` (nalso of them: those a relay serves before any client noted a
 * plan). 0, or PROTO_E_INTERNAL (no memory: *out is empty). Free with
 * tileneed_wants_free().
 */
int tileneed_take(struct tileneed *n, uint32_t linger, const uint8_t *also, uint32_t nalso,
                  struct tileneed_wants *out);

/* The next epoch begins. */
void tileneed_advance(struct tileneed *n);
void tileneed_wants_free(struct tileneed_wants *w);

/* Super-tiles the layers of w want, together. */
uint64_t tileneed_wants_count(const struct tileneed_wants *w);

#endif
