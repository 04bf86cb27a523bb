/*
 * redirect.c — the https location of a plain request (see redirect.h).
 */
#include "redirect.h"

#include "proto.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* The Host header's host part if it is a plain name or address, into
 * out[cap]: true, or false if there is none fit to use. */
static bool host_of(struct lws *wsi, char *out, size_t cap)
{
    char h[256];
    int n = lws_hdr_copy(wsi, h, sizeof h, WSI_TOKEN_HOST);
    if (n <= 0)
        return false;
    size_t end = (size_t)n;
    if (h[0] == '[') { /* an IPv6 literal: up to its bracket */
        char *close = strchr(h, ']');
        if (!close)
            return false;
        end = (size_t)(close - h) + 1;
        for (size_t i = 1; i + 1 < end; i++)
            if (!strchr("0123456789abcdefABCDEF:.", h[i]))
                return false;
    } else {
        char *colon = strchr(h, ':');
        if (colon)
            end = (size_t)(colon - h);
        for (size_t i = 0; i < end; i++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", h[i]))
                return false;
    }
    if (end == 0 || end >= cap)
        return false;
    memcpy(out, h, end);
    out[end] = '\0';
    return true;
}

/* The address this connection came to, as a URL host ("[::1]" for IPv6). */
static void local_host(struct lws *wsi, char *out, size_t cap)
{
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    char ip[64] = "localhost";
    int fd = lws_get_socket_fd(wsi);
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&a, &alen) == 0) {
        if (a.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, ip, sizeof ip);
        else if (a.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, ip, sizeof ip);
    }
    const char *mapped = strncmp(ip, "::ffff:", 7) == 0 ? ip + 7 : ip;
    bool v6 = strchr(mapped, ':') != NULL;
    snprintf(out, cap, "%s%s%s", v6 ? "[" : "", mapped, v6 ? "]" : "");
}

/* The path (and query) is printable ASCII without spaces. */
static bool is_plain_path(const char *p, size_t len)
{
    if (len == 0 || p[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++)
        if (p[i] <= ' ' || p[i] > '~')
            return false;
    return true;
}

bool redirect_came_to(struct lws *wsi, int port)
{
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    int fd = lws_get_socket_fd(wsi);
    if (port <= 0 || fd < 0 || getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
        return false;
    if (a.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&a)->sin6_port) == port;
    return a.ss_family == AF_INET && ntohs(((struct sockaddr_in *)&a)->sin_port) == port;
}

int redirect_location(struct lws *wsi, int tls_port, char *out, size_t cap)
{
    char path[REDIRECT_PATH_MAX + 2], query[REDIRECT_PATH_MAX + 1];
    char *uri;
    int plen;
    if (lws_http_get_uri_and_method(wsi, &uri, &plen) < 0 || plen <= 0 || plen > REDIRECT_PATH_MAX)
        return PROTO_E_BAD_ARG;
    memcpy(path, uri, (size_t)plen);
    /* lws keeps the query's parts apart: joined again with '&'. */
    int parts = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS) > 0 ? INT32_MAX : 0;
    for (int i = 0; i < parts; i++) {
        int q = lws_hdr_copy_fragment(wsi, query, sizeof query, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (q < 0)
            break;
        if ((size_t)plen + 1 + (size_t)q > REDIRECT_PATH_MAX)
            return PROTO_E_BAD_ARG;
        path[plen++] = i ? '&' : '?';
        memcpy(path + plen, query, (size_t)q);
        plen += q;
    }
    if (!is_plain_path(path, (size_t)plen))
        return PROTO_E_BAD_ARG;
    char host[300];
    if (!host_of(wsi, host, sizeof host))
        local_host(wsi, host, sizeof host);
    char port[16] = "";
    if (tls_port != 443)
        snprintf(port, sizeof port, ":%d", tls_port);
    int n = snprintf(out, cap, "https://%s%s%.*s", host, port, plen, path);
    return n < 0 || (size_t)n >= cap ? PROTO_E_NOSPACE : n;
}
