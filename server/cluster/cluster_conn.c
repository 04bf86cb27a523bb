/*
 * cluster_conn.c — the NATS connection of a node (see cluster.h): the
 * servers, signing in and TLS as the settings ask, the first connection,
 * and what libnats reports on its threads afterwards. Calls no other
 * file of the cluster (cluster_internal.h).
 *
 * The first connection is tried once, at once. A server that answered
 * and refused (the credentials, TLS, the sign-in files) stops the node's
 * start with the reason; servers that cannot be reached are tried again
 * in the background, as they always were (a node may start before NATS).
 * A URL is never shown with its password or token.
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster_internal.h"

#include "clock.h"
#include "cluster_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define REFUSED_LOG_S 10.0 /* a permission refused is said at most this often */

/* cluster_create's reason when a server refused: a static buffer, since
 * cluster_create runs on the main thread only (cluster.h). */
static char reason[1024];

static const char *failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static const char *failed(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return reason;
}

static bool has(const char *s)
{
    return s && s[0];
}

/* The reason libnats gave for the last error on this thread, without the
 * "(file.c:LINE): " it starts with (never NULL). */
static const char *last_error(void)
{
    const char *text = nats_GetLastError(NULL);
    const char *cut = text && text[0] == '(' ? strstr(text, "): ") : NULL;
    text = cut ? cut + 3 : text;
    return text && text[0] ? text : "no reason given";
}

/* Appends s (n bytes) to out (cap bytes, *used of them used), cut short
 * if it does not fit. */
static void append(char *out, size_t cap, size_t *used, const char *s, size_t n)
{
    size_t room = *used < cap ? cap - *used - 1 : 0;
    n = n < room ? n : room;
    memcpy(out + *used, s, n);
    *used += n;
    out[*used] = '\0';
}

void cluster_show_urls(const char *urls, char *out, size_t cap)
{
    size_t used = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (const char *url = urls; url && *url;) {
        size_t len = strcspn(url, ",");
        const char *end = url + len, *start = url, *at = NULL;
        for (const char *p = url; p + 3 <= end; p++)
            if (memcmp(p, "://", 3) == 0) {
                start = p + 3;
                break;
            }
        for (const char *p = start; p < end; p++)
            at = *p == '@' ? p : at;
        if (used > 0)
            append(out, cap, &used, ",", 1);
        append(out, cap, &used, url, (size_t)(start - url));
        if (at) { /* USER:PASSWORD@ shows its user, TOKEN@ nothing */
            const char *colon = memchr(start, ':', (size_t)(at - start));
            append(out, cap, &used, start, colon ? (size_t)(colon - start) : 0);
            append(out, cap, &used, colon ? ":***@" : "***@", colon ? 5 : 4);
            start = at + 1;
        }
        append(out, cap, &used, start, (size_t)(end - start));
        url = *end ? end + 1 : end;
    }
}

/* TLS is asked for: a tls:// URL in the list, or a certificate file. */
static bool is_tls(const struct cluster_config *cfg)
{
    if (has(cfg->ca) || has(cfg->cert))
        return true;
    for (const char *url = cfg->url; url; url = strchr(url, ',') ? strchr(url, ',') + 1 : NULL)
        if (strncasecmp(url + strspn(url, " \t"), "tls://", 6) == 0)
            return true;
    return false;
}

void cluster_describe(const struct cluster_config *cfg, char *out, size_t cap)
{
    char urls[1100];
    cluster_show_urls(cfg->url, urls, sizeof urls);
    const char *tls = is_tls(cfg) ? "TLS" : "no TLS";
    if (has(cfg->user))
        snprintf(out, cap, "%s (%s, signed in as %s)", urls, tls, cfg->user);
    else if (has(cfg->token))
        snprintf(out, cap, "%s (%s, signed in with a token)", urls, tls);
    else if (has(cfg->creds))
        snprintf(out, cap, "%s (%s, signed in with the credentials of %s)", urls, tls, cfg->creds);
    else
        snprintf(out, cap, "%s (%s%s)", urls, tls,
                 strchr(cfg->url, '@') ? ", signed in as the URL says" : "");
}

/* The URLs of cfg as libnats takes them (split at commas): 0, or
 * PROTO_E_BAD_ARG if libnats takes none. */
static int set_servers(natsOptions *o, const char *url)
{
    char copy[1024];
    const char *list[32];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", url);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && n < 32;
         tok = strtok_r(NULL, ",", &save))
        list[n++] = tok;
    return n > 0 && natsOptions_SetServers(o, list, n) == NATS_OK ? 0 : PROTO_E_BAD_ARG;
}

/* Signing in and TLS as cfg asks: 0, or PROTO_E_BAD_ARG with *err naming
 * the file libnats could not load (its content: that it can be read was
 * checked with the settings), or PROTO_E_INTERNAL. */
static int set_security(natsOptions *o, const struct cluster_config *cfg, const char **err)
{
    natsStatus s = NATS_OK;
    if (has(cfg->user))
        s = natsOptions_SetUserInfo(o, cfg->user, cfg->password);
    if (s == NATS_OK && has(cfg->token))
        s = natsOptions_SetToken(o, cfg->token);
    if (s == NATS_OK && has(cfg->creds))
        s = natsOptions_SetUserCredentialsFromFiles(o, cfg->creds, NULL);
    if (s == NATS_OK && is_tls(cfg))
        s = natsOptions_SetSecure(o, true);
    if (s != NATS_OK) {
        *err = failed("cannot set up signing in and TLS to NATS: %s", last_error());
        return PROTO_E_INTERNAL;
    }
    if (has(cfg->ca) && natsOptions_LoadCATrustedCertificates(o, cfg->ca) != NATS_OK) {
        *err = failed("--nats-ca %s: %s", cfg->ca, last_error());
        return PROTO_E_BAD_ARG;
    }
    if (has(cfg->cert) && natsOptions_LoadCertificatesChain(o, cfg->cert, cfg->key) != NATS_OK) {
        *err = failed("--nats-cert %s, --nats-key %s: %s", cfg->cert, cfg->key, last_error());
        return PROTO_E_BAD_ARG;
    }
    return 0;
}

static void on_disconnected(natsConnection *nc, void *arg)
{
    (void)nc;
    struct cluster *c = arg;
    atomic_store(&c->connected, false);
    COUNT(c, disconnects);
    fprintf(stderr, "flockd: cluster: NATS lost; owned rooms tick on, relayed rooms wait\n");
}

/* The first connection, made in the background when NATS was not there
 * at start (a connect never blocks start-up). */
static void on_connected(natsConnection *nc, void *arg)
{
    (void)nc;
    struct cluster *c = arg;
    atomic_store(&c->connected, true);
    fprintf(stderr, "flockd: cluster: connected to NATS\n");
}

static void on_reconnected(natsConnection *nc, void *arg)
{
    (void)nc;
    struct cluster *c = arg;
    atomic_store(&c->reconnected_ns, clock_mono_ns());
    atomic_store(&c->reconnected, true);
    atomic_store(&c->connected, true);
    COUNT(c, reconnects);
    fprintf(stderr, "flockd: cluster: NATS is back\n");
}

/* libnats gives up reconnecting when a server refuses the same
 * credentials twice: said, since the node then stays apart until it is
 * restarted. Not while cluster_destroy() closes the connection. */
static void on_closed(natsConnection *nc, void *arg)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->stop_lock);
    bool stopping = c->stop;
    pthread_mutex_unlock(&c->stop_lock);
    if (stopping)
        return;
    const char *text = NULL;
    natsConnection_GetLastError(nc, &text);
    fprintf(stderr,
            "flockd: cluster: NATS closed the connection for good (%s); this node stays "
            "apart from the cluster until it is restarted\n",
            text && text[0] ? text : "no reason given");
}

/* Refusals after the start: credentials refused on a reconnect, and
 * subjects this node's NATS user may not use (at most once every
 * REFUSED_LOG_S, as each publish would say it again). */
static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *arg)
{
    (void)sub;
    struct cluster *c = arg;
    if (err != NATS_CONNECTION_AUTH_FAILED && err != NATS_NOT_PERMITTED)
        return;
    int64_t now = clock_mono_ns(), last = atomic_load(&c->refused_ns);
    if (err == NATS_NOT_PERMITTED && ((last && now - last < (int64_t)(REFUSED_LOG_S * 1e9)) ||
                                      !atomic_compare_exchange_strong(&c->refused_ns, &last, now)))
        return;
    const char *text = NULL;
    natsConnection_GetLastError(nc, &text);
    fprintf(stderr, "flockd: cluster: NATS refused %s: %s\n",
            err == NATS_NOT_PERMITTED ? "a subject" : "the credentials",
            text && text[0] ? text : "no reason given");
}

/* The options of the connection: 0, or a negative PROTO_E* with *err. */
static int set_options(struct cluster *c, const char **err)
{
    *err = "cannot set up the NATS connection";
    if (natsOptions_Create(&c->opts) != NATS_OK)
        return PROTO_E_INTERNAL;
    natsOptions *o = c->opts;
    if (set_servers(o, c->cfg.url) < 0) {
        *err = "--nats: not a NATS URL list";
        return PROTO_E_BAD_ARG;
    }
    int rc = set_security(o, &c->cfg, err);
    if (rc < 0)
        return rc;
    if (natsOptions_SetName(o, c->node) != NATS_OK ||
        natsOptions_SetTimeout(o, WAIT_MS) != NATS_OK ||
        natsOptions_SetMaxReconnect(o, -1) != NATS_OK ||
        natsOptions_SetReconnectWait(o, 250) != NATS_OK ||
        natsOptions_SetPingInterval(o, 1000) != NATS_OK ||
        natsOptions_SetMaxPingsOut(o, 2) != NATS_OK ||
        natsOptions_SetReconnectBufSize(o, 1 << 20) != NATS_OK ||
        natsOptions_SetDisconnectedCB(o, on_disconnected, c) != NATS_OK ||
        natsOptions_SetReconnectedCB(o, on_reconnected, c) != NATS_OK ||
        natsOptions_SetClosedCB(o, on_closed, c) != NATS_OK ||
        natsOptions_SetErrorHandler(o, on_error, c) != NATS_OK)
        return PROTO_E_INTERNAL;
    return 0;
}

/* A failed first connection that a server answered: the credentials or
 * TLS refused, an error it sent (NATS_ERR, as is a credentials file
 * libnats cannot use), or a server that hung up before its first answer
 * (as one that verifies its clients does to a node without a
 * certificate). These stop the start; no server reached, a timeout and a
 * connection cut are tried again in the background. */
static bool is_refusal(natsStatus s)
{
    return s == NATS_CONNECTION_AUTH_FAILED || s == NATS_SSL_ERROR ||
           s == NATS_SECURE_CONNECTION_WANTED || s == NATS_SECURE_CONNECTION_REQUIRED ||
           s == NATS_NOT_PERMITTED || s == NATS_ERR || s == NATS_INVALID_ARG ||
           s == NATS_NOT_FOUND || s == NATS_PROTOCOL_ERROR;
}

/* Why a server refused the first connection (s), naming the URLs. */
static const char *refusal(const struct cluster_config *cfg, natsStatus s, const char *text)
{
    char urls[1100];
    cluster_show_urls(cfg->url, urls, sizeof urls);
    switch (s) {
    case NATS_CONNECTION_AUTH_FAILED:
        return failed("NATS at %s refused the credentials: %s", urls, text);
    case NATS_SECURE_CONNECTION_WANTED:
        return failed("NATS at %s does not offer TLS, which %s asks for", urls,
                      has(cfg->ca)     ? "--nats-ca"
                      : has(cfg->cert) ? "--nats-cert"
                                       : "tls://");
    case NATS_SSL_ERROR:
    case NATS_SECURE_CONNECTION_REQUIRED:
        return failed(
            "TLS with NATS at %s failed: %s%s", urls, text,
            has(cfg->ca) ? "" : " (--nats-ca names the authority that signed its certificate)");
    case NATS_PROTOCOL_ERROR:
        return failed("NATS at %s hung up: %s%s", urls, text,
                      is_tls(cfg) && !has(cfg->cert)
                          ? " (a NATS server that verifies its clients wants --nats-cert and "
                            "--nats-key)"
                          : "");
    default:
        return failed("cannot connect to NATS at %s: %s", urls, text);
    }
}

int cluster__connect(struct cluster *c, const char **err)
{
    int rc = set_options(c, err);
    if (rc < 0)
        return rc;
    natsStatus s = natsConnection_Connect(&c->nc, c->opts);
    if (s != NATS_OK && is_refusal(s)) {
        *err = refusal(&c->cfg, s, last_error());
        return PROTO_E_BAD_ARG;
    }
    if (s != NATS_OK) { /* no server reached: from now on in the background */
        char urls[1100];
        cluster_show_urls(c->cfg.url, urls, sizeof urls);
        fprintf(stderr, "flockd: cluster: NATS at %s not reached (%s); trying again meanwhile\n",
                urls, last_error());
        if (natsOptions_SetRetryOnFailedConnect(c->opts, true, on_connected, c) != NATS_OK) {
            *err = "cannot set up the NATS connection";
            return PROTO_E_INTERNAL;
        }
        s = natsConnection_Connect(&c->nc, c->opts);
    }
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
        *err = refusal(&c->cfg, s, last_error());
        return PROTO_E_BAD_ARG;
    }
    atomic_store(&c->connected, s == NATS_OK);
    return 0;
}

natsStatus cluster__ask(struct cluster *c, const char *room, int64_t wait_ms, natsMsg **reply)
{
    uint8_t ask[CLUSTER_ASK_SIZE];
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.ask", room);
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    *reply = NULL;
    natsStatus s = cluster_ask_encode(ask, sizeof ask) > 0 ? natsInbox_Create(&inbox) : NATS_ERR;
    if (s == NATS_OK)
        s = natsConnection_SubscribeSync(&sub, c->nc, inbox);
    if (s == NATS_OK)
        s = natsConnection_PublishRequest(c->nc, subject, inbox, ask, sizeof ask);
    if (s == NATS_OK)
        s = natsSubscription_NextMsg(reply, sub, wait_ms);
    cluster__unsubscribe(&sub);
    natsInbox_Destroy(inbox);
    return s;
}
