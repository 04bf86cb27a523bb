/*
 * tlsfiles.c — the certificate / key pair checks of tlsfiles.h, with
 * OpenSSL (which libwebsockets serves TLS with).
 */
#define _DEFAULT_SOURCE /* timegm */
#include "tlsfiles.h"

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

/* t as seconds since the epoch: 0, or -1 if it cannot be read. */
static int asn1_seconds(const ASN1_TIME *t, int64_t *out)
{
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return -1;
    *out = (int64_t)timegm(&tm);
    return 0;
}

static int check_validity(const X509 *x, const char *cert, int64_t now, int64_t *not_after,
                          char *why, size_t cap)
{
    int64_t from, until;
    if (asn1_seconds(X509_get0_notBefore(x), &from) ||
        asn1_seconds(X509_get0_notAfter(x), &until)) {
        snprintf(why, cap, "certificate %s: its validity dates cannot be read", cert);
        return TLSFILES_EPARSE;
    }
    char day[32];
    if (now > until) {
        time_t t = (time_t)until;
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
        snprintf(why, cap, "certificate %s expired on %s", cert, day);
        return TLSFILES_EEXPIRED;
    }
    if (now < from) {
        time_t t = (time_t)from;
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
        snprintf(why, cap, "certificate %s is valid only from %s", cert, day);
        return TLSFILES_ENOTYET;
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
        return TLSFILES_EREAD;
    X509 *x = PEM_read_X509(cf, NULL, NULL, NULL);
    fclose(cf);
    if (!x) {
        snprintf(why, cap, "certificate %s: no PEM certificate in it", cert);
        ERR_clear_error();
        return TLSFILES_EPARSE;
    }
    int rc = 0;
    FILE *kf = open_file("private key", key, why, cap);
    EVP_PKEY *k = NULL;
    if (!kf) {
        rc = TLSFILES_EREAD;
    } else {
        k = PEM_read_PrivateKey(kf, NULL, NULL, NULL); /* no passphrase: an encrypted key fails */
        fclose(kf);
        if (!k) {
            snprintf(why, cap, "private key %s: no unencrypted PEM private key in it", key);
            rc = TLSFILES_EPARSE;
        } else if (X509_check_private_key(x, k) != 1) {
            snprintf(why, cap, "private key %s is not the key of certificate %s", key, cert);
            rc = TLSFILES_EMISMATCH;
        }
    }
    if (rc == 0)
        rc = check_validity(x, cert, now, not_after, why, cap);
    EVP_PKEY_free(k);
    X509_free(x);
    ERR_clear_error();
    return rc;
}
