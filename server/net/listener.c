/*
 * listener.c — the listening socket flockd opens itself and the accepts
 * its readiness triggers (see listener.h).
 */
#define _GNU_SOURCE

#include "listener.h"

#include "proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- opening ------------------------------------------------------------------ */

/* The address host names: a dotted-quad IPv4 address, or a numeric IPv6
 * one (with a scope for link-local addresses); no name lookup, and none
 * of inet_aton's short forms ("1.2.3"). 0, or PROTO_E_BAD_ARG. */
static int parse_address(const char *host, int port, struct sockaddr_storage *sa, socklen_t *len)
{
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    if (host && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return 0;
    }
    struct addrinfo hints = {
        .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
        .ai_family = AF_INET6,
        .ai_socktype = SOCK_STREAM,
    };
    struct addrinfo *ai = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    if (!host || getaddrinfo(host, service, &hints, &ai) != 0 || !ai)
        return PROTO_E_BAD_ARG;
    bool fits = ai->ai_addrlen <= sizeof *sa;
    if (fits) {
        memcpy(sa, ai->ai_addr, ai->ai_addrlen);
        *len = ai->ai_addrlen;
    }
    freeaddrinfo(ai);
    return fits ? 0 : PROTO_E_BAD_ARG;
}

/* "::" listens on every address, IPv4 ones included (dual stack); any
 * other IPv6 address on itself only. */
static void set_v6only(int fd, const struct sockaddr_storage *sa)
{
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    int only = !IN6_IS_ADDR_UNSPECIFIED(a);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only);
}

/* Why bind() or listen() failed, for the operator. */
static const char *bind_error(int e)
{
    switch (e) {
    case EADDRNOTAVAIL:
        return "--host is not an address of this machine";
    case EADDRINUSE:
        return "the port is in use on that address";
    case EACCES:
        return "no permission to listen on that port";
    default:
        return "cannot listen on that address and port";
    }
}

int listener_open(const char *host, int port, const char **err)
{
    struct sockaddr_storage sa;
    socklen_t len = 0;
    if (parse_address(host, port, &sa, &len) < 0) {
        *err = "--host is not a numeric IPv4 or IPv6 address";
        return PROTO_E_BAD_ARG;
    }
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = errno == EAFNOSUPPORT ? "this machine has no IPv6" : "cannot open a socket";
        return PROTO_E_INTERNAL;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (sa.ss_family == AF_INET6)
        set_v6only(fd, &sa);
    if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        close(fd);
        *err = bind_error(e);
        return e == EADDRNOTAVAIL ? PROTO_E_BAD_ARG : PROTO_E_INTERNAL;
    }
    return fd;
}

int listener_port(int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        return PROTO_E_INTERNAL;
    if (sa.ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&sa)->sin_port);
    if (sa.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&sa)->sin6_port);
    return PROTO_E_INTERNAL;
}

/* ---- accepting ----------------------------------------------------------------- */

/* The listening socket's opaque user data when its connections are plain. */
static char plain_mark;

int listener_adopt(struct lws_vhost *vh, int fd, bool is_plain)
{
    lws_sock_file_fd_type desc = {.filefd = fd};
    struct lws *wsi =
        lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, desc, LISTENER_PROTOCOL, NULL);
    if (!wsi)
        return PROTO_E_INTERNAL; /* lws closed fd */
    lws_set_opaque_user_data(wsi, is_plain ? &plain_mark : NULL);
    return 0;
}

/* accept4() errors that concern one connection only (Linux reports a
 * pending network error of the new connection this way): go on. */
static bool is_connection_error(int e)
{
    return e == EINTR || e == ECONNABORTED || e == EPROTO || e == ENETDOWN || e == ENOPROTOOPT ||
           e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == ENETUNREACH || e == EPERM;
}

/* Out of descriptors or memory: the socket stays readable, so accepting
 * again at once would spin. Stop watching it for LISTENER_PAUSE_US; the
 * waiting connections stay in the kernel's queue meanwhile. */
static void pause_accepting(struct lws *wsi)
{
    lws_rx_flow_control(wsi, 0);
    lws_set_timer_usecs(wsi, LISTENER_PAUSE_US);
}

/* Adopted sockets skip the options lws sets on those its own listener
 * accepts: flockd sets the one that matters, no Nagle delay for small
 * replies. */
static void adopt_connection(struct lws_vhost *vh, int fd, bool is_plain)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!is_plain) {
        lws_adopt_socket_vhost(vh, fd); /* TLS if the vhost has it; on failure lws closes fd */
        return;
    }
    lws_sock_file_fd_type desc = {.sockfd = fd};
    lws_adopt_descriptor_vhost(vh, LWS_ADOPT_SOCKET | LWS_ADOPT_HTTP, desc, NULL, NULL);
}

/* Accepts what waits, up to LISTENER_BATCH at a time so that a stream of
 * new connections cannot starve the open ones (the socket stays readable
 * and lws comes back). */
static void accept_waiting(struct lws *wsi)
{
    int lfd = lws_get_socket_fd(wsi);
    for (int i = 0; i < LISTENER_BATCH; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            adopt_connection(lws_get_vhost(wsi), fd, lws_get_opaque_user_data(wsi) == &plain_mark);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        if (!is_connection_error(errno)) {
            pause_accepting(wsi);
            return;
        }
    }
}

int listener_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                      size_t len)
{
    (void)user, (void)in, (void)len;
    switch (reason) {
    case LWS_CALLBACK_RAW_RX_FILE:
        accept_waiting(wsi);
        return 0;
    case LWS_CALLBACK_TIMER: /* the pause is over */
        lws_rx_flow_control(wsi, 1);
        return 0;
    default:
        return 0;
    }
}
