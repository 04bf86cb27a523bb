/*
 * fuzz_cluster — the decoders of the messages flockd nodes send each
 * other over NATS (cluster_wire.h, server/cluster/CLUSTER.md §3) on arbitrary
 * bytes: a frame, a command, a reply, a want, an owner's parameters and
 * the question for them.
 *
 * Each is network input: a decoder must refuse with a negative code or
 * accept, never read outside the input. What it accepts must hold: a
 * frame's parts lie inside the frame it built, each behind the headroom
 * asked for, and encode back to the same bytes with the same term; a
 * command's room is a room name, its text inside the input and its id one
 * JSON scalar or none, and it encodes back to the same bytes; a reply is
 * one JSON object for a client other than 0, and encodes back; a want
 * names only kinds that exist; parameters are valid for the registry
 * (and encode back to the same bytes); a relay's view message names a
 * node and encodes back to a message that decodes alike; an owner's
 * tiles message, taken by a fresh relay inbox of the grid
 * tests/unit/test_tilefeed.c writes its seeds with (3200 x 2000 units,
 * tiles of 400), yields tilesets of that grid or asks for keys.
 */
#include "fuzz_common.h"

#include "cluster_wire.h"
#include "params.h"
#include "proto_json.h"
#include "tilefeed.h"
#include "tileneed.h"
#include "tiles.h"

#include <stdlib.h>
#include <string.h>

#define PRE 16

static void check_frame(const uint8_t *data, size_t size)
{
    struct cluster_frame_meta meta;
    int rc = 0;
    struct frame *f = cluster_frame_decode(data, size, PRE, &meta, &rc);
    if (!f) {
        if (rc >= 0)
            fuzz_fail("a refused frame without a negative code (%d)", rc);
        return;
    }
    if (meta.term == 0 || f->seq == 0 || f->plan.count < 1 || f->plan.count > PROTO_V2_PLAN_MAX)
        fuzz_fail("an accepted frame with term, sequence or plan out of range");
    if (cluster_frame_size(f) != size)
        fuzz_fail("an accepted frame of %zu bytes says it takes %zu", size, cluster_frame_size(f));
    for (unsigned k = 0; k < FRAME_KINDS; k++)
        if (f->part[k].len && f->part[k].off < PRE)
            fuzz_fail("part %u has no headroom", k);
    uint8_t *again = malloc(size);
    if (again && (cluster_frame_encode(f, meta.term, again, size) != (int)size ||
                  memcmp(again, data, size) != 0))
        fuzz_fail("an accepted frame does not encode back to the same bytes");
    free(again);
    frame_release(f);
}

static void check_command(const uint8_t *data, size_t size)
{
    struct cluster_cmd c;
    if (cluster_cmd_decode(data, size, &c) < 0)
        return;
    if (!cluster_is_room_name(c.room, strlen(c.room)) || c.who.client == 0)
        fuzz_fail("an accepted command names no room or client");
    if ((const uint8_t *)c.text < data || (const uint8_t *)c.text + c.text_len > data + size)
        fuzz_fail("an accepted command's text lies outside the message");
    if (c.id[0] && !proto_json_is_scalar(c.id))
        fuzz_fail("an accepted command's id is not one JSON scalar");
    uint8_t *again = malloc(size);
    if (again &&
        (cluster_cmd_encode(&c, again, size) != (int)size || memcmp(again, data, size) != 0))
        fuzz_fail("an accepted command does not encode back to the same bytes");
    free(again);
}

static void check_reply(const uint8_t *data, size_t size)
{
    struct cluster_reply r;
    if (cluster_reply_decode(data, size, &r) < 0)
        return;
    if (r.client == 0 || r.text_len < 2 || r.text[0] != '{' || memchr(r.text, 0, r.text_len))
        fuzz_fail("an accepted reply is not one JSON object for a client");
    uint8_t *again = malloc(size);
    if (again &&
        (cluster_reply_encode(&r, again, size) != (int)size || memcmp(again, data, size) != 0))
        fuzz_fail("an accepted reply does not encode back to the same bytes");
    free(again);
}

static void check_want(const uint8_t *data, size_t size)
{
    unsigned kinds = 0;
    if (cluster_want_decode(data, size, &kinds) == 0 && kinds >= 1u << FRAME_KINDS)
        fuzz_fail("an accepted want names kinds that do not exist");
}

static void check_params(const uint8_t *data, size_t size)
{
    static struct sim_params values[SIM_GROUPS];
    if (cluster_params_decode(data, size, values) < 0)
        return;
    for (unsigned g = 0; g < SIM_GROUPS; g++)
        for (size_t i = 0; i < sim_param_count(); i++)
            if (!sim_param_valid(sim_param_at(i), *sim_param_field(&values[g], sim_param_at(i))))
                fuzz_fail("accepted parameters hold a value out of the registry's range");
    uint8_t *again = malloc(size);
    if (again &&
        (cluster_params_encode(values, again, size) != (int)size || memcmp(again, data, size) != 0))
        fuzz_fail("accepted parameters do not encode back to the same bytes");
    free(again);
    (void)cluster_ask_decode(data, size);
}

static void check_tile_want(const uint8_t *data, size_t size)
{
    struct tilefeed_want w, again;
    if (tilefeed_want_decode(data, size, &w) < 0)
        return;
    if (!w.node[0] || strlen(w.node) > PROTO_NODE_MAX || !w.cols || !w.rows)
        fuzz_fail("an accepted view message names no node or an empty grid");
    uint8_t *buf = NULL, *buf2 = NULL;
    int n = tilefeed_want_encode(&w, &buf);
    if (n > 0) {
        if (tilefeed_want_decode(buf, (size_t)n, &again) < 0)
            fuzz_fail("an accepted view message encodes to one that is refused");
        int n2 = tilefeed_want_encode(&again, &buf2);
        if (n2 != n || memcmp(buf, buf2, (size_t)n) != 0)
            fuzz_fail("a view message encoded again differs");
        tilefeed_want_free(&again);
    }
    free(buf);
    free(buf2);
    tilefeed_want_free(&w);
}

static void check_tiles(const uint8_t *data, size_t size)
{
    struct tiles_grid g;
    tiles_grid_for(3200, 2000, 400, 100, &g);
    struct tileneed *need = tileneed_create(g.cols, g.rows);
    struct tileinbox *in = need ? tileinbox_create(&g, need) : NULL;
    struct tileinbox_out out;
    if (in && tileinbox_take(in, data, size, &out) == 0) {
        /* A set per audience block (1..18 of them, CLUSTER.md §3.8); the
         * audiences a relay did not ask for are NULL between them. */
        uint32_t sets = out.v3.delayed != NULL;
        for (uint32_t k = 0; k < out.v3.count; k++)
            sets += out.v3.sets[k] != NULL;
        if (out.v3.count > 32 || sets == 0 || sets > 18)
            fuzz_fail("an accepted tiles message holds no tileset, or more than it may");
        tileinbox_out_free(&out);
    }
    tileinbox_destroy(in);
    tileneed_release(need);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_frame(data, size);
    check_command(data, size);
    check_reply(data, size);
    check_want(data, size);
    check_params(data, size);
    check_tile_want(data, size);
    check_tiles(data, size);
    return 0;
}
