/*
 * ctl_load.h — what the files of `flockctl load` share: ctl_load.c (the
 * clients: connections, messages, the worker threads, the run) and
 * ctl_load_report.c (the figures gathered from them and printed). Only
 * those two include it.
 *
 * Threading: a worker and its connections belong to its thread until the
 * workers are joined; only then are they read for the report.
 */
#ifndef FLOCKCTL_LOAD_H
#define FLOCKCTL_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "ctl_args.h"
#include "ctl_join.h"
#include "ctl_snap.h"
#include "ctl_view.h"
#include "proto_snapshot.h"
#include "ws_wire.h"

#define AGE_BIN_US 10
#define AGE_BINS   (1000000 + 1) /* 0..10 s; the last bin holds anything older */

enum conn_state { C_NEW, C_RETRY, C_CONNECTING, C_TLS, C_HANDSHAKE, C_OPEN, C_CLOSED, C_FAILED };

struct worker;

struct conn {
    struct worker *w;
    int fd;
    SSL *ssl; /* wss:// only */
    uint8_t state, attempts, closing, snap_have, paused;
    uint8_t greeted;   /* the connection's first welcome came */
    uint8_t welcomed;  /* in the room it measures (and its view acked): it counts */
    uint8_t view_out;  /* the view was sent, its reply has not come */
    uint8_t url_view;  /* the view went in the upgrade request's URL */
    uint8_t key_asked; /* --decode: keyframe sent, its ack not come: no frame is decoded */
    uint8_t decoded;   /* --decode: a frame decoded */
    struct ctl_join_wait join;
    float view[4];            /* the view it sent (x, y, w, h) */
    struct ctl_view_ack plan; /* its ack */
    uint8_t *frame;           /* a frame read whole (version 3, --decode) */
    uint32_t frame_len, frame_cap;
    uint8_t frame_cut;    /* it grew past FRAME_MAX */
    struct ctl_snap *dec; /* --decode */
    char key[WS_KEY_LEN + 1];
    char *buf; /* response head during the handshake, then the welcome text */
    uint32_t buf_len;
    uint32_t ticks_per_snapshot; /* from the welcome; 0 = unknown */
    uint8_t version;             /* the snapshot version the welcome names */
    uint64_t payload;            /* bytes of the snapshot being received */
    struct ws_rx rx;
    uint8_t snap[PROTO_SNAPSHOT_HEADER_SIZE];
    double deadline; /* handshake timeout or retry time, monotonic s */
    double resume_at;
    struct conn *next_paused;
    uint64_t frames, last_tick, skipped, bytes; /* bytes: read while measuring */
    uint32_t last_epoch;                        /* version 3: the seq */
    uint8_t have_tick;
};

struct load;

struct worker {
    struct load *ld;
    pthread_t thread;
    int ep;
    struct conn *conns;
    int n, next_new, pending, settled, reported;
    int measuring;
    uint8_t *buf;
    uint64_t now_us; /* wall clock of the current read */
    uint64_t rng;
    double tokens, last_refill, last_scan;
    struct conn *paused_head, *paused_tail;
    uint32_t *age_bins;
    uint64_t age_count, bytes, bad_frames;
    uint64_t payload, boids, keys; /* measured snapshots: payload bytes, boids, key frames */
    uint64_t parts;                /* measured version 3 frames' parts */
    uint64_t decode_failures;      /* --decode: frames refused */
    int connected, failures, dropped, retries;
    int join_failures; /* joins the server refused */
    int view_failures; /* views the server refused */
    int rcvbuf;        /* SO_RCVBUF of its newest socket, as the kernel reports it */
    char first_error[160];
    char join_error[240]; /* the first refusal: the server's code and message */
    char view_error[240];
    const char *decode_error; /* the first refusal's status name */
};

struct load {
    const struct ctl_args *a;
    struct ctl_url url;
    SSL_CTX *tls; /* wss:// only */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    atomic_int phase;
    atomic_int workers_settled;
    struct worker *workers;
    int nworkers;
    char join[CTL_JOIN_TEXT_MAX]; /* the join every client sends; join_len 0: none */
    size_t join_len;
    /* The world's size, from the first welcome any client read (0: none
     * yet): random views of the later clients go in their URLs. */
    _Atomic(double) world_w, world_h;
};

/* What a run measured, gathered from every worker and client. */
struct load_results {
    int clients, connected, failures, dropped, retries, protocol, rcvbuf, join_failures;
    const char *room; /* the room measured */
    double connect_s, window_s;
    uint64_t frames, bytes, skipped, bad_frames, age_count, payload, boids, keys, parts;
    double rate_p50, rate_p1, age_p50, age_p99;
    double kb_p50, kb_p99, kb_max; /* kB/s of one client: median, 99th percentile, most */
    bool decoded;                  /* --decode */
    uint64_t decode_failures;      /* refused frames, and clients that decoded none */
    const char *decode_error;      /* the first refusal's status name, or NULL */
    int views, distinct_views, view_failures; /* views acked, how many differ, refused */
    unsigned sample_max;                      /* the acks' largest sample */
    double rate_min;                          /* the acks' lowest rate */
    char first_error[160];
    char join_error[240];
    char view_error[240];
};

/* Gathers the figures of ld's workers and of conns (ld->a->clients of
 * them) into *r; its connect_s and window_s are the caller's. */
void ctl_load__collect(const struct load *ld, const struct conn *conns, struct load_results *r);

/* Prints r to stdout: a summary line, the first error, then one JSON
 * object; refused joins and views and frames that did not decode are
 * named on stderr. */
void ctl_load__report(const struct load_results *r);

#endif
