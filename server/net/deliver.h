/*
 * deliver — what the rooms produce, to the clients: replies routed to the
 * sessions that sent the commands, each room's latest frame to its
 * members, changed rosters, and the one message a WRITEABLE callback
 * writes.
 *
 * Frames are latest-wins: a new frame of a room is announced to its
 * members, and each is written the room's newest frame in its turn (at
 * once, or at its next WRITEABLE when its socket has not taken what came
 * before), so a slow client skips frames instead of queueing them; one
 * that got no frame for stale_timeout is evicted. Which frame a client
 * gets is decided in one place (frame_for() in deliver.c): the home of
 * per-client frame choice. A version 1 client gets the frame's version 1
 * part; a version 2 client the part proto_v2_pick() chooses from the
 * frames it was sent since its stream started (its welcome, or the ack of
 * its keyframe command), kept in its session's feed. Each choice tells the
 * room which kind the client takes (room_want()), so the room encodes the
 * kinds its clients take and no other; no frame is ever encoded for one
 * client.
 *
 * Each service thread delivers to its own sessions: the rooms it has
 * members in (lobby_rooms_of), its clients' replies (by client id), its
 * own announced frame per room; a new frame is written to its clients a
 * batch at a time per round of the service loop (deliver_paced()).
 * Replies are routed under the lobby's lock (a held join runs from there)
 * and written at once when the socket can take them, before the frames of
 * the same wake-up are announced, so a command's ack does not wait behind
 * a round of frames; announcing and writing frames take no lock shared
 * between threads but the room's own.
 *
 * Never: parses commands or changes membership (a held join is handed to
 * dispatch.h); reads the clock (`now` comes in). Threading: the service
 * thread owning the sessions; the rooms' output is taken through room.h's
 * thread-safe calls.
 */
#ifndef FLOCKD_DELIVER_H
#define FLOCKD_DELIVER_H

#include <stdint.h>

#include "lobby.h"
#include "session.h"
#include "sessions.h"

/* After a wake-up of ss's service thread: the replies of its rooms to its
 * clients, then each room's new frame to its members, then changed
 * rosters. */
void deliver_rooms(struct sessions *ss, struct lobby *l, int64_t now);

/* Members written a new frame per round of the service loop
 * (deliver_paced()): about half a millisecond of writes, so that a command
 * that arrives meanwhile is read soon. A round of the event loop costs
 * little (epoll), but smaller batches make more of them (server/bench/README.md,
 * "Fan-out and service threads"). */
#define DELIVER_BATCH 64

/*
 * Writes the new frame announced to the next DELIVER_BATCH clients. The
 * service loop calls it after each round of its event loop, so that a
 * round writes one batch of frames and then reads what came meanwhile: a
 * command waits behind one batch, not behind a frame for every client.
 * A frame is written at once, without waiting for the socket to be
 * reported writable, unless something is queued before it (a reply, or
 * the rest of an earlier write the socket did not take): then at the
 * client's next WRITEABLE. Returns how many still wait (the next round
 * must not block).
 */
size_t deliver_paced(struct sessions *ss, int64_t now);

/* Frees what the calling service thread kept for splicing version 3
 * frames: at its end. */
void deliver_thread_end(void);

/* At WRITEABLE (once session_close_if_due() said no): writes one queued
 * reply, else the latest frame, and asks for another WRITEABLE while more
 * waits. 0, or PROTO_E_INTERNAL if the socket took less (close it). */
int deliver_writeable(struct session *s, int64_t now);

#endif
