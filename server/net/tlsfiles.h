/*
 * tlsfiles — the certificate and private key flockd serves https:// and
 * wss:// with, checked before they are used: at start-up (a bad pair
 * stops flockd with a message naming the file) and before a SIGHUP reload
 * replaces the pair in use (a bad pair is refused and the old one stays).
 *
 * A pair is good when both files are readable PEM, the key is the
 * certificate's, and `now` lies inside the certificate's validity.
 *
 * Never: sockets, lws. Threading: reentrant.
 */
#ifndef FLOCKD_TLSFILES_H
#define FLOCKD_TLSFILES_H

#include <stddef.h>
#include <stdint.h>

/*
 * Checks the pair cert / key at `now` (seconds since the epoch). Returns 0
 * and the certificate's expiry in *not_after (seconds since the epoch; may
 * be NULL), or a negative PROTO_E_* code with a message naming the file in
 * why[0..cap): PROTO_E_NOT_FOUND (a file is missing or unreadable),
 * PROTO_E_BAD_VALUE (a file holds no PEM certificate / private key, or
 * dates that cannot be read), PROTO_E_BAD_ARG (the key is not the
 * certificate's), PROTO_E_OUT_OF_RANGE (the certificate expired before
 * now, or is valid only after now).
 */
int tlsfiles_check(const char *cert, const char *key, int64_t now, int64_t *not_after, char *why,
                   size_t cap);

#endif
