/*
 * buildid — what identifies this flockd build in the files it writes
 * (checkpoints, command logs): runs of the simulation are bit-identical
 * only on the same build and the same CPU path, so a replay compares
 * this id with the one in a log and says when they differ.
 *
 * The id is "flockd VERSION exe:CRC cpu:PATH": the release, the CRC-32
 * of the executable's bytes (any rebuild changes it) and, on x86-64, which
 * of the core's compiled paths the CPU takes (avx2 or base).
 *
 * An edge module: reads /proc/self/exe once. Threading: call it first
 * from one thread; afterwards the string is read-only.
 */
#ifndef FLOCKD_BUILDID_H
#define FLOCKD_BUILDID_H

/* This build's id (a static string, at most CKPT_BUILD_MAX bytes). */
const char *buildid(void);

#endif
