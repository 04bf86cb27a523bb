/*
 * replay_main — `flockd --replay FILE ...`: a command log played back
 * instead of running rooms (replay.h plays it).
 *
 *   flockd --replay FILE [--until TICK] [--verify]
 *       headless, as fast as the core steps: notes on stderr (a log of
 *       another build, a torn tail, the speed, a divergence), then as the
 *       last line of stdout one JSON object
 *       {"ticks":N,"tick":T,"hash":"16 hex","verified":K,"first_divergence":null|TICK}
 *       (ticks: steps played; tick: the room's tick at the end). Exit 0,
 *       1 at a divergence (verify, or a command the world refuses), 2 for
 *       a usage error or a log that cannot be read.
 *
 *   flockd --replay FILE --serve [--port PORT ...]
 *       plays the log to browsers: flockd runs as usual (main.c) with one
 *       room, "default", whose world is the recording's (room.h, a room
 *       that plays a recording); the other flags are flockd's settings.
 *       The log's segments must share one world (size, capacity).
 *
 * An edge module: reads the file, the clock (the speed it reports) and
 * prints. Threading: the main thread, before any other starts.
 */
#ifndef FLOCKD_REPLAY_MAIN_H
#define FLOCKD_REPLAY_MAIN_H

#include <stdbool.h>

#include "config.h"
#include "replay.h"
#include "room.h"

/* What --serve leaves to main: the recording, positioned at its start,
 * and the arguments left for the settings (argv[0] first). The caller
 * frees argv (not its strings) and destroys the replay last. */
struct replay_serve {
    struct replay *replay;
    int argc;
    char **argv;
};

/* True if argv asks for a replay (--replay FILE or --replay=FILE). */
bool replay_is_asked(int argc, char **argv);

/* What replay_main() returns for --serve: not an exit status (those are
 * >= 0) but flockd's cue to serve the recording. */
#define REPLAY_MAIN_SERVE (-1)

/* Runs the headless replay argv asks for and returns the exit status; or,
 * with --serve, opens the log, fills *serve and returns REPLAY_MAIN_SERVE. */
int replay_main(int argc, char **argv, struct replay_serve *serve);

/* The settings a served recording overrides: its world, rate and boid
 * count; one room that no join creates more of; no logs or checkpoints. */
void replay_serve_settings(struct cfg *c, const struct replay *rp);

/* rc becomes the config of the room that plays rp. 0, or a negative code
 * with *why. */
int replay_serve_room(struct room_config *rc, struct replay *rp, const char **why);

#endif
