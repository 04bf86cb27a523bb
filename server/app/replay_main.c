/*
 * replay_main.c — flockd --replay (see replay_main.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "replay_main.h"

#include "buildid.h"
#include "clock.h"
#include "proto.h"
#include "room_persist.h"
#include "sim_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_DIVERGED 1
#define EXIT_USAGE    2

struct replay_args {
    const char *file;
    uint64_t until; /* UINT64_MAX: to the end */
    bool verify, serve;
    int rest_argc; /* what is left for the settings (--serve) */
    char **rest_argv;
};

bool replay_is_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--replay") == 0 || strncmp(argv[i], "--replay=", 9) == 0)
            return true;
    return false;
}

/* The value of flag argv[*i] ("--f V" or "--f=V"), or NULL if missing. */
static const char *value_of(int argc, char **argv, int *i, const char *flag)
{
    size_t n = strlen(flag);
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

static bool is_flag(const char *arg, const char *flag)
{
    size_t n = strlen(flag);
    return strncmp(arg, flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* Parses the replay's own flags; the others go to rest_argv. */
static bool parse_args(int argc, char **argv, struct replay_args *a)
{
    *a = (struct replay_args){.until = UINT64_MAX, .rest_argc = 1};
    a->rest_argv = calloc((size_t)argc + 1, sizeof *a->rest_argv);
    if (!a->rest_argv)
        return false;
    a->rest_argv[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        char *end = NULL;
        if (is_flag(argv[i], "--replay")) {
            if (!(a->file = value_of(argc, argv, &i, "--replay")))
                return false;
        } else if (is_flag(argv[i], "--until")) {
            v = value_of(argc, argv, &i, "--until");
            errno = 0;
            a->until = v ? strtoull(v, &end, 10) : 0;
            if (!v || !*v || *end || errno || v[0] == '-')
                return false;
        } else if (strcmp(argv[i], "--verify") == 0) {
            a->verify = true;
        } else if (strcmp(argv[i], "--serve") == 0) {
            a->serve = true;
        } else {
            a->rest_argv[a->rest_argc++] = argv[i];
        }
    }
    return a->file != NULL;
}

/* All of path into a malloc'd buffer (the caller frees it): 0, or a
 * negative errno. */
static int read_whole(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *grown = realloc(buf, cap *= 2);
        if (!grown)
            free(buf);
        buf = grown;
    }
    int failed = !buf || ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return buf ? -EIO : -ENOMEM;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Notes before the replay: builds other than this one, a torn tail. */
static void say_up_front(const struct replay *rp, const char *file)
{
    const char *self = buildid();
    for (size_t i = 0; i < replay_segments(rp); i++) {
        const char *b = replay_build(rp, i);
        if (strcmp(b, self) != 0 && (i == 0 || strcmp(b, replay_build(rp, i - 1)) != 0))
            fprintf(stderr,
                    "flockd: %s (segment %zu of %zu) was recorded by another build, \"%s\"; "
                    "this is \"%s\": its hashes may legitimately differ\n",
                    file, i + 1, replay_segments(rp), b, self);
    }
    if (replay_is_torn(rp))
        fprintf(stderr, "flockd: %s ends in a torn record (a write cut short); it is ignored\n",
                file);
}

/* Opens the log named by a: the replay, or NULL (said). */
static struct replay *open_log(const struct replay_args *a)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = read_whole(a->file, &buf, &len);
    if (rc < 0) {
        fprintf(stderr, "flockd: --replay %s: %s\n", a->file, strerror(-rc));
        return NULL;
    }
    char why[256];
    struct replay *rp = replay_open(buf, len, why, sizeof why);
    if (!rp)
        fprintf(stderr, "flockd: --replay %s: not a usable command log: %s\n", a->file, why);
    else
        say_up_front(rp, a->file);
    return rp;
}

/* --serve: the log must be of one world; it is played to its start.
 * REPLAY_MAIN_SERVE, or EXIT_USAGE (said). */
static int start_serving(struct replay_args *a, struct replay *rp, struct replay_serve *serve)
{
    if (!replay_is_one_world(rp) || replay_seek(rp, 0) < 0) {
        fprintf(stderr, "flockd: --replay %s --serve: %s\n", a->file,
                replay_is_one_world(rp) ? "its start cannot be played"
                                        : "its segments have worlds of different sizes or "
                                          "capacities; --serve plays one world");
        replay_destroy(rp);
        free(a->rest_argv);
        return EXIT_USAGE;
    }
    uint64_t first = 0, last = 0;
    replay_tick_range(rp, &first, &last);
    printf("flockd: serving the recording %s: ticks %llu to %llu, %llu steps; pause, step and "
           "goto from the viewer\n",
           a->file, (unsigned long long)first, (unsigned long long)last,
           (unsigned long long)replay_total_steps(rp));
    *serve = (struct replay_serve){.replay = rp, .argc = a->rest_argc, .argv = a->rest_argv};
    return REPLAY_MAIN_SERVE;
}

static int run_headless(const struct replay_args *a, struct replay *rp)
{
    replay_set_verify(rp, a->verify);
    int64_t t0 = clock_mono_ns();
    int rc;
    while ((rc = replay_advance(rp, a->until)) == 1)
        ;
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    uint64_t steps = replay_steps(rp), tick = 0;
    const char *why = NULL;
    bool diverged = replay_divergence(rp, &tick, &why);
    if (diverged)
        fprintf(stderr, "flockd: %s diverges at tick %" PRIu64 ": %s\n", a->file, tick, why);
    fprintf(stderr, "flockd: replayed %" PRIu64 " ticks in %.3f s (%.0f ticks/s)\n", steps, secs,
            secs > 0 ? (double)steps / secs : 0.0);
    struct sim_view v;
    sim_view(replay_world(rp), &v);
    char first[32] = "null";
    if (diverged)
        snprintf(first, sizeof first, "%" PRIu64, tick);
    printf("{\"ticks\":%" PRIu64 ",\"tick\":%" PRIu64 ",\"hash\":\"%016" PRIx64
           "\",\"verified\":%" PRIu64 ",\"first_divergence\":%s}\n",
           steps, v.tick, sim_hash(replay_world(rp)), replay_verified(rp), first);
    return rc < 0 ? EXIT_DIVERGED : 0;
}

int replay_main(int argc, char **argv, struct replay_serve *serve)
{
    struct replay_args a;
    *serve = (struct replay_serve){0};
    if (!parse_args(argc, argv, &a)) {
        fprintf(stderr,
                "flockd: usage: %s --replay FILE [--until TICK] [--verify] | "
                "--replay FILE --serve [--port PORT ...] (see --help)\n",
                argv[0]);
        free(a.rest_argv);
        return EXIT_USAGE;
    }
    if (!a.serve && a.rest_argc > 1) {
        fprintf(stderr, "flockd: --replay without --serve takes only --until and --verify\n");
        free(a.rest_argv);
        return EXIT_USAGE;
    }
    struct replay *rp = open_log(&a);
    if (rp && a.serve)
        return start_serving(&a, rp, serve);
    int code = rp ? run_headless(&a, rp) : EXIT_USAGE;
    replay_destroy(rp);
    free(a.rest_argv);
    return code;
}

void replay_serve_settings(struct cfg *c, const struct replay *rp)
{
    const struct ckpt *first = replay_first(rp);
    struct sim_state_info info;
    sim_state_check(first->world, first->world_len, &info, NULL);
    c->capacity = info.cfg.capacity > c->capacity ? info.cfg.capacity : c->capacity;
    c->boids = first->boids;
    c->width = info.cfg.width;
    c->height = info.cfg.height;
    c->tick_hz = first->tick_hz;
    c->snapshot_hz = c->snapshot_hz > c->tick_hz ? c->tick_hz : c->snapshot_hz;
    snprintf(c->edges, sizeof c->edges, "%s",
             info.cfg.edges == SIM_EDGES_CONTAIN ? "contain" : "wrap");
    c->max_rooms = 1;
    c->allow_create = 0;
    c->record_dir[0] = '\0';
    c->checkpoint_dir[0] = '\0';
}

int replay_serve_room(struct room_config *rc, struct replay *rp, const char **why)
{
    int rc_ = room_config_restoring(rc, replay_first(rp), why);
    rc->mode = PROTO_MODE_SANDBOX; /* the lobby's default room */
    rc->replay = rp;
    return rc_;
}
