/*
 * room_replay.c — a room that plays a recording instead of simulating
 * (room.h, cfg.replay): its step, the commands it takes, goto.
 *
 * The tick thread is the only one to touch the replay, as it is for a
 * world: stepping and goto both run inside room_tick().
 */
#include "room_internal.h"

#include "replay.h"

void room__step(struct room *r, const struct pool_time *t)
{
    if (!r->cfg.replay) {
        stepper_step(&r->stepper, r->world, t, r->task.period_ns);
        return;
    }
    if (replay_advance(r->cfg.replay, UINT64_MAX) != 1) {
        r->paused = 1; /* the recording's end: hold its last state */
        r->steps_pending = 0;
    }
}

int room__replay_allows(const struct room *r, enum proto_cmd kind, const char **message)
{
    if (!r->cfg.replay) {
        if (kind != PROTO_CMD_GOTO)
            return 0;
        *message = "goto: this room is live, not a recording";
        return PROTO_E_FORBIDDEN;
    }
    switch (kind) {
    case PROTO_CMD_PING:
    case PROTO_CMD_STATS:
    case PROTO_CMD_KEYFRAME:
    case PROTO_CMD_PAUSE:
    case PROTO_CMD_RESUME:
    case PROTO_CMD_STEP:
    case PROTO_CMD_GOTO:
    case PROTO_CMD_JOIN:
    case PROTO_CMD_KICK:
        return 0;
    default:
        *message = "this room plays a recording: it takes pause, resume, step and goto";
        return PROTO_E_FORBIDDEN;
    }
}

int room__goto(struct room *r, uint64_t tick, const char **message)
{
    uint64_t step = 0;
    if (replay_step_of_tick(r->cfg.replay, tick, &step) < 0) {
        *message = "goto: the recording never reaches that tick";
        return PROTO_E_OUT_OF_RANGE;
    }
    if (replay_seek(r->cfg.replay, step) < 0) {
        *message = "goto: the recording cannot be played to that tick";
        return PROTO_E_INTERNAL;
    }
    return 0;
}
