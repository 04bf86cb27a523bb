/*
 * base — the error codes of the small utilities in this folder (tables,
 * maps, counts, text buffers), which know nothing of the protocol or the
 * world: a caller that answers a client turns them into its own codes.
 *
 * Convention (server/README.md, "Error convention"): 0 or a count on
 * success, one of these negative codes on failure.
 * Never: I/O, allocation. Threading: none (constants).
 */
#ifndef FLOCKD_BASE_H
#define FLOCKD_BASE_H

enum base_status {
    BASE_OK = 0,
    BASE_EINVAL = -1,  /* an impossible argument: a size, a reserved or duplicate key */
    BASE_EFULL = -2,   /* the structure holds its fixed capacity */
    BASE_ENOMEM = -3,  /* an allocation failed */
    BASE_ENOSPACE = -4 /* the text did not fit its buffer */
};

/* "invalid argument", "full", ...: static text for a log line; "unknown"
 * for anything else. */
const char *base_strerror(int code);

#endif
