/*
 * room_board — texts a room's thread writes for its members, each in a
 * numbered slot (a team's squads message, a script's state for the room
 * or a team, the room's dilation), which the service threads send to whom
 * each slot is for:
 * every text carries the board's version when it was written, so a
 * member that had the board up to version v gets exactly what is newer.
 *
 * Used by room_squads.c, room_script.c and room_pace.c only
 * (room_internal.h's files).
 * Never: decide who a slot is for (the caller's `wants`). Threading: the
 * room thread writes (board_put), any thread reads (board_send); the lock
 * covers the slots and the version.
 */
#ifndef FLOCKD_ROOM_BOARD_H
#define FLOCKD_ROOM_BOARD_H

#include "room.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROOM_BOARD_SLOTS (SIM_GROUPS + 1)

struct room_board {
    pthread_mutex_t lock;
    uint64_t version;      /* +1 for every text written */
    _Atomic uint64_t news; /* news.h: a text was written */
    struct {
        uint64_t version; /* the board's when it was written; 0: none */
        size_t len;
        char *text;
    } slot[ROOM_BOARD_SLOTS];
};

void room_board_init(struct room_board *b);
void room_board_free(struct room_board *b);

/* text[0..len) (copied) replaces slot's, and the service threads have news.
 * Dropped if memory runs out. */
void room_board_put(struct room_board *b, unsigned slot, const char *text, size_t len);

/* Calls send() with each text newer than `since` in a slot wants(slot,
 * arg) says yes to, in slot order; returns the board's version now. */
uint64_t room_board_send(struct room_board *b, uint64_t since,
                         bool (*wants)(unsigned slot, const void *arg), const void *arg,
                         room_text_fn *send, void *ctx);

/* The board's version now: texts written later are newer than it. */
uint64_t room_board_version(struct room_board *b);

#endif
