/*
 * ctl_snap — decoding whole snapshots of either version into arrays that
 * grow as needed, and the figures flockctl derives from them
 * (polarization).
 *
 * Version 1 snapshots decode on their own; version 2 frames (PROTOCOL.md
 * §11) through a decoder that keeps the bases of the stream, created at the
 * first version 2 frame and recreated larger when a frame announces more
 * boids or obstacles than it takes (its bases are lost then: the next delta
 * is refused no_base until a key frame comes). Both end in the same
 * struct proto_snapshot, so the callers print and measure one layout.
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

struct ctl_snap {
    struct proto_snapshot s;   /* arrays owned by this struct */
    int version;               /* of the snapshot in s: 1 or 2 */
    struct proto_v2_header v2; /* version 2: the frame's header (kind, seq, gaps, hashes) */
    struct proto_v2_decoder *dec;
    uint32_t dec_boids, dec_obstacles; /* what dec takes */
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

/* Forgets the version 2 bases: a welcome starts a new stream (§11.1). */
void ctl_snap_forget(struct ctl_snap *cs);

/* Frees the arrays and the decoder; the struct may be decoded into again. */
void ctl_snap_free(struct ctl_snap *cs);

/*
 * Polarization of the boids' decoded headings: the length of the mean of
 * their unit heading vectors, 0 (disordered) .. 1 (all aligned); 0 for no
 * boids.
 */
double ctl_snap_polarization(const struct proto_snapshot *s);

#endif
