/*
 * main.c — flockd's entry point: settings, the tick threads, the lobby with
 * its default room, the network service, and an orderly shutdown on
 * SIGINT/SIGTERM.
 *
 * Signals are blocked before any thread starts; one small thread waits for
 * them with sigwait() and asks the service loop to stop. The service loop
 * closes clients with 1001, then the tick threads are joined, every room
 * is checkpointed (with --checkpoint-dir) and everything is freed before
 * exit(0). `flockd --replay` runs replay_main() instead (replay_main.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "buildid.h"
#include "clock.h"
#include "cluster.h"
#include "config.h"
#include "lobby.h"
#include "metrics.h"
#include "net.h"
#include "persist.h"
#include "pool.h"
#include "proto.h"
#include "replay_main.h"
#include "script_dir.h"
#include "room.h"
#include "tlsfiles.h"

#include <libwebsockets.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct app {
    _Atomic(struct net *) net;     /* NULL until the network is up; rooms tick before */
    _Atomic(struct lobby *) lobby; /* for SIGHUP's reload of the room scripts */
    sigset_t signals;
    atomic_int done; /* the service loop has ended: a signal now only wakes */
};

static void wake(void *arg)
{
    struct app *app = arg;
    net_wake(atomic_load_explicit(&app->net, memory_order_acquire));
}

static void *signal_main(void *arg)
{
    struct app *app = arg;
    int sig = 0;
    while (sigwait(&app->signals, &sig) == 0 && !atomic_load(&app->done)) {
        if (sig == SIGHUP) { /* renewed certificates, new versions of the room scripts */
            net_reload_tls(atomic_load(&app->net));
            int failed = lobby_reload_scripts(atomic_load(&app->lobby));
            fprintf(stderr, "flockd: SIGHUP: room scripts read again%s\n",
                    failed ? " (some failed: their old versions stay)" : "");
            continue;
        }
        fprintf(stderr, "flockd: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        net_stop(atomic_load(&app->net));
        break;
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
    rc->mode = PROTO_MODE_SANDBOX;
    rc->team_cap = c->team_cap;
    rc->max_teams = c->max_teams;
    rc->team_units = c->team_units;
    rc->max_message = c->max_message;
    rc->rate = c->rate;
    rc->burst = c->burst;
    rc->player_obstacles = c->player_obstacles;
    rc->tile = (float)c->tile_size;
    rc->spectator_delay = c->spectator_delay;
    rc->view_budget = c->view_budget;
    rc->frame_pre = LWS_PRE;
    rc->notify = wake;
    rc->notify_arg = app;
    rc->script_limits = (struct script_limits){.instructions = c->script_budget,
                                               .memory = (size_t)c->script_memory << 20};
}

/* The room scripts of --scripts-dir (none is fine unless --room-script
 * names one): true, or false (said) when they are needed and unreadable. */
static bool open_scripts(const struct cfg *c, struct room_config *rc)
{
    const char *err = NULL;
    if (c->scripts_dir[0])
        rc->scripts = script_dir_open(c->scripts_dir, &err);
    if (!rc->scripts && c->room_script[0]) {
        fprintf(stderr, "flockd: --room-script %s: %s: %s\n", c->room_script, c->scripts_dir,
                err ? err : "no --scripts-dir");
        return false;
    }
    return true;
}

/* Parses settings: true to run, false to exit at once with `*code`. */
static bool read_settings(int argc, char **argv, struct cfg *c, int *code)
{
    char err[512];
    cfg_default(c);
    int rc = cfg_parse_args(c, argc, argv, err, sizeof err);
    if (rc == CFG_HELP) {
        cfg_help(stdout, "flockd");
        *code = 0;
        return false;
    }
    if (rc < 0 || cfg_apply_env(c, err, sizeof err) < 0 || cfg_validate(c, err, sizeof err) < 0 ||
        cfg_check_files(c, err, sizeof err) < 0) {
        fprintf(stderr, "flockd: %s\n", err);
        *code = 2;
        return false;
    }
    return true;
}

/* The network's settings; cl (NULL: a single process) for its endpoints. */
static struct net_config net_config_from(const struct cfg *c, struct cluster *cl)
{
    uint32_t biggest = c->capacity > c->max_room_boids ? c->capacity : c->max_room_boids;
    return (struct net_config){
        .host = c->host,
        .port = c->port,
        .web_root = c->web_root,
        .max_message = c->max_message,
        .stale_timeout = c->stale_timeout,
        .max_clients = c->max_clients,
        .max_frame = proto_snapshot_max_size(biggest, c->max_obstacles),
        .rate = c->rate,
        .burst = c->burst,
        .max_per_ip = c->max_per_ip,
        .origins = c->origins,
        .ping_interval = c->ping_interval,
        .idle_timeout = c->idle_timeout,
        .tls_cert = c->tls_cert,
        .tls_key = c->tls_key,
        .tls_redirect_port = c->tls_redirect_port,
        .threads = c->net_threads,
        .cluster = cl,
    };
}

static void print_banner(const struct cfg *c, const struct net *net, const struct pool *pool,
                         const struct lobby *lobby)
{
    bool v6 = strchr(c->host, ':') != NULL; /* an IPv6 address goes in brackets in a URL */
    printf("flockd listening on %s://%s%s%s:%d\n", c->tls_cert[0] ? "https" : "http", v6 ? "[" : "",
           c->host, v6 ? "]" : "", net_port(net));
    if (c->tls_redirect_port)
        printf("flockd: http://%s%s%s:%d answers with redirects to https\n", v6 ? "[" : "", c->host,
               v6 ? "]" : "", c->tls_redirect_port);
    printf("flockd: room \"default\": %s, %u boids, %.0f x %.0f %s, %g Hz ticks, %g Hz snapshots\n",
           c->room_mode, c->boids, c->width, c->height, c->edges, c->tick_hz, c->snapshot_hz);
    if (c->room_script[0])
        printf("flockd: room \"default\" plays by script %s (--scripts-dir %s)\n", c->room_script,
               c->scripts_dir);
    printf("flockd: %u service threads, %u tick threads; up to %u rooms%s\n", net_threads(net),
           pool_workers(pool), c->max_rooms,
           c->allow_create ? ", created by joining a new name" : "; joins do not create rooms");
    if (lobby_has_admin_token(lobby))
        printf("flockd: admins: joins with the admin token\n");
    else
        printf("flockd: admins: clients on this machine (loopback) are admins, remote clients "
               "never; set --admin-token or FLOCKD_ADMIN_TOKEN to change that\n");
    fflush(stdout);
}

/* Stops the tick threads first: no tick runs, and so nothing wakes the
 * network, once they are joined. The rooms close their logs before the
 * writer thread stops, and let go of the measuring thread before it stops.
 * Any argument may be NULL, as may rc's persist and measure. */
static void tear_down(struct pool *pool, struct net *net, struct lobby *lobby,
                      const struct room_config *rc)
{
    if (pool)
        pool_stop(pool);
    net_destroy(net);
    lobby_destroy(lobby);
    pool_destroy(pool);
    persist_destroy(rc->persist);
    measure_destroy(rc->measure);
    script_dir_destroy(rc->scripts);
}

/* The command logs and checkpoints the settings ask for: true with *out
 * (NULL if neither), false if a directory cannot be used (said). */
static bool start_persist(const struct cfg *c, struct cluster *cl, struct persist **out)
{
    *out = NULL;
    if (!c->record_dir[0] && !c->checkpoint_dir[0] && !cl)
        return true;
    struct persist_config pc = {
        .record_dir = c->record_dir,
        .fsync = strcmp(c->record_fsync, "never") == 0    ? PERSIST_FSYNC_NEVER
                 : strcmp(c->record_fsync, "always") == 0 ? PERSIST_FSYNC_ALWAYS
                                                          : PERSIST_FSYNC_INTERVAL,
        .hash_every = c->log_hash_every,
        .checkpoint_dir = c->checkpoint_dir,
        .checkpoint_every = c->checkpoint_every,
        .build = buildid(),
        .max_capacity = c->capacity > c->max_room_boids ? c->capacity : c->max_room_boids,
        .max_obstacles = c->max_obstacles,
        .sink = cl ? cluster_store_checkpoint : NULL,
        .sink_arg = cl,
    };
    const char *err = NULL;
    *out = persist_create(&pc, &err);
    if (!*out)
        fprintf(stderr, "flockd: %s\n", err);
    return *out != NULL;
}

static void print_persist(const struct cfg *c)
{
    if (c->record_dir[0])
        printf("flockd: recording every room's commands in %s/ROOM.flog (fsync %s, a hash every "
               "%u ticks); %s\n",
               c->record_dir, c->record_fsync, c->log_hash_every, buildid());
    if (c->checkpoint_dir[0] && c->checkpoint_every > 0)
        printf("flockd: checkpoints of every room in %s every %g s and when stopped\n",
               c->checkpoint_dir, c->checkpoint_every);
    else if (c->checkpoint_dir[0])
        printf("flockd: checkpoints of every room in %s when stopped\n", c->checkpoint_dir);
    if (c->nats_url[0] && c->checkpoint_every > 0)
        printf("flockd: checkpoints of the rooms this node ticks in the cluster's bucket every "
               "%g s and when stopped\n",
               c->checkpoint_every);
    else if (c->nats_url[0])
        printf("flockd: checkpoints of the rooms this node ticks in the cluster's bucket when "
               "stopped\n");
}

/* With --nats: the cluster this node joins, its link in every room
 * (rc->link); NULL if it cannot start (said). */
static struct cluster *start_cluster(struct cfg *c, struct room_config *rc)
{
    if (!c->node_id[0]) { /* HOST-PORT (HOST-PID on an ephemeral port), as a node id may read */
        char host[64] = "flockd";
        gethostname(host, sizeof host - 1);
        snprintf(c->node_id, sizeof c->node_id, "%.40s-%d", host,
                 c->port ? c->port : (int)getpid());
        for (char *p = c->node_id; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                *p = '-';
    }
    struct cluster_config cc = {
        .url = c->nats_url,
        .node_id = c->node_id,
        .frame_pre = LWS_PRE,
        .max_message = c->max_message,
        .command_log = strcmp(c->cluster_log, "on") == 0,
        .user = c->nats_user,
        .password = c->nats_password,
        .token = c->nats_token,
        .creds = c->nats_creds,
        .ca = c->nats_ca,
        .cert = c->nats_cert,
        .key = c->nats_key,
    };
    const char *err = NULL;
    struct cluster *cl = cluster_create(&cc, &err);
    if (!cl) {
        fprintf(stderr, "flockd: cannot join the cluster: %s\n", err);
        return NULL;
    }
    rc->link = cluster_link(cl);
    char shown[1400];
    cluster_describe(&cc, shown, sizeof shown);
    printf("flockd: node %s of the cluster on %s\n", c->node_id, shown);
    return cl;
}

/* After the service loop: every room checkpointed once no tick runs. */
static void final_checkpoints(const struct cfg *c, struct pool *pool, struct lobby *lobby,
                              struct persist *persist)
{
    if (!persist_has_checkpoints(persist))
        return;
    pool_stop(pool);
    lobby_checkpoint(lobby, clock_mono_ns(), true);
    persist_flush(persist);
    if (c->checkpoint_dir[0])
        printf("flockd: checkpoints of %zu rooms written to %s\n", lobby_count(lobby),
               c->checkpoint_dir);
    if (c->nats_url[0])
        printf("flockd: checkpoints of the rooms this node ticks handed to the cluster's bucket\n");
}

/* With --tls-cert: the pair is good (tlsfiles.h) and said so; false with
 * a message naming the file if not. */
static bool check_tls(const struct cfg *c)
{
    if (!c->tls_cert[0])
        return true;
    char why[2200];
    int64_t until;
    if (tlsfiles_check(c->tls_cert, c->tls_key, clock_wall_us() / 1000000, &until, why,
                       sizeof why) < 0) {
        fprintf(stderr, "flockd: TLS: %s\n", why);
        return false;
    }
    time_t t = (time_t)until;
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%d", gmtime(&t));
    printf("flockd: https and wss with certificate %s (valid until %s); SIGHUP reloads it\n",
           c->tls_cert, day);
    return true;
}

/* Snapshot frames of a big room are allocated at 20 Hz or more on the tick
 * threads and freed on the service thread. glibc's default raises its
 * threshold for mapping a big allocation to the size of each one freed, so
 * such frames came to live in the tick threads' heaps, which kept the
 * freed ones resident (about 20 bytes per boid at 100,000 boids). With a
 * fixed threshold every allocation of 128 KiB or more is a mapping of its
 * own: only the pages written are resident, and freeing returns them. */
static void keep_big_allocations_mapped(void)
{
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

/* Runs flockd with settings c (playing the recording rp in its one room,
 * if not NULL) until a signal; returns the exit status. */
static int serve_and_stop(const struct cfg *cfg, struct replay *rp)
{
    struct cfg c = *cfg;
    static struct app app;
    sigemptyset(&app.signals);
    sigaddset(&app.signals, SIGINT);
    sigaddset(&app.signals, SIGTERM);
    sigaddset(&app.signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &app.signals, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    keep_big_allocations_mapped();
    lws_set_log_level(LLL_ERR, NULL);

    if (!check_tls(&c))
        return 1;
    struct room_config rc;
    room_config_from(&c, &rc, &app);
    if (!open_scripts(&c, &rc))
        return 1;
    const char *err = NULL;
    if (rp && replay_serve_room(&rc, rp, &err) < 0) {
        fprintf(stderr, "flockd: the recording cannot be served: %s\n", err);
        return 1;
    }
    struct cluster *cl = NULL;
    if (rp && c.nats_url[0]) {
        fprintf(stderr, "flockd: a recording is served by one flockd: --nats does not apply\n");
        return 2;
    }
    if (c.nats_url[0] && !(cl = start_cluster(&c, &rc)))
        return 1;
    if (!start_persist(&c, cl, &rc.persist)) {
        cluster_destroy(cl);
        return 1;
    }
    rc.measure = measure_create(&err);
    if (!rc.measure) {
        fprintf(stderr, "flockd: cannot start measuring: %s\n", err);
        tear_down(NULL, NULL, NULL, &rc);
        cluster_destroy(cl);
        return 1;
    }
    struct pool *pool = pool_create(c.workers, &err);
    struct lobby *lobby = pool ? lobby_create(&c, &rc, pool, clock_mono_ns(), &err) : NULL;
    if (!lobby) {
        fprintf(stderr, "flockd: cannot start the rooms: %s\n", err);
        tear_down(pool, NULL, NULL, &rc);
        cluster_destroy(cl);
        return 1;
    }
    struct net_config nc = net_config_from(&c, cl);
    struct net *net = net_create(&nc, lobby, &err);
    if (!net) {
        fprintf(stderr, "flockd: cannot serve on %s port %d: %s\n", c.host, c.port, err);
        tear_down(pool, NULL, lobby, &rc);
        cluster_destroy(cl);
        return 1;
    }
    atomic_store_explicit(&app.net, net, memory_order_release);
    atomic_store_explicit(&app.lobby, lobby, memory_order_release);
    pthread_t sig_thread;
    if (pthread_create(&sig_thread, NULL, signal_main, &app) != 0) {
        fprintf(stderr, "flockd: cannot start threads\n");
        cluster_quiesce(cl);
        tear_down(pool, net, lobby, &rc);
        cluster_destroy(cl);
        return 1;
    }
    print_banner(&c, net, pool, lobby);
    print_persist(&c);
    fflush(stdout);

    net_run(net);

    /* Wake the signal thread if no signal did (it ignores this one). */
    atomic_store(&app.done, 1);
    pthread_kill(sig_thread, SIGTERM);
    pthread_join(sig_thread, NULL);
    cluster_quiesce(cl); /* NATS's threads wake the network no more */
    final_checkpoints(&c, pool, lobby, rc.persist);
    tear_down(pool, net, lobby, &rc); /* the rooms give up their leases */
    cluster_destroy(cl);
    printf("flockd: stopped\n");
    return 0;
}

int main(int argc, char **argv)
{
    struct replay_serve serve = {0};
    if (replay_is_asked(argc, argv)) {
        int code = replay_main(argc, argv, &serve);
        if (code >= 0)
            return code;
        argc = serve.argc; /* --serve: flockd's settings follow */
        argv = serve.argv;
    }
    struct cfg c;
    int code = 0;
    bool run = read_settings(argc, argv, &c, &code);
    if (run && serve.replay)
        replay_serve_settings(&c, serve.replay);
    code = run ? serve_and_stop(&c, serve.replay) : code;
    replay_destroy(serve.replay);
    free(serve.argv);
    return code;
}
