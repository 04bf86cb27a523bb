/*
 * ctl_view — the view flockctl asks for on a version 3 connection
 * (PROTOCOL.md §12.4): the flags (--view, --views random, --view-size,
 * --px, --budget) checked before connecting, the view command's text (by
 * proto's own formatter), a random view within a world, and what the
 * server's reply to it says. Both clients use it: the libwebsockets session
 * (watch, record) and load's epoll client.
 *
 * The exchange: once the client is in its room (its welcome, or the join's
 * welcome) it sends the view with an id of its own; the server answers
 * with an ack that names the plan of the frames to come, or an error (the
 * view is then refused, and the client ends: the caller's business).
 * Frames keep coming meanwhile (the whole room, until the view is applied).
 *
 * Never: I/O, sockets. The bounds a view has in a given world (x up to the
 * world's width, ...) are the server's to judge: flockctl checks only what
 * holds in every world (numbers, x, y >= 0, w, h >= 1).
 * Threading: ctl_view_settle() runs on the main thread at parse time; the
 * rest is reentrant.
 */
#ifndef FLOCKCTL_VIEW_H
#define FLOCKCTL_VIEW_H

#include <stddef.h>

#include "ctl_args.h"

/* Longest view text: six numbers and the id. */
#define CTL_VIEW_TEXT_MAX 256
/* --view-size when not given. */
#define CTL_VIEW_SIZE_DEFAULT "1600,900"

/*
 * Decides whether a view is sent: checks --view (X,Y,W,H: four numbers,
 * X, Y >= 0, W, H >= 1) or --views random with --view-size (W,H), that
 * they need --protocol 3, that --px and --budget come with one of them,
 * and that --view and --views are not both given; then sets a->view,
 * a->random_views and a->view_args (for random views, its size at 0, 0).
 * Returns 0, or CTL_EXIT_USAGE with why[0..cap) saying which flag and
 * what is wrong with it.
 */
int ctl_view_settle(struct ctl_args *a, char *why, size_t cap);

/*
 * The view command's JSON text for rect (x, y, w, h, world units) with
 * a's --px and --budget, NUL-terminated, into buf[0..cap): its length, or
 * PROTO_E_NOSPACE.
 */
int ctl_view_text(const struct ctl_args *a, const float rect[4], char *buf, size_t cap);

/*
 * path (a URL's path and query) with the query that asks for rect and a's
 * --px and --budget as the connection's first view (PROTOCOL.md 12.4:
 * view=X,Y,W,H&px=N&budget=B) into buf[0..cap): its length, or
 * PROTO_E_NOSPACE.
 */
int ctl_view_path(const struct ctl_args *a, const float rect[4], const char *path, char *buf,
                  size_t cap);

/*
 * A view of a->view_args's size at a random place within a world of
 * width x height (its size cut to the world's): x = u * (width - w),
 * y = v * (height - h) for u, v in [0, 1) the caller draws.
 */
void ctl_view_random(const struct ctl_args *a, double width, double height, double u, double v,
                     float rect[4]);

/* What the view's ack says the frames will hold (§12.4). */
struct ctl_view_ack {
    unsigned shift, sample;
    unsigned rect[4]; /* super-tiles: first column, first row, columns, rows */
    double boids, bytes, rate;
};

/*
 * Feeds one text message text[0..len). Returns 0 if it is not the reply
 * to the view (the one sent, id "view", or the URL's, no id), 1 if it is
 * its ack (*ack filled), or the negative PROTO_E_*
 * code the server refused the view with, with why[0..cap) set to
 * "CODE: MESSAGE" (the server's words).
 */
int ctl_view_feed(const char *text, size_t len, struct ctl_view_ack *ack, char *why, size_t cap);

#endif
