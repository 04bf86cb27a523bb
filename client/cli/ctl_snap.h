/*
 * ctl_snap — decoding whole snapshots of any version into arrays that
 * grow as needed, and the figures flockctl derives from them
 * (polarization).
 *
 * Version 1 snapshots decode on their own; version 2 frames (PROTOCOL.md
 * §11) and version 3 view frames (§12) through a decoder that keeps the
 * bases of the stream, created at the version's first frame and recreated
 * larger when a frame holds more boids, parts or obstacles than it takes
 * (its bases are lost then: the next delta is refused no_base until a key
 * comes; version 3's is sized with room to spare, from proto_v3_scan()).
 * All end in the same struct proto_snapshot, so the callers print and
 * measure one layout; a version 3 frame also leaves its header, parts and
 * the boids' ids.
 *
 * Never: I/O. Threading: one ctl_snap per thread.
 * Memory: the arrays and the decoder belong to the ctl_snap; free with
 * ctl_snap_free().
 */
#ifndef FLOCKCTL_SNAP_H
#define FLOCKCTL_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "proto_snapshot.h"
#include "proto_v2.h"
#include "proto_v3.h"

struct cJSON;

struct ctl_snap {
    struct proto_snapshot s;   /* arrays owned by this struct; version 3: no runs, epoch 0 */
    int version;               /* of the snapshot in s: 1, 2 or 3 */
    struct proto_v2_header v2; /* version 2: the frame's header (kind, seq, gaps, hashes) */
    struct proto_v2_decoder *dec;
    uint32_t dec_boids, dec_obstacles; /* what dec takes */
    /* Version 3: the frame's header and shape; the decoded frame (parts
     * and their fields; owned by dec3, valid until the next call on this
     * ctl_snap); the ids of the boids of s, in the same order. */
    struct proto_v3_header v3h;
    struct proto_v3_shape v3_shape;
    const struct proto_v3_frame *v3;
    uint32_t *ids;
    size_t ids_cap;
    struct proto_v3_decoder *dec3;
    uint32_t dec3_boids, dec3_parts, dec3_obstacles; /* what dec3 takes */
    uint32_t cells; /* the stream's field cells (its welcome's), 0: the default */
};

/*
 * Decodes buf[0..len), a snapshot of either version (by its version byte),
 * growing the arrays to the header's counts first. Returns 0, a negative
 * proto_status from the codec (PROTOCOL.md §4.6, §11.7), or
 * PROTO_E_NOSPACE if memory ran out. On success cs->s holds the snapshot
 * until the next call; on failure cs->s is unspecified and, for version 2,
 * the bases held are unchanged.
 */
int ctl_snap_decode(struct ctl_snap *cs, const uint8_t *buf, size_t len);

/* A welcome starts a new stream (§11.1): the bases are forgotten, and
 * version 3's field cells taken from its stream.field.cells (welcome may
 * be NULL: the default). */
void ctl_snap_welcome(struct ctl_snap *cs, const struct cJSON *welcome);

/* Frees the arrays and the decoder; the struct may be decoded into again. */
void ctl_snap_free(struct ctl_snap *cs);

/*
 * Polarization of the boids' decoded headings: the length of the mean of
 * their unit heading vectors, 0 (disordered) .. 1 (all aligned); 0 for no
 * boids.
 */
double ctl_snap_polarization(const struct proto_snapshot *s);

#endif
