/*
 * squad.c — squads, orders and formations (squad.h; the rules are
 * PROTOCOL.md §13).
 *
 * A squad's record holds its order and the formation's anchor; each unit
 * holds its squad and its slot. A step starts here (squad_step): the
 * units of every squad are counted and their centre and distance from
 * their slots summed in one pass over the boids; squads whose units or
 * heading changed get their slots again; then each anchor moves toward
 * its goal at 0.96 x max_speed and slows to arrive (it does not wait
 * for stragglers: slowing the whole squad for them made every trip of
 * formbench longer); a formation at most twice as wide as an obstacle in
 * its way steers round it (way_round), a wider one flows round it unit
 * by unit (sim.c's detour). During the steering each unit
 * flies at its anchor's velocity plus its offset from its slot over
 * SLOT_TAU seconds (squad_pull), so it settles into a moving slot with
 * neither lag nor overshoot.
 *
 * Slots are handed out front to back, row by row, and left to right
 * within a row, after the units' own offsets along and across the
 * heading: units never swap sides on the way to their slots, so their
 * paths do not cross.
 */
#include "squad.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PI_F         3.14159265358979f
#define SLOT_TAU     0.35f /* seconds a unit takes to close its gap to its slot */
#define ANCHOR_PACE  0.96f /* the anchor's speed, of max_speed */
#define ARRIVE_RATE  2.0f  /* 1/s: the anchor's speed at distance d is at most d x this, */
#define ARRIVE_LEAST 0.1f  /* but not below this share of max_speed: it gets there */
#define DEFAULT_GAP  1.25f /* spacing, of separation_radius */
#define FOLLOW_GAP   2.0f  /* spacings kept behind what a squad follows */

/* flags of a record */
#define F_RESLOT 1u /* assign slots at the next step */
#define F_AIM    2u /* a new heading: face the goal and place the anchor */

/* ---- formation geometry ---------------------------------------------------- */

/* The largest r with r * r <= v. */
static uint32_t isqrt(uint32_t v)
{
    uint32_t r = (uint32_t)sqrt((double)v);
    while ((uint64_t)r * r > v)
        r--;
    while ((uint64_t)(r + 1) * (r + 1) <= v)
        r++;
    return r;
}

/* The least c with c * c >= v. */
static uint32_t ceil_sqrt(uint32_t v)
{
    uint32_t c = isqrt(v);
    return c + (c * c < v);
}

void sim_slot_offset(enum sim_shape shape, uint32_t n, uint32_t i, float *a, float *b)
{
    uint32_t row, first, width; /* the slot's row, the row's first slot, its width */
    if (shape == SIM_SHAPE_WEDGE) {
        row = isqrt(i), first = row * row, width = 2 * row + 1;
    } else if (shape == SIM_SHAPE_LINE || shape == SIM_SHAPE_COLUMN || shape == SIM_SHAPE_BOX) {
        /* Rows of c: four times as wide as deep, as deep, a quarter as wide. */
        uint32_t c = shape == SIM_SHAPE_LINE  ? ceil_sqrt(4 * n)
                     : shape == SIM_SHAPE_BOX ? ceil_sqrt(n)
                                              : ceil_sqrt((n + 3) / 4);
        c = c < 1 ? 1 : (c > n ? n : c);
        row = i / c, first = row * c, width = c;
    } else {
        *a = *b = 0.0f;
        return;
    }
    uint32_t m = n - first < width ? n - first : width; /* the row's units */
    *a = (float)(i - first) - 0.5f * (float)(m - 1);
    *b = (float)row;
}

/* Rows a formation of n units has, less one: its depth in spacings. */
static float depth_of(enum sim_shape shape, uint32_t n)
{
    float a, b;
    if (n == 0)
        return 0.0f;
    sim_slot_offset(shape, n, n - 1, &a, &b);
    return b;
}

/* ---- small helpers ---------------------------------------------------------- */

static float wrap_delta(float d, float size)
{
    if (d > 0.5f * size)
        d -= size;
    else if (d < -0.5f * size)
        d += size;
    return d;
}

/* The offset from (x0, y0) to (x1, y1): the shortest on a torus. */
static void offset(const struct squad_world *sw, float x0, float y0, float x1, float y1, float *dx,
                   float *dy)
{
    *dx = x1 - x0, *dy = y1 - y0;
    if (sw->wrap) {
        *dx = wrap_delta(*dx, sw->width);
        *dy = wrap_delta(*dy, sw->height);
    }
}

/* A point brought back into the world. */
static void fold(const struct squad_world *sw, float *x, float *y)
{
    if (sw->wrap) {
        *x -= sw->width * floorf(*x / sw->width);
        *y -= sw->height * floorf(*y / sw->height);
        *x = *x >= sw->width ? 0.0f : *x;
        *y = *y >= sw->height ? 0.0f : *y;
    } else {
        *x = fminf(fmaxf(*x, 0.0f), sw->width);
        *y = fminf(fmaxf(*y, 0.0f), sw->height);
    }
}

static bool has_squads(int group)
{
    return group >= 0 && group < SIM_GROUPS;
}

/* The boids of a group: [*lo, *hi) (groups are sorted). */
static void group_range(const struct squad_world *sw, int group, uint32_t *lo, uint32_t *hi)
{
    uint32_t a = 0, b = sw->count;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (sw->group[m] < group)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    b = sw->count;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (sw->group[m] <= group)
            a = m + 1;
        else
            b = m;
    }
    *hi = a;
}

/* The index of the group's boid with id `id`, or -1 (ids ascend within a group). */
static int64_t find_in_group(const struct squad_world *sw, int group, uint32_t id)
{
    uint32_t lo, hi;
    group_range(sw, group, &lo, &hi);
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (sw->id[m] < id)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < sw->count && sw->group[lo] == group && sw->id[lo] == id ? (int64_t)lo : -1;
}

/* The group of the boid with id `id`, or -1 if no boid has it. */
static int group_of_id(const struct squad_world *sw, uint32_t id)
{
    for (uint32_t i = 0; i < sw->count;) {
        int g = sw->group[i];
        if (find_in_group(sw, g, id) >= 0)
            return g;
        uint32_t lo, hi;
        group_range(sw, g, &lo, &hi);
        i = hi;
    }
    return -1;
}

static float spacing_of(const struct squad_world *sw, int group, const struct sim_squad *s)
{
    if (s->spacing > 0.0f)
        return s->spacing;
    return fmaxf(DEFAULT_GAP * sw->params[group].separation_radius, 1.0f);
}

static void mark_used(struct squad_world *sw, int group)
{
    sw->used[group / 64] |= 1ull << (group % 64);
}

static bool is_used(const struct squad_world *sw, int group)
{
    return sw->used[group / 64] >> (group % 64) & 1u;
}

/* ---- selection -------------------------------------------------------------- */

static bool selected(const struct squad_world *sw, const struct sim_selection *sel, uint32_t i)
{
    switch (sel->by) {
    case SIM_SELECT_RECT:
        return sw->x[i] >= sel->x && sw->x[i] < sel->x + sel->w && sw->y[i] >= sel->y &&
               sw->y[i] < sel->y + sel->h;
    case SIM_SELECT_ALL:
        return true;
    case SIM_SELECT_SQUADS:
        return sel->squads >> sw->squad[i] & 1u;
    default:
        return false;
    }
}

/* Checks a selection against the world; the ids' units go into keys[].i. */
static int check_selection(struct squad_world *sw, int group, const struct sim_selection *sel)
{
    switch (sel->by) {
    case SIM_SELECT_RECT:
        if (!isfinite(sel->x) || !isfinite(sel->y) || !isfinite(sel->w) || !isfinite(sel->h) ||
            sel->w <= 0.0f || sel->h <= 0.0f || sel->x < 0.0f || sel->y < 0.0f ||
            sel->x > sw->width || sel->y > sw->height)
            return SIM_ERANGE;
        return 0;
    case SIM_SELECT_IDS:
        if (sel->n < 1 || sel->n > SIM_SELECT_MAX || !sel->ids)
            return SIM_EINVAL;
        for (uint32_t k = 0; k < sel->n; k++) {
            int64_t i = find_in_group(sw, group, sel->ids[k]);
            if (i < 0)
                return group_of_id(sw, sel->ids[k]) < 0 ? SIM_ENOENT : SIM_EOTHER;
            sw->keys[k].i = (uint32_t)i;
        }
        return 0;
    case SIM_SELECT_ALL:
        return 0;
    case SIM_SELECT_SQUADS:
        return sel->squads >> (SIM_SQUADS + 1) ? SIM_EINVAL : 0;
    }
    return SIM_EINVAL;
}

/* A squad's record starts over: no order, no formation, at its units'
 * centre, facing their mean heading. */
static void squad_start(struct squad_world *sw, int group, struct sim_squad *s, uint32_t lo,
                        uint32_t hi, int number)
{
    double vx = 0.0, vy = 0.0, sx = 0.0, sy = 0.0;
    uint32_t n = 0;
    float x0 = 0.0f, y0 = 0.0f;
    for (uint32_t i = lo; i < hi; i++) {
        if (sw->squad[i] != number)
            continue;
        if (n++ == 0)
            x0 = sw->x[i], y0 = sw->y[i];
        float dx, dy;
        offset(sw, x0, y0, sw->x[i], sw->y[i], &dx, &dy);
        sx += dx, sy += dy, vx += sw->vx[i], vy += sw->vy[i];
    }
    memset(s, 0, sizeof *s);
    s->facing = vx == 0.0 && vy == 0.0 ? 0.0f : (float)atan2(vy, vx);
    s->cx = x0 + (n ? (float)(sx / n) : 0.0f);
    s->cy = y0 + (n ? (float)(sy / n) : 0.0f);
    fold(sw, &s->cx, &s->cy);
    s->ax = s->gx = s->cx;
    s->ay = s->gy = s->cy;
    s->spacing = spacing_of(sw, group, s);
    s->flags = F_RESLOT;
}

/* Counts the group's squads again after units moved; ends the empty ones. */
static void recount(struct squad_world *sw, int group, uint32_t lo, uint32_t hi)
{
    uint32_t n[SIM_SQUADS + 1] = {0};
    for (uint32_t i = lo; i < hi; i++)
        n[sw->squad[i]]++;
    for (int k = 1; k <= SIM_SQUADS; k++) {
        struct sim_squad *s = &sw->sq[group][k];
        if (n[k] == 0 && s->units > 0) {
            memset(s, 0, sizeof *s);
            --*sw->live;
        } else if (n[k] > 0 && s->units == 0) {
            squad_start(sw, group, s, lo, hi, k);
            ++*sw->live;
        }
        if (n[k] != s->units)
            s->flags |= F_RESLOT;
        s->units = n[k];
    }
}

int squad_select(struct squad_world *sw, int group, int squad, const struct sim_selection *sel)
{
    if (!has_squads(group) || squad < -1 || squad > SIM_SQUADS || !sel)
        return SIM_EINVAL;
    int rc = check_selection(sw, group, sel);
    if (rc < 0)
        return rc;
    if (squad < 0) {
        for (squad = 1; squad <= SIM_SQUADS && sw->sq[group][squad].units; squad++)
            ;
        if (squad > SIM_SQUADS)
            return SIM_ECAPACITY;
    }
    uint32_t lo, hi, taken = 0;
    group_range(sw, group, &lo, &hi);
    if (sel->by == SIM_SELECT_IDS) {
        for (uint32_t k = 0; k < sel->n; k++)
            sw->squad[sw->keys[k].i] = (uint8_t)squad;
        taken = sel->n;
    } else {
        for (uint32_t i = lo; i < hi; i++)
            if (selected(sw, sel, i))
                taken++;
        if (taken == 0)
            return SIM_EEMPTY;
        for (uint32_t i = lo; i < hi; i++)
            if (selected(sw, sel, i))
                sw->squad[i] = (uint8_t)squad;
    }
    mark_used(sw, group);
    recount(sw, group, lo, hi);
    if (squad > 0)
        sw->sq[group][squad].flags |= F_RESLOT;
    sw->news[group]++;
    return squad;
}

/* ---- orders ------------------------------------------------------------------- */

static bool in_world(const struct squad_world *sw, float x, float y)
{
    return isfinite(x) && isfinite(y) && x >= 0.0f && x <= sw->width && y >= 0.0f &&
           y <= sw->height;
}

/* The squad's record if the group and squad are valid and it has units. */
static int live_squad(struct squad_world *sw, int group, int squad, struct sim_squad **out)
{
    if (!has_squads(group) || squad < 1 || squad > SIM_SQUADS)
        return SIM_EINVAL;
    *out = &sw->sq[group][squad];
    return (*out)->units ? 0 : SIM_ENOENT;
}

static int check_order(const struct squad_world *sw, int group, int squad,
                       const struct sim_squad *s, const struct sim_order_args *o)
{
    if (o->order == SIM_ORDER_MOVE || o->order == SIM_ORDER_PATROL) {
        uint32_t most = o->order == SIM_ORDER_PATROL ? SIM_WAYPOINTS - 1 : SIM_WAYPOINTS;
        uint32_t have = o->order == SIM_ORDER_MOVE && o->queue && s->order == SIM_ORDER_MOVE
                            ? s->nway - s->next
                            : 0;
        if (o->nway < 1 || o->nway + have > most)
            return SIM_ERANGE;
        for (uint32_t k = 0; k < o->nway; k++)
            if (!in_world(sw, o->way[k][0], o->way[k][1]))
                return SIM_ERANGE;
        return 0;
    }
    if (o->order == SIM_ORDER_FOLLOW) {
        if ((o->follow_squad != 0) == (o->follow_unit != 0))
            return SIM_EINVAL;
        if (o->follow_squad)
            return o->follow_squad < 1 || o->follow_squad > SIM_SQUADS || o->follow_squad == squad
                       ? SIM_EINVAL
                       : (sw->sq[group][o->follow_squad].units ? 0 : SIM_ENOENT);
        return group_of_id(sw, o->follow_unit) < 0 ? SIM_ENOENT : 0;
    }
    return o->order > SIM_ORDER_NONE && o->order < SIM_ORDER_COUNT ? 0 : SIM_EINVAL;
}

int squad_order(struct squad_world *sw, int group, int squad, const struct sim_order_args *o)
{
    struct sim_squad *s;
    int rc = live_squad(sw, group, squad, &s);
    if (rc == 0)
        rc = check_order(sw, group, squad, s, o);
    if (rc < 0)
        return rc;
    if (o->order == SIM_ORDER_MOVE && o->queue && s->order == SIM_ORDER_MOVE) {
        /* Keeps the waypoints ahead, then the new ones. */
        uint32_t ahead = s->nway - s->next;
        memmove(s->way, s->way + s->next, ahead * sizeof s->way[0]);
        memcpy(s->way + ahead, o->way, o->nway * sizeof s->way[0]);
        s->nway = (uint8_t)(ahead + o->nway);
        s->next = 0;
    } else {
        s->order = (uint8_t)o->order;
        s->nway = 0;
        s->next = 0;
        s->follow_squad = 0;
        s->follow_unit = 0;
        s->avx = s->avy = 0.0f;
        switch (o->order) {
        case SIM_ORDER_PATROL: /* ... and back to where it is */
            memcpy(s->way, o->way, o->nway * sizeof s->way[0]);
            s->way[o->nway][0] = s->shape ? s->ax : s->cx;
            s->way[o->nway][1] = s->shape ? s->ay : s->cy;
            s->nway = (uint8_t)(o->nway + 1);
            s->flags |= F_AIM;
            break;
        case SIM_ORDER_MOVE:
            memcpy(s->way, o->way, o->nway * sizeof s->way[0]);
            s->nway = (uint8_t)o->nway;
            s->flags |= F_AIM;
            break;
        case SIM_ORDER_FOLLOW:
            s->follow_squad = (uint16_t)o->follow_squad;
            s->follow_unit = o->follow_unit;
            s->follow_group = o->follow_unit ? (uint16_t)group_of_id(sw, o->follow_unit) : 0;
            s->flags |= F_AIM;
            break;
        default: /* hold, stop: where it is */
            s->gx = s->shape ? s->ax : s->cx;
            s->gy = s->shape ? s->ay : s->cy;
            break;
        }
    }
    sw->news[group]++;
    return 0;
}

int squad_formation(struct squad_world *sw, int group, int squad, enum sim_shape shape,
                    float spacing)
{
    struct sim_squad *s;
    int rc = live_squad(sw, group, squad, &s);
    if (rc < 0)
        return rc;
    if ((unsigned)shape >= SIM_SHAPE_COUNT || !isfinite(spacing) ||
        (spacing != 0.0f && (spacing < 1.0f || spacing > 200.0f)))
        return SIM_ERANGE;
    s->shape = (uint8_t)shape;
    s->spacing = spacing;
    s->spacing = spacing_of(sw, group, s);
    /* A squad that stays forms up about its centre, facing as it faced. */
    bool moving =
        s->order == SIM_ORDER_MOVE || s->order == SIM_ORDER_PATROL || s->order == SIM_ORDER_FOLLOW;
    s->flags |= F_RESLOT | F_AIM;
    if (!moving) {
        float f = 0.5f * depth_of(shape, s->units) * s->spacing;
        s->ax = s->gx = s->cx + f * cosf(s->facing);
        s->ay = s->gy = s->cy + f * sinf(s->facing);
        fold(sw, &s->ax, &s->ay);
        fold(sw, &s->gx, &s->gy);
        s->flags &= ~F_AIM;
    }
    sw->news[group]++;
    return 0;
}

void squad_reset(struct squad_world *sw)
{
    for (int g = 0; g < SIM_GROUPS; g++)
        if (is_used(sw, g)) {
            memset(sw->sq[g], 0, sizeof sw->sq[g]);
            sw->news[g]++;
        }
    memset(sw->used, 0, SIM_GROUPS / 8);
    *sw->live = 0;
}

/* ---- the step ---------------------------------------------------------------- */

void sim_slot_position(const struct sim_squad *s, uint32_t i, float *x, float *y)
{
    float a, b, fx = cosf(s->facing), fy = sinf(s->facing);
    sim_slot_offset((enum sim_shape)s->shape, s->units, i, &a, &b);
    *x = s->ax + s->spacing * (-a * fy - b * fx);
    *y = s->ay + s->spacing * (a * fx - b * fy);
}

/* One pass over the boids: each squad's units, centre and distance from the slots. */
static void gather(struct squad_world *sw)
{
    for (int g = 0; g < SIM_GROUPS; g++)
        if (is_used(sw, g))
            memset(sw->acc[g], 0, sizeof sw->acc[g]);
    for (uint32_t i = 0; i < sw->count; i++) {
        int k = sw->squad[i];
        if (!k)
            continue;
        int g = sw->group[i];
        const struct sim_squad *s = &sw->sq[g][k];
        struct squad_acc *a = &sw->acc[g][k];
        float dx, dy;
        offset(sw, s->cx, s->cy, sw->x[i], sw->y[i], &dx, &dy);
        a->dx += dx, a->dy += dy, a->n++;
        if (s->shape && sw->slot[i] < s->units) {
            float sx, sy;
            sim_slot_position(s, sw->slot[i], &sx, &sy);
            offset(sw, sx, sy, sw->x[i], sw->y[i], &dx, &dy);
            a->err += sqrt((double)dx * dx + (double)dy * dy);
        }
    }
}

static int by_along(const void *p, const void *q)
{
    const struct squad_key *a = p, *b = q;
    if (a->along != b->along)
        return a->along > b->along ? -1 : 1; /* front first */
    return a->i < b->i ? -1 : a->i > b->i;
}

static int by_across(const void *p, const void *q)
{
    const struct squad_key *a = p, *b = q;
    if (a->across != b->across)
        return a->across < b->across ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Hands out squad k's slots: rows from the front, each row left to right. */
static void assign_slots(struct squad_world *sw, int group, int k, struct sim_squad *s)
{
    uint32_t lo, hi, n = 0;
    float fx = cosf(s->facing), fy = sinf(s->facing);
    group_range(sw, group, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++) {
        if (sw->squad[i] != k)
            continue;
        float dx, dy;
        offset(sw, s->cx, s->cy, sw->x[i], sw->y[i], &dx, &dy);
        sw->keys[n++] = (struct squad_key){dx * fx + dy * fy, -dx * fy + dy * fx, i};
    }
    qsort(sw->keys, n, sizeof sw->keys[0], by_along);
    for (uint32_t first = 0; first < n;) {
        float a, b, row;
        sim_slot_offset((enum sim_shape)s->shape, n, first, &a, &row);
        uint32_t end = first + 1;
        while (end < n && (sim_slot_offset((enum sim_shape)s->shape, n, end, &a, &b), b == row))
            end++;
        qsort(sw->keys + first, end - first, sizeof sw->keys[0], by_across);
        for (uint32_t j = first; j < end; j++)
            sw->slot[sw->keys[j].i] = j;
        first = end;
    }
}

/* Where what a following squad follows is; false if it is gone. */
static bool followed(const struct squad_world *sw, int group, const struct sim_squad *s, float *x,
                     float *y)
{
    if (s->follow_squad) {
        const struct sim_squad *t = &sw->sq[group][s->follow_squad];
        *x = t->cx, *y = t->cy;
        return t->units > 0;
    }
    int64_t i = find_in_group(sw, s->follow_group, s->follow_unit);
    if (i < 0)
        return false;
    *x = sw->x[i], *y = sw->y[i];
    return true;
}

/* The squad's goal for this step: where its anchor (or centre) heads. */
static void aim(struct squad_world *sw, int group, struct sim_squad *s, float depth)
{
    if (s->order == SIM_ORDER_MOVE || s->order == SIM_ORDER_PATROL) {
        s->gx = s->way[s->next][0], s->gy = s->way[s->next][1];
    } else if (s->order == SIM_ORDER_FOLLOW) {
        float tx, ty, dx, dy, fromx = s->shape ? s->ax : s->cx, fromy = s->shape ? s->ay : s->cy;
        if (!followed(sw, group, s, &tx, &ty)) {
            s->order = SIM_ORDER_HOLD;
            s->gx = fromx, s->gy = fromy;
            sw->news[group]++;
            return;
        }
        offset(sw, fromx, fromy, tx, ty, &dx, &dy);
        float d = sqrtf(dx * dx + dy * dy), keep = (FOLLOW_GAP + depth) * s->spacing;
        float k = d > keep ? (d - keep) / d : 0.0f;
        s->gx = fromx + k * dx, s->gy = fromy + k * dy;
        fold(sw, &s->gx, &s->gy);
        if (d > 0.5f * s->spacing)
            s->facing = atan2f(dy, dx);
    }
}

/* A squad at its waypoint takes the next one (or, done moving, stops). */
static void next_waypoint(struct squad_world *sw, int group, struct sim_squad *s)
{
    sw->news[group]++;
    if (s->order == SIM_ORDER_PATROL) {
        s->next = (uint8_t)((s->next + 1) % s->nway);
    } else if (++s->next >= s->nway) {
        s->order = SIM_ORDER_STOP;
        s->nway = s->next = 0;
        s->avx = s->avy = 0.0f;
        return;
    }
    s->flags |= F_AIM;
}

/* Turns a squad to face its goal, with the anchor in front of its centre. */
static void face_goal(struct squad_world *sw, int group, struct sim_squad *s, float depth)
{
    aim(sw, group, s, depth);
    float dx, dy;
    offset(sw, s->cx, s->cy, s->gx, s->gy, &dx, &dy);
    if (dx != 0.0f || dy != 0.0f)
        s->facing = atan2f(dy, dx);
    if (s->shape) {
        float f = 0.5f * depth * s->spacing;
        s->ax = s->cx + f * cosf(s->facing);
        s->ay = s->cy + f * sinf(s->facing);
        fold(sw, &s->ax, &s->ay);
    }
    s->flags |= F_RESLOT;
}

/* Half a formation's width, in spacings: its widest row's. */
static float half_width(enum sim_shape shape, uint32_t n)
{
    if (n == 0)
        return 0.0f;
    float a, b, widest = 0.0f;
    uint32_t rows = (uint32_t)depth_of(shape, n) + 1, row = 0;
    for (uint32_t i = 0; i < n && row < rows; i++) { /* the first slot of each row: its left */
        sim_slot_offset(shape, n, i, &a, &b);
        if (b >= (float)row) {
            widest = fmaxf(widest, -a);
            row = (uint32_t)b + 1;
            if (shape != SIM_SHAPE_WEDGE)
                break; /* the first row of rows of c is the widest */
        }
    }
    return widest;
}

/*
 * Where a formation's anchor steers to pass an obstacle: when the way from
 * its rear to its goal runs within half its width (and a spacing) of an
 * obstacle, to the side of the obstacle the way passes on, far enough
 * past it for the rear to clear it; else the goal itself.
 */
static void way_round(const struct squad_world *sw, const struct sim_squad *s, float *tx, float *ty)
{
    float fx = cosf(s->facing), fy = sinf(s->facing);
    float depth = depth_of((enum sim_shape)s->shape, s->units) * s->spacing;
    float clear = (half_width((enum sim_shape)s->shape, s->units) + 1.0f) * s->spacing;
    float rx = s->ax - depth * fx, ry = s->ay - depth * fy, dx, dy, best = INFINITY;
    offset(sw, rx, ry, s->gx, s->gy, &dx, &dy);
    float l2 = dx * dx + dy * dy;
    *tx = s->gx, *ty = s->gy;
    for (uint32_t k = 0; k < sw->obstacle_count && l2 > 0.0f; k++) {
        const struct sim_obstacle *o = &sw->obstacles[k];
        float cx, cy;
        offset(sw, rx, ry, o->x, o->y, &cx, &cy);
        float t = (cx * dx + cy * dy) / l2, ex = cx - t * dx, ey = cy - t * dy;
        float lim = o->r + clear, e = sqrtf(ex * ex + ey * ey);
        if (t <= 0.0f || t >= 1.0f || e >= lim || t >= best || clear > 2.0f * o->r)
            continue; /* a formation wider than twice the obstacle flows round it */
        best = t;     /* the first in the way */
        float l = sqrtf(l2);
        float nx = e > 0.0f ? -ex / e : -dy / l, ny = e > 0.0f ? -ey / e : dx / l;
        float past = fminf(depth + o->r, (1.0f - t) * l); /* never beyond the goal */
        *tx = o->x + nx * (lim + s->spacing) + past * dx / l;
        *ty = o->y + ny * (lim + s->spacing) + past * dy / l;
    }
}

/* Moves a formation's anchor toward its goal (round obstacles in the way). */
static void move_anchor(struct squad_world *sw, int group, struct sim_squad *s)
{
    const struct sim_params *pp = &sw->params[group];
    float dx, dy, tx, ty;
    way_round(sw, s, &tx, &ty);
    bool detour = tx != s->gx || ty != s->gy;
    offset(sw, s->ax, s->ay, tx, ty, &dx, &dy);
    float d = sqrtf(dx * dx + dy * dy);
    float pace = ANCHOR_PACE * pp->max_speed;
    if (!detour) /* a detour's point is passed, not arrived at */
        pace = fminf(pace, fmaxf(ARRIVE_RATE * d, ARRIVE_LEAST * pp->max_speed));
    float step = fminf(pace * sw->dt, d), k = d > 0.0f ? step / d : 0.0f;
    s->ax += k * dx, s->ay += k * dy;
    fold(sw, &s->ax, &s->ay);
    s->avx = d > 0.0f ? pace * dx / d : 0.0f;
    s->avy = d > 0.0f ? pace * dy / d : 0.0f;
    if (s->order == SIM_ORDER_FOLLOW || detour)
        return; /* aim() faced what it follows, it never arrives; nor on a detour */
    if (d - step <= 1e-3f * s->spacing) {
        s->ax = s->gx, s->ay = s->gy, s->avx = s->avy = 0.0f;
        if (s->order == SIM_ORDER_MOVE || s->order == SIM_ORDER_PATROL)
            next_waypoint(sw, group, s);
    }
}

/* A squad without a formation reaches its waypoint with its centre. */
static void move_centre(struct squad_world *sw, int group, struct sim_squad *s)
{
    s->ax = s->cx, s->ay = s->cy;
    if (s->order != SIM_ORDER_MOVE && s->order != SIM_ORDER_PATROL)
        return;
    float dx, dy;
    offset(sw, s->cx, s->cy, s->gx, s->gy, &dx, &dy);
    float r = fmaxf(sw->params[group].arrive_radius, s->spacing);
    if (dx * dx + dy * dy < r * r)
        next_waypoint(sw, group, s);
}

static void step_squad(struct squad_world *sw, int g, int k, struct sim_squad *s)
{
    const struct squad_acc *a = &sw->acc[g][k];
    float cx = s->cx + (float)(a->dx / a->n), cy = s->cy + (float)(a->dy / a->n);
    fold(sw, &cx, &cy);
    s->cx = cx, s->cy = cy;
    s->err = s->shape ? (float)(a->err / a->n) : 0.0f;
    float depth = depth_of((enum sim_shape)s->shape, s->units);
    if (s->flags & F_AIM)
        face_goal(sw, g, s, depth);
    else
        aim(sw, g, s, depth);
    if (s->flags & F_RESLOT && s->shape)
        assign_slots(sw, g, k, s);
    s->flags &= ~(F_AIM | F_RESLOT);
    if (s->shape)
        move_anchor(sw, g, s);
    else
        move_centre(sw, g, s);
}

void squad_step(struct squad_world *sw)
{
    if (*sw->live == 0)
        return;
    gather(sw);
    for (int g = 0; g < SIM_GROUPS; g++) {
        if (!is_used(sw, g))
            continue;
        bool lost = false;
        for (int k = 1; k <= SIM_SQUADS; k++)
            lost |= sw->sq[g][k].units != sw->acc[g][k].n;
        if (lost) { /* a despawn took units: count again, then carry on */
            uint32_t lo, hi;
            group_range(sw, g, &lo, &hi);
            recount(sw, g, lo, hi);
            sw->news[g]++;
        }
        for (int k = 1; k <= SIM_SQUADS; k++)
            if (sw->sq[g][k].units)
                step_squad(sw, g, k, &sw->sq[g][k]);
    }
}

/* ---- the pull on a unit ------------------------------------------------------ */

struct squad_pull squad_pull(const struct squad_world *sw, uint32_t i, float px, float py)
{
    struct squad_pull p = {.kind = SQUAD_FREE, .may_pursue = 1, .may_flee = 1};
    int k = sw->squad[i];
    if (!k)
        return p;
    int g = sw->group[i];
    const struct sim_squad *s = &sw->sq[g][k];
    p.may_pursue = s->order == SIM_ORDER_NONE || s->order == SIM_ORDER_STOP;
    p.may_flee = s->order != SIM_ORDER_HOLD;
    if (s->shape && sw->slot[i] < s->units) {
        float sx, sy, dx, dy, vmax = sw->params[g].max_speed;
        sim_slot_position(s, sw->slot[i], &sx, &sy);
        offset(sw, px, py, sx, sy, &dx, &dy);
        p.kind = SQUAD_SLOT;
        p.to_x = sx, p.to_y = sy;
        p.x = s->avx + dx / SLOT_TAU;
        p.y = s->avy + dy / SLOT_TAU;
        float l = sqrtf(p.x * p.x + p.y * p.y);
        if (l > vmax)
            p.x *= vmax / l, p.y *= vmax / l;
        return p;
    }
    p.kind = s->order == SIM_ORDER_NONE ? SQUAD_FLOCK : SQUAD_SEEK;
    p.x = s->gx, p.y = s->gy;
    return p;
}
