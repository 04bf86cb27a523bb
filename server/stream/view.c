/*
 * view.c — a version 3 client's plan and its frame, spliced from a
 * snapshot's shared parts (see view.h).
 *
 * The plan's byte estimate takes a delta's cost per boid from what
 * version 2 measures on real flocks (about 1.2 bytes, 1.4 with the ids
 * of boids entering tiles) and a key's from its planes; a part's own
 * header is a few bytes, a field about two bytes a cell after deflate.
 */
#include "view.h"

#include "proto_sections.h"
#include "tileneed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DELTA_BYTES_PER_BOID 1.4
#define PART_BYTES           6.0
#define FIELD_BYTES_PER_CELL 3.5 /* a count (a varint) and two velocity bytes */
#define PX_PER_BOID          4.0 /* at most one boid drawn per this many square pixels */

void view_feed_restart(struct view_feed *f)
{
    memset(f->sent, 0, sizeof f->sent);
    f->next_ns = 0;
}

void view_scratch_free(struct view_scratch *x)
{
    proto_v3_encoder_destroy(x->enc);
    free(x->buf);
    *x = (struct view_scratch){0};
}

/* ---- the plan ------------------------------------------------------------------ */

/* The bytes per second a request asks for, or `budget` if it names none. */
static double budget_of(const struct view_req *req, double budget)
{
    return !req->whole && req->args.budget ? req->args.budget : budget;
}

/* The tiles an axis of the view covers with `margin` units more each side:
 * first tile and count, wrapped into the grid of n tiles (or cut). */
static void axis_tiles(double at, double len, double margin, double size, uint32_t n, bool wrap,
                       uint32_t *first, uint32_t *count)
{
    double tile = size / n;
    int64_t a = (int64_t)floor((at - margin) / tile),
            b = (int64_t)floor((at + len + margin) / tile);
    if (!wrap) {
        a = a < 0 ? 0 : a;
        b = b >= (int64_t)n ? (int64_t)n - 1 : b;
    }
    uint64_t c = (uint64_t)(b - a + 1);
    *count = c > n ? n : (uint32_t)c;
    *first = (uint32_t)(((a % (int64_t)n) + (int64_t)n) % (int64_t)n);
    if (*count == n)
        *first = 0;
}

/* Super-tiles at shift k covering `count` tiles from `first` on a grid of
 * n tiles: the first super-tile and how many. */
static void axis_supers(uint32_t first, uint32_t count, uint32_t n, unsigned k, uint32_t *sfirst,
                        uint32_t *scount)
{
    uint32_t g = proto_v3_grid_at(n, k), last = first + count - 1;
    *sfirst = first >> k;
    uint32_t c = last < n ? (last >> k) - *sfirst + 1 : g - *sfirst + ((last - n) >> k) + 1;
    *scount = c > g ? g : c;
    if (*scount == g)
        *sfirst = 0;
}

/* The bytes of a frame at sample s but its boids'. */
static double fixed_bytes(uint32_t parts, unsigned s)
{
    double field =
        s ? (double)parts * PROTO_V3_FIELD_CELLS * PROTO_V3_FIELD_CELLS * FIELD_BYTES_PER_CELL
          : 0.0;
    return PROTO_V3_HEADER_SIZE + parts * PART_BYTES + field;
}

/* A delta's bytes per boid for the request: what its frames weighed, or
 * the estimate. */
static double boid_bytes(const struct view_req *req)
{
    return req->boid_bytes > 0 ? req->boid_bytes : DELTA_BYTES_PER_BOID;
}

/* The frame's bytes at sample s for this many boids and parts. */
static double bytes_at(const struct view_req *req, double boids, uint32_t parts, unsigned s)
{
    return fixed_bytes(parts, s) + ldexp(boids, -(int)s) * boid_bytes(req);
}

/* Boids in the super-tile rect of p (its tiles at shift 0). */
static uint64_t boids_in(const struct tilestate *s, const struct tiles_grid *g, uint64_t n,
                         const struct view_plan *p)
{
    uint32_t tx = p->rect_x << p->shift, ty = p->rect_y << p->shift;
    uint32_t cols = p->rect_cols << p->shift, rows = p->rect_rows << p->shift;
    cols = cols < g->cols ? cols : g->cols;
    rows = rows < g->rows ? rows : g->rows;
    if (s)
        return tiles_state_count_rect(s, tx, ty, cols, rows);
    return (uint64_t)((double)n * cols * rows / ((double)g->cols * g->rows));
}

/* The smallest sample at which p's frame fits per_frame bytes and draws
 * at most a boid per PX_PER_BOID square pixels into p->sample: true, or
 * false (and the largest sample) if none fits. */
static bool plan_sample(const struct tiles_grid *g, const struct view_req *req, struct view_plan *p,
                        double pixels, double per_frame)
{
    const struct proto_view_args *a = &req->args;
    double tile_area = (double)g->width / g->cols * g->height / g->rows;
    double rect_area = tile_area * p->rect_cols * p->rect_rows * ldexp(1.0, 2 * p->shift);
    double in_view = (double)p->boids * fmin(1.0, (double)a->w * a->h / rect_area);
    uint32_t parts = p->rect_cols * p->rect_rows;
    for (unsigned s = 0; s <= PROTO_V3_MAX_SAMPLE; s++) {
        p->sample = (uint8_t)s;
        if (bytes_at(req, (double)p->boids, parts, s) <= per_frame &&
            ldexp(in_view, -(int)s) <= pixels / PX_PER_BOID)
            return true;
    }
    return false;
}

void view_plan(const struct tilestate *s, const struct tiles_grid *g, uint64_t n,
               const struct view_req *req, double budget, double snapshot_hz, struct view_plan *out)
{
    *out = (struct view_plan){.rect_cols = g->cols, .rect_rows = g->rows, .rate = snapshot_hz};
    if (req->whole) {
        out->boids = boids_in(s, g, n, out);
        out->bytes = (uint64_t)bytes_at(req, (double)out->boids, (uint32_t)g->cols * g->rows, 0);
        return;
    }
    const struct proto_view_args *a = &req->args;
    /* The margin: four snapshots of flight at the grid's top speed. */
    double margin = VIEW_MARGIN_SNAPSHOTS * 127.0 * g->vscale / snapshot_hz;
    uint32_t tx, tcols, ty, trows;
    axis_tiles(a->x, a->w, margin, g->width, g->cols, true, &tx, &tcols);
    axis_tiles(a->y, a->h, margin, g->height, g->rows, true, &ty, &trows);
    double px = a->px ? a->px : a->w, pixels = px * px * a->h / a->w;
    double per_frame = budget_of(req, budget) / snapshot_hz;
    /* The smallest shift that keeps the rect within VIEW_RECT_MAX and at
     * which some sample fits the budget (fewer, larger super-tiles when
     * the fields of many do not), and there the smallest such sample. */
    for (unsigned k = 0; k <= PROTO_V3_MAX_SHIFT; k++) {
        axis_supers(tx, tcols, g->cols, k, &out->rect_x, &out->rect_cols);
        axis_supers(ty, trows, g->rows, k, &out->rect_y, &out->rect_rows);
        out->shift = (uint8_t)k;
        if (out->rect_cols > VIEW_RECT_MAX || out->rect_rows > VIEW_RECT_MAX)
            continue;
        out->boids = boids_in(s, g, n, out);
        if (plan_sample(g, req, out, pixels, per_frame) || k == PROTO_V3_MAX_SHIFT)
            break;
    }
    double bytes = bytes_at(req, (double)out->boids, out->rect_cols * out->rect_rows, out->sample);
    out->bytes = (uint64_t)bytes;
    out->boids = (uint64_t)ldexp((double)out->boids, -(int)out->sample);
    out->rate = fmin(snapshot_hz, budget_of(req, budget) / bytes);
}

/* ---- the frame ------------------------------------------------------------------ */

/* Whether sent frame e held super-tile (sx, sy) of a grid gc x gr. */
static bool held(const struct view_sent *e, uint32_t sx, uint32_t sy, uint32_t gc, uint32_t gr)
{
    return (sx + gc - e->rect_x) % gc < e->rect_cols && (sy + gr - e->rect_y) % gr < e->rect_rows;
}

/* Whether sent frame e, at this shift and sample, holds super-tile (sx, sy). */
static bool holds(const struct view_sent *e, const struct view_plan *p, uint32_t sx, uint32_t sy,
                  uint32_t gc, uint32_t gr)
{
    return e->used && e->shift == p->shift && e->sample == p->sample && held(e, sx, sy, gc, gr);
}

/* Super-tile (sx, sy)'s part for this client: a delta on the newest frame
 * it holds with that super-tile (and on the one before that too, if it
 * holds it), as far back as the tileset keeps bases; else a key. A client
 * that falls behind thus gets deltas on older bases, never keys for it. */
static int part_for(struct tileset *ts, const struct view_feed *f, const struct view_plan *p,
                    uint32_t sx, uint32_t sy, uint32_t gc, uint32_t gr, struct view_scratch *x,
                    struct tiles_part *out, bool *key)
{
    uint32_t seq = tiles_state_seq(tiles_set_state(ts)), st = sy * gc + sx;
    *key = false;
    for (int k = 0; k < PROTO_V3_HISTORY; k++) { /* newest first */
        const struct view_sent *e1 = &f->sent[k];
        uint32_t g1 = seq - e1->seq;
        if (!holds(e1, p, sx, sy, gc, gr) || g1 < 1 || g1 > PROTO_V3_MAX_GAP)
            continue;
        for (int j = k + 1; j < PROTO_V3_HISTORY; j++) {
            const struct view_sent *e0 = &f->sent[j];
            uint32_t g0 = e1->seq - e0->seq;
            if (holds(e0, p, sx, sy, gc, gr) && g0 >= 1 && g0 <= PROTO_V3_MAX_GAP &&
                g1 + g0 <= TILES_KEEP &&
                tiles_set_part(ts, p->shift, p->sample, st, g1, g0, x->enc, out) == 0)
                return 0;
        }
        if (tiles_set_part(ts, p->shift, p->sample, st, g1, 0, x->enc, out) == 0)
            return 0;
    }
    *key = true;
    return tiles_set_part(ts, p->shift, p->sample, st, 0, 0, x->enc, out);
}

/* Room for n more bytes after x->buf's first `used`. */
static bool grow(struct view_scratch *x, size_t used, size_t n)
{
    if (x->cap - used >= n)
        return true;
    size_t cap = x->cap ? x->cap : 65536;
    while (cap - used < n)
        cap *= 2;
    uint8_t *b = realloc(x->buf, cap);
    if (!b)
        return false;
    x->buf = b;
    x->cap = cap;
    return true;
}

/* The frame's header and sections, before its parts: the bytes used
 * from x->buf on, or 0 if no memory. */
static size_t put_head(struct tileset *ts, const struct view_plan *p, uint8_t extra,
                       struct view_scratch *x, struct proto_v3_header *h)
{
    const struct tiles_meta *m = tiles_set_meta(ts);
    struct tilestate *s = tiles_set_state(ts);
    const struct tiles_grid *g = tiles_state_grid(s);
    const struct proto_obstacle *obstacles;
    const struct proto_target *targets;
    uint32_t no, nt;
    tiles_set_sections(ts, &obstacles, &no, &targets, &nt);
    if (!grow(x, 0,
              x->pre + PROTO_V3_HEADER_SIZE + (size_t)no * PROTO_SNAPSHOT_OBSTACLE_SIZE +
                  (size_t)nt * PROTO_SNAPSHOT_TARGET_SIZE))
        return 0;
    *h = (struct proto_v3_header){.flags = (uint8_t)(m->flags | extra),
                                  .shift = p->shift,
                                  .sample = p->sample,
                                  .cols = g->cols,
                                  .rows = g->rows,
                                  .rect_x = (uint8_t)p->rect_x,
                                  .rect_y = (uint8_t)p->rect_y,
                                  .rect_cols = (uint8_t)p->rect_cols,
                                  .rect_rows = (uint8_t)p->rect_rows,
                                  .obstacle_count = (uint16_t)no,
                                  .target_count = (uint16_t)nt,
                                  .seq = tiles_state_seq(s),
                                  .room_boids = m->room_boids,
                                  .tick = m->tick,
                                  .server_time_us = (uint64_t)m->time_us,
                                  .width = g->width,
                                  .height = g->height};
    uint8_t *b = x->buf + x->pre + PROTO_V3_HEADER_SIZE;
    b = proto_sections_put_obstacles(b, obstacles, no);
    b = proto_sections_put_targets(b, targets, nt);
    return (size_t)(b - x->buf);
}

/* Remembers the frame sent: a base the client's decoder now holds. */
static void note_sent(struct view_feed *f, const struct view_sent *frame)
{
    memmove(&f->sent[1], &f->sent[0], (PROTO_V3_HISTORY - 1) * sizeof f->sent[0]);
    f->sent[0] = *frame;
}

/* Keeps the sample of the client's last frame, of the same rect, when the
 * plan would change it only by the noise of its estimate: a frame at another sample has no
 * base, every part of it a key. Finer only with a fifth of the budget to
 * spare; coarser as soon as the old sample does not fit (the budget is a
 * cap: the pacing would drop frames instead). */
static void keep_sample(const struct view_feed *f, struct view_plan *p, double per_frame)
{
    const struct view_sent *e = &f->sent[0];
    if (!e->used || e->shift != p->shift || e->sample == p->sample || e->rect_x != p->rect_x ||
        e->rect_y != p->rect_y || e->rect_cols != p->rect_cols || e->rect_rows != p->rect_rows)
        return; /* a new view (or none before): the plan as it is */
    double raw = ldexp((double)p->boids, p->sample);
    uint32_t parts = p->rect_cols * p->rect_rows;
    bool finer = p->sample < e->sample;
    double at = bytes_at(&f->req, raw, parts, finer ? p->sample : e->sample);
    if (finer ? at > 0.8 * per_frame : at <= per_frame) {
        p->sample = e->sample;
        p->boids = (uint64_t)ldexp(raw, -(int)e->sample);
        p->bytes = (uint64_t)bytes_at(&f->req, raw, parts, e->sample);
    }
}

/* A frame of deltas at sample 0 whose boids took `bytes` for `boids`:
 * into the request's bytes per boid (a moving mean over about 8 frames,
 * within 0.5..8). Frames with a field are not counted: the field's own
 * estimate is off by more than their few boids weigh. */
static void note_boid_bytes(struct view_req *req, double bytes, double boids)
{
    double b = fmin(8.0, fmax(0.5, bytes / boids));
    req->boid_bytes = req->boid_bytes > 0 ? req->boid_bytes + (b - req->boid_bytes) / 8.0 : b;
}

/* On a relay (a state with a need), notes p there when the epoch moved
 * on or p changed since the feed last noted it; with a ring around its
 * rect while the view moved lately (the same shift and sample, another
 * rect). */
static void note_plan(struct tilestate *s, struct view_feed *feed, const struct view_plan *p)
{
    unsigned audience;
    struct tileneed *need = tiles_state_need(s, &audience);
    if (!need)
        return;
    uint32_t epoch = tileneed_epoch(need);
    const struct view_plan *n = &feed->noted;
    bool same_layer = feed->noted_epoch && n->shift == p->shift && n->sample == p->sample;
    bool same_rect = same_layer && n->rect_x == p->rect_x && n->rect_y == p->rect_y &&
                     n->rect_cols == p->rect_cols && n->rect_rows == p->rect_rows;
    if (epoch == feed->noted_epoch && same_rect)
        return;
    if (same_layer && !same_rect)
        feed->moved_epoch = epoch;
    bool ring = feed->moved_epoch && epoch - feed->moved_epoch < VIEW_RING_EPOCHS;
    tileneed_note(need, audience, p->shift, p->sample, p->rect_x, p->rect_y, p->rect_cols,
                  p->rect_rows, ring);
    feed->noted = *p;
    feed->noted_epoch = epoch;
}

/* Whether a and b are the same frame held. */
static bool same_sent(const struct view_sent *a, const struct view_sent *b)
{
    return a->used == b->used && a->seq == b->seq && a->shift == b->shift &&
           a->sample == b->sample && a->rect_x == b->rect_x && a->rect_y == b->rect_y &&
           a->rect_cols == b->rect_cols && a->rect_rows == b->rect_rows;
}

/* Whether the frame `last` describes is the one a client holding feed's
 * frames gets of tileset `set` with these flags and this plan. */
static bool spliced_fits(const struct view_spliced *last, uint64_t set, uint8_t flags,
                         const struct view_sent *frame, const struct view_feed *feed)
{
    if (last->set != set || last->flags != flags || !same_sent(&last->frame, frame))
        return false;
    for (int k = 0; k < PROTO_V3_HISTORY; k++)
        if (!same_sent(&last->held[k], &feed->sent[k]))
            return false;
    return true;
}

/* Splices the frame of plan p for a client holding feed's frames into
 * x->buf + x->pre: its length and *m, or PROTO_E_INTERNAL. */
static ptrdiff_t splice(struct tileset *ts, const struct view_feed *feed, const struct view_plan *p,
                        uint8_t extra_flags, struct view_scratch *x, struct view_made *m)
{
    const char *err;
    if (!x->enc && !(x->enc = proto_v3_encoder_create(4194304, &err)))
        return PROTO_E_INTERNAL;
    struct proto_v3_header h;
    size_t used = put_head(ts, p, extra_flags, x, &h);
    if (!used)
        return PROTO_E_INTERNAL;
    const struct tiles_grid *g = tiles_state_grid(tiles_set_state(ts));
    uint32_t gc = proto_v3_grid_at(g->cols, p->shift), gr = proto_v3_grid_at(g->rows, p->shift);
    *m = (struct view_made){.boids = (uint32_t)p->boids};
    for (uint32_t k = 0; k < p->rect_cols * p->rect_rows; k++) {
        uint32_t sx = (p->rect_x + k % p->rect_cols) % gc, sy = (p->rect_y + k / p->rect_cols) % gr;
        struct tiles_part part;
        bool key;
        if (part_for(ts, feed, p, sx, sy, gc, gr, x, &part, &key) < 0 || !grow(x, used, part.len))
            return PROTO_E_INTERNAL;
        memcpy(x->buf + used, part.bytes, part.len);
        used += part.len;
        h.frame_hash += part.hash;
        m->parts++;
        m->keys += key;
    }
    proto_v3_put_header(x->buf + x->pre, &h);
    return (ptrdiff_t)(used - x->pre);
}

ptrdiff_t view_frame(struct tileset *ts, struct view_feed *feed, uint8_t extra_flags, double budget,
                     double snapshot_hz, int64_t now, struct view_scratch *x,
                     struct view_made *made)
{
    struct tilestate *s = tiles_set_state(ts);
    const struct tiles_grid *g = tiles_state_grid(s);
    unsigned audience;
    struct view_plan p;
    bool is_relayed = tiles_state_need(s, &audience) != NULL;
    /* The budget's pacing allows a frame up to one snapshot early. */
    bool is_held = feed->next_ns > now + (int64_t)(1e9 / snapshot_hz);
    if (is_held && !is_relayed)
        return 0;
    view_plan(s, g, 0, &feed->req, budget, snapshot_hz, &p);
    double per_second = budget_of(&feed->req, budget);
    keep_sample(feed, &p, per_second / snapshot_hz);
    note_plan(s, feed, &p); /* a paced client's tiles stay wanted too */
    if (is_held)
        return 0;
    if (!tiles_state_holds(s, p.shift, p.sample, p.rect_x, p.rect_y, p.rect_cols, p.rect_rows)) {
        if (made)
            made->passed = true;
        return 0;
    }
    struct view_sent frame = {.seq = tiles_state_seq(s),
                              .shift = p.shift,
                              .sample = p.sample,
                              .rect_x = (uint8_t)p.rect_x,
                              .rect_y = (uint8_t)p.rect_y,
                              .rect_cols = (uint8_t)p.rect_cols,
                              .rect_rows = (uint8_t)p.rect_rows,
                              .used = true};
    uint64_t set = tiles_set_serial(ts);
    struct view_spliced *last = &x->last;
    if (!spliced_fits(last, set, extra_flags, &frame, feed)) {
        last->set = 0; /* x->buf is overwritten */
        struct view_made m;
        ptrdiff_t n = splice(ts, feed, &p, extra_flags, x, &m);
        if (n < 0)
            return n;
        *last = (struct view_spliced){
            .set = set, .flags = extra_flags, .frame = frame, .len = (size_t)n, .made = m};
        memcpy(last->held, feed->sent, sizeof last->held);
    }
    note_sent(feed, &frame);
    size_t len = last->len;
    /* The budget paces a view's frames by what they weigh (the plan only
     * estimates it): each frame's bytes take their time at the budget's
     * rate after the last ones' (or from now, if the view took less), and
     * a frame goes once that time is at most one snapshot away. Snapshots
     * come unevenly (20 a second from 30 ticks: 67 and 33 ms apart), so
     * pacing each frame from the one before would drop a frame that fits
     * the budget whenever it comes early; paced by the sum, the bytes stay
     * within the budget plus a frame, and every snapshot that fits goes.
     * The whole room, as versions 1 and 2 send it, is not paced. */
    int64_t paid = feed->next_ns > now ? feed->next_ns : now;
    feed->next_ns = feed->req.whole ? 0 : paid + (int64_t)(1e9 * (double)len / per_second);
    /* A frame of no key and no field: what its boids alone weigh. */
    if (!feed->req.whole && !last->made.keys && !p.sample && p.boids)
        note_boid_bytes(&feed->req, (double)len - fixed_bytes(last->made.parts, 0),
                        (double)p.boids);
    if (made)
        *made = last->made;
    return (ptrdiff_t)len;
}
