/*
 * ctl_snap — decoding whole snapshots into arrays that grow as needed, and
 * the figures flockctl derives from them (polarization).
 *
 * Never: I/O. Threading: one ctl_snap per thread.
 * Memory: the arrays belong to the ctl_snap; free with ctl_snap_free().
 */
#ifndef FLOCKCTL_SNAP_H
#define FLOCKCTL_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "proto_snapshot.h"

struct ctl_snap {
    struct proto_snapshot s; /* arrays owned by this struct */
};

/*
 * Decodes buf[0..len) with proto_snapshot_decode(), growing the arrays to
 * the header's counts first. Returns 0, a negative proto_status from the
 * codec, or PROTO_E_NOSPACE if memory ran out. On success cs->s holds the
 * snapshot until the next call.
 */
int ctl_snap_decode(struct ctl_snap *cs, const uint8_t *buf, size_t len);

/* Frees the arrays; the struct may be decoded into again. */
void ctl_snap_free(struct ctl_snap *cs);

/*
 * Polarization of the boids' decoded headings: the length of the mean of
 * their unit heading vectors, 0 (disordered) .. 1 (all aligned); 0 for no
 * boids.
 */
double ctl_snap_polarization(const struct proto_snapshot *s);

#endif
