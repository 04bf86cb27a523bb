/*
 * main.c — flockd's entry point: settings, the default room, the network
 * service, and an orderly shutdown on SIGINT/SIGTERM.
 *
 * Signals are blocked before any thread starts; one small thread waits for
 * them with sigwait() and asks the service loop to stop. The service loop
 * closes clients with 1001, then the room thread is joined and everything
 * is freed before exit(0).
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"
#include "metrics.h"
#include "net.h"
#include "proto.h"
#include "room.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

struct app {
    struct net *net; /* set before the room starts ticking */
    sigset_t signals;
    atomic_int done; /* the service loop has ended: a signal now only wakes */
};

static void wake(void *arg)
{
    struct app *app = arg;
    net_wake(app->net);
}

static void *signal_main(void *arg)
{
    struct app *app = arg;
    int sig = 0;
    if (sigwait(&app->signals, &sig) == 0 && !atomic_load(&app->done)) {
        fprintf(stderr, "flockd: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        net_stop(app->net);
    }
    return NULL;
}

/* Thousands of viewers need thousands of descriptors: lift the soft limit. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void room_config_from(const struct cfg *c, struct room_config *rc, struct app *app)
{
    memset(rc, 0, sizeof *rc);
    rc->name = "default";
    sim_default_config(&rc->sim);
    rc->sim.width = (float)c->width;
    rc->sim.height = (float)c->height;
    rc->sim.dt = (float)(1.0 / c->tick_hz);
    rc->sim.capacity = c->capacity;
    rc->sim.max_obstacles = c->max_obstacles;
    rc->sim.edges = strcmp(c->edges, "contain") == 0 ? SIM_EDGES_CONTAIN : SIM_EDGES_WRAP;
    rc->sim.seed = c->seed;
    rc->boids = c->boids;
    rc->tick_hz = c->tick_hz;
    rc->snapshot_hz = c->snapshot_hz;
    rc->queue_len = c->queue_len;
    rc->frame_pre = LWS_PRE;
    rc->notify = wake;
    rc->notify_arg = app;
}

/* Parses settings; returns -1 to exit with `*code`, 0 to run. */
static int settings(int argc, char **argv, struct cfg *c, int *code)
{
    char err[512];
    cfg_default(c);
    int rc = cfg_parse_args(c, argc, argv, err, sizeof err);
    if (rc == CFG_HELP) {
        cfg_help(stdout, "flockd");
        *code = 0;
        return -1;
    }
    if (rc < 0 || cfg_validate(c, err, sizeof err) < 0) {
        fprintf(stderr, "flockd: %s\n", err);
        *code = 2;
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct cfg c;
    int code = 0;
    if (settings(argc, argv, &c, &code) < 0)
        return code;

    static struct app app;
    sigemptyset(&app.signals);
    sigaddset(&app.signals, SIGINT);
    sigaddset(&app.signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &app.signals, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    lws_set_log_level(LLL_ERR, NULL);

    struct room_config rc;
    room_config_from(&c, &rc, &app);
    const char *err = NULL;
    struct room *room = room_create(&rc, &err);
    if (!room) {
        fprintf(stderr, "flockd: cannot create the default room: %s\n", err);
        return 1;
    }
    struct net_config nc = {
        .host = c.host,
        .port = c.port,
        .web_root = c.web_root,
        .max_message = c.max_message,
        .stale_timeout = c.stale_timeout,
        .max_clients = c.max_clients,
        .max_frame = proto_snapshot_max_size(c.capacity, c.max_obstacles),
    };
    app.net = net_create(&nc, room, &err);
    if (!app.net) {
        fprintf(stderr, "flockd: %s\n", err);
        room_destroy(room);
        return 1;
    }
    pthread_t sig_thread;
    if (room_start(room) < 0 || pthread_create(&sig_thread, NULL, signal_main, &app) != 0) {
        fprintf(stderr, "flockd: cannot start threads\n");
        net_destroy(app.net);
        room_destroy(room);
        return 1;
    }
    printf("flockd listening on http://%s:%d\n", c.host, net_port(app.net));
    printf("flockd: room \"default\": %u boids, %.0f x %.0f %s, %g Hz ticks, %g Hz snapshots\n",
           c.boids, c.width, c.height, c.edges, c.tick_hz, c.snapshot_hz);
    fflush(stdout);

    net_run(app.net);

    /* Wake the signal thread if no signal did (it ignores this one). */
    atomic_store(&app.done, 1);
    pthread_kill(sig_thread, SIGTERM);
    pthread_join(sig_thread, NULL);
    room_stop(room);
    net_destroy(app.net);
    room_destroy(room);
    printf("flockd: stopped\n");
    return 0;
}
