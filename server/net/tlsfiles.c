/*
 * tlsfiles.c — the certificate / key pair checks of tlsfiles.h, with
 * OpenSSL (which libwebsockets serves TLS with).
 */
#define _DEFAULT_SOURCE /* timegm */
#include "tlsfiles.h"

#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* Opens path for reading, or says why not. */
static FILE *open_file(const char *what, const char *path, char *why, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        snprintf(why, cap, "%s %s: %s", what, path, strerror(errno));
    return f;
}

/* t as seconds since the epoch: 0, or PROTO_E_BAD_VALUE if it cannot be
 * read. */
static int asn1_seconds(const ASN1_TIME *t, int64_t *out)
{
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return PROTO_E_BAD_VALUE;
    *out = (int64_t)timegm(&tm);
    return 0;
}

/* The certificate's dates against now: 0 and its expiry in *not_after (if
 * not NULL), or PROTO_E_BAD_VALUE (unreadable) or PROTO_E_OUT_OF_RANGE
 * (expired, not yet valid) with the reason in why. */
static int check_validity(const X509 *x, const char *cert, int64_t now, int64_t *not_after,
                          char *why, size_t cap)
{
    int64_t from, until;
    if (asn1_seconds(X509_get0_notBefore(x), &from) < 0 ||
        asn1_seconds(X509_get0_notAfter(x), &until) < 0) {
        snprintf(why, cap, "certificate %s: its validity dates cannot be read", cert);
        return PROTO_E_BAD_VALUE;
    }
    char day[32];
    if (now > until) {
        time_t t = (time_t)until;
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
        snprintf(why, cap, "certificate %s expired on %s", cert, day);
        return PROTO_E_OUT_OF_RANGE;
    }
    if (now < from) {
        time_t t = (time_t)from;
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
        snprintf(why, cap, "certificate %s is valid only from %s", cert, day);
        return PROTO_E_OUT_OF_RANGE;
    }
    if (not_after)
        *not_after = until;
    return 0;
}

int tlsfiles_check(const char *cert, const char *key, int64_t now, int64_t *not_after, char *why,
                   size_t cap)
{
    FILE *cf = open_file("certificate", cert, why, cap);
    if (!cf)
        return PROTO_E_NOT_FOUND;
    X509 *x = PEM_read_X509(cf, NULL, NULL, NULL);
    fclose(cf);
    if (!x) {
        snprintf(why, cap, "certificate %s: no PEM certificate in it", cert);
        ERR_clear_error();
        return PROTO_E_BAD_VALUE;
    }
    int rc = 0;
    FILE *kf = open_file("private key", key, why, cap);
    EVP_PKEY *k = NULL;
    if (!kf) {
        rc = PROTO_E_NOT_FOUND;
    } else {
        k = PEM_read_PrivateKey(kf, NULL, NULL, NULL); /* no passphrase: an encrypted key fails */
        fclose(kf);
        if (!k) {
            snprintf(why, cap, "private key %s: no unencrypted PEM private key in it", key);
            rc = PROTO_E_BAD_VALUE;
        } else if (X509_check_private_key(x, k) != 1) {
            snprintf(why, cap, "private key %s is not the key of certificate %s", key, cert);
            rc = PROTO_E_BAD_ARG;
        }
    }
    if (rc == 0)
        rc = check_validity(x, cert, now, not_after, why, cap);
    EVP_PKEY_free(k);
    X509_free(x);
    ERR_clear_error();
    return rc;
}
