/*
 * ctl_args.c — the flag table and its parser (see ctl_args.h).
 *
 * Every flag of every subcommand is one row below, so a flag means the same
 * thing wherever it is accepted and --help is generated from the same rows.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_args.h"

#include "ctl_join.h"
#include "ctl_view.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum flag_kind {
    FLAG_STRING,
    FLAG_NUMBER,
    FLAG_INT,
    FLAG_SWITCH, /* int 1 when given, no value */
    FLAG_CHOICE, /* a string, one of those the metavar lists ("a|b|c") */
};

struct flag {
    const char *name; /* "--url" */
    const char *metavar;
    enum flag_kind kind;
    double lo, hi;   /* bounds of a number, inclusive */
    const char *def; /* default as shown in --help */
    size_t offset;   /* field of struct ctl_args */
    const char *help;
};

#define F(field) offsetof(struct ctl_args, field)

static const struct flag flags[] = {
    {"--url", "URL", FLAG_STRING, 0, 0, CTL_DEFAULT_URL, F(url), "flockd's WebSocket endpoint"},
    {"--seconds", "S", FLAG_NUMBER, 0, 86400, NULL, F(seconds), "how long to run"},
    {"--timeout", "S", FLAG_NUMBER, 0.1, 600, "5", F(timeout),
     "how long to wait for the connection and for each reply"},
    {"--clients", "N", FLAG_INT, 1, 100000, "100", F(clients), "concurrent viewer connections"},
    {"--threads", "N", FLAG_INT, 1, 16, "2", F(threads), "epoll worker threads"},
    {"--read-delay-ms", "D", FLAG_INT, 0, 60000, "0", F(read_delay_ms),
     "each client pauses D ms after every read (a slow reader)"},
    {"--rcvbuf", "B", FLAG_INT, 0, 64 << 20, "0", F(rcvbuf),
     "each client's socket receive buffer in bytes (SO_RCVBUF; 0: sized by the kernel as it "
     "reads)"},
    {"--connect-rate", "N", FLAG_INT, 1, 10000, "20", F(connect_batch),
     "connections started per millisecond at most (staggered connects)"},
    {"--insecure", "", FLAG_SWITCH, 0, 1, NULL, F(insecure),
     "wss:// only: accept a certificate that does not verify (self-signed, other name, expired)"},
    {"--protocol", "V", FLAG_INT, 1, 3, "2", F(protocol),
     "snapshot version to ask for: 3 (views; offered before 2 and 1, which a server without it "
     "takes), 2 (offered before 1) or 1"},
    {"--view", "X,Y,W,H", FLAG_STRING, 0, 0, NULL, F(view_rect),
     "with --protocol 3: after the welcome, look at this part of the world (world units: "
     "top-left corner, width and height; PROTOCOL.md 12.4) and wait for the view's ack "
     "(default: the whole room)"},
    {"--views", "random", FLAG_CHOICE, 0, 0, NULL, F(views),
     "with --protocol 3: every client looks at a view of its own, of --view-size, at a random "
     "place within the world"},
    {"--view-size", "W,H", FLAG_STRING, 0, 0, NULL, F(view_size),
     "the size of each client's view with --views random, world units (default "
     "1600,900)"},
    {"--px", "N", FLAG_INT, 1, 16384, NULL, F(px),
     "the width in pixels the view is drawn at (the server's level of detail; default: the "
     "view's width)"},
    {"--budget", "B", FLAG_INT, 1000, 100000000, NULL, F(budget),
     "bytes per second the view may take (default: the welcome's stream.budget)"},
    {"--decode", "", FLAG_SWITCH, 0, 1, NULL, F(decode),
     "every client decodes every snapshot (bases, bodies, hashes) and counts the refused ones "
     "in decode_failures; costs CPU"},
    {"--room", "NAME", FLAG_STRING, 0, 0, NULL, F(room),
     "after the welcome, join this room (created if it does not exist and the server allows): "
     "1 to 32 of A-Z a-z 0-9 _ - (default: stay in default, as a connection starts)"},
    {"--role", "viewer|player|admin", FLAG_CHOICE, 0, 0, NULL, F(role),
     "the role to join with (any join flag joins; without --room the room is default); "
     "player needs the room's --password if it has one, admin the server's --token"},
    {"--token", "T", FLAG_STRING, 0, 0, NULL, F(token),
     "the server's admin token, for --role admin: up to 128 bytes of printable UTF-8"},
    {"--password", "P", FLAG_STRING, 0, 0, NULL, F(password),
     "the room's password (players; a room the join creates gets it): up to 128 bytes of "
     "printable UTF-8"},
    {"--name", "N", FLAG_STRING, 0, 0, NULL, F(name),
     "the name the room's other members see: up to 32 bytes of printable UTF-8"},
    {"--mode", "sandbox|rts", FLAG_CHOICE, 0, 0, NULL, F(mode),
     "a room the join creates is of this mode (joining one of another mode is refused)"},
    {"--boids", "N", FLAG_STRING, 0, 0, NULL, F(boids),
     "a room the join creates starts with N boids (at most the server's max-room-boids)"},
    {"--width", "W", FLAG_STRING, 0, 0, NULL, F(width),
     "a room the join creates is W world units wide, 16 to 1000000 (default: sized for its "
     "boids)"},
    {"--height", "H", FLAG_STRING, 0, 0, NULL, F(height),
     "a room the join creates is H world units high, 16 to 1000000 (default: sized for its "
     "boids)"},
    {"--edges", "wrap|contain", FLAG_CHOICE, 0, 0, NULL, F(edges),
     "the edges of a room the join creates (default: contain for rts, the server's for sandbox)"},
    {"--teams", "N", FLAG_STRING, 0, 0, NULL, F(teams),
     "an rts room the join creates takes N teams, 2 up to the server's max-teams"},
    {"--units", "N", FLAG_STRING, 0, 0, NULL, F(units),
     "an rts room the join creates starts each team with N units, up to the server's team-cap"},
    {"--format", "records|csv|jsonl", FLAG_CHOICE, 0, 0, "records", F(format),
     "records: a JSON line per record; csv: a row per boid; jsonl: a JSON object per snapshot"},
};

#define NFLAGS (sizeof flags / sizeof flags[0])

volatile sig_atomic_t ctl_stop;

static void on_signal(int sig)
{
    (void)sig;
    ctl_stop = 1;
}

void ctl_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

double ctl_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t ctl_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static const struct flag *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (strlen(flags[i].name) == len && !strncmp(flags[i].name, name, len))
            return &flags[i];
    return NULL;
}

static int accepts(const struct ctl_command *cmd, const struct flag *f)
{
    for (const char *const *p = cmd->flags; *p; p++)
        if (!strcmp(*p, f->name))
            return 1;
    return 0;
}

static void set_default(struct ctl_args *a, const struct flag *f)
{
    char *field = (char *)a + f->offset;
    if (f->kind == FLAG_STRING || f->kind == FLAG_CHOICE)
        *(const char **)(void *)field = f->def;
    else if (f->kind == FLAG_NUMBER)
        *(double *)(void *)field = f->def ? strtod(f->def, NULL) : 0;
    else
        *(int *)(void *)field = f->def ? atoi(f->def) : 0;
}

/* True if val is one of the choices the metavar lists ("a|b|c"). */
static bool is_choice(const struct flag *f, const char *val)
{
    size_t n = strlen(val);
    for (const char *c = f->metavar; *c; c += strcspn(c, "|"), c += *c == '|') {
        if (strcspn(c, "|") == n && !strncmp(c, val, n))
            return true;
    }
    return false;
}

/* Stores one flag's value; -1 if it is not a number in range or not one
 * of the choices. */
static int set_value(struct ctl_args *a, const struct flag *f, const char *val)
{
    char *field = (char *)a + f->offset;
    if (f->kind == FLAG_STRING || f->kind == FLAG_CHOICE) {
        if (f->kind == FLAG_CHOICE && !is_choice(f, val))
            return -1;
        *(const char **)(void *)field = val;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !isfinite(v) || v < f->lo || v > f->hi)
        return -1;
    if (f->kind == FLAG_NUMBER) {
        *(double *)(void *)field = v;
        return 0;
    }
    if (v != floor(v))
        return -1;
    *(int *)(void *)field = (int)v;
    return 0;
}

/* Ends a usage error whose reason was printed: points to the help. */
static int try_help(const struct ctl_command *cmd)
{
    fprintf(stderr, "Try 'flockctl %s --help'.\n", cmd->name);
    return CTL_EXIT_USAGE;
}

static int usage_error(const struct ctl_command *cmd, const char *what, const char *arg)
{
    fprintf(stderr, "flockctl %s: %s '%s'\n", cmd->name, what, arg);
    return try_help(cmd);
}

/* Handles argv[*i], a flag; advances *i past its value. */
static int parse_flag(const struct ctl_command *cmd, int argc, char **argv, int *i,
                      struct ctl_args *a)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    const struct flag *f = find_flag(arg, eq ? (size_t)(eq - arg) : strlen(arg));
    if (!f || !accepts(cmd, f))
        return usage_error(cmd, "unknown flag", arg);
    const char *val = eq ? eq + 1 : NULL;
    if (f->kind == FLAG_SWITCH) {
        if (val)
            return usage_error(cmd, "takes no value:", arg);
        *(int *)(void *)((char *)a + f->offset) = 1;
        return 0;
    }
    if (!val) {
        if (*i + 1 >= argc)
            return usage_error(cmd, "missing value for", arg);
        val = argv[++*i];
    }
    if (set_value(a, f, val)) {
        if (f->kind == FLAG_CHOICE)
            fprintf(stderr, "flockctl %s: %s wants one of %s", cmd->name, f->name, f->metavar);
        else
            fprintf(stderr, "flockctl %s: %s wants %s in [%.10g, %.10g]", cmd->name, f->name,
                    f->kind == FLAG_INT ? "a whole number" : "a number", f->lo, f->hi);
        fprintf(stderr, ", not '%s'\n", val);
        return try_help(cmd);
    }
    return 0;
}

int ctl_args_parse(const struct ctl_command *cmd, int argc, char **argv, struct ctl_args *a)
{
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < NFLAGS; i++)
        set_default(a, &flags[i]);
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_pos && (!strcmp(arg, "-h") || !strcmp(arg, "--help"))) {
            ctl_args_help(cmd, stdout);
            return CTL_EXIT_HELP;
        }
        if (!only_pos && !strcmp(arg, "--")) {
            only_pos = 1;
        } else if (!only_pos && arg[0] == '-' && arg[1] == '-') {
            int rc = parse_flag(cmd, argc, argv, &i, a);
            if (rc)
                return rc;
        } else if (a->npos == CTL_MAX_POS || a->npos == cmd->max_pos) {
            return usage_error(cmd, "too many arguments at", arg);
        } else {
            a->pos[a->npos++] = arg;
        }
    }
    if (a->npos < cmd->min_pos) {
        fprintf(stderr, "flockctl %s: missing %s\n", cmd->name, cmd->positional);
        return try_help(cmd);
    }
    struct ctl_url u;
    if (ctl_url_parse(a->url, &u))
        return usage_error(cmd, "--url wants ws[s]://HOST[:PORT][/PATH], not", a->url);
    char why[512];
    if (ctl_join_settle(cmd, a, why, sizeof why) || ctl_view_settle(a, why, sizeof why)) {
        fprintf(stderr, "flockctl %s: %s\n", cmd->name, why);
        return try_help(cmd);
    }
    return 0;
}

void ctl_args_help(const struct ctl_command *cmd, FILE *f)
{
    fprintf(f, "usage: flockctl %s [flags] %s\n%s\n\nflags:\n", cmd->name, cmd->positional,
            cmd->summary);
    for (const char *const *p = cmd->flags; *p; p++) {
        const struct flag *fl = find_flag(*p, strlen(*p));
        if (!fl)
            continue;
        char left[64];
        snprintf(left, sizeof left, "%s %s", fl->name, fl->metavar);
        fprintf(f, "  %-26s %s", left, fl->help);
        if (fl->kind == FLAG_NUMBER || fl->kind == FLAG_INT)
            fprintf(f, ", %s [%.10g, %.10g]", fl->kind == FLAG_INT ? "whole number" : "number",
                    fl->lo, fl->hi);
        const char *def = fl->offset == F(role) ? cmd->role : fl->def;
        if (def)
            fprintf(f, " (default %s)", def);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-26s print this help and exit\n", "-h, --help");
    if (cmd->details)
        fprintf(f, "\n%s", cmd->details);
    fprintf(f, "\nexit status: 0 ok, 1 refused or failed, 2 usage error, 3 cannot connect\n");
}

/* Copies s[0..n) into dst[cap] NUL-terminated; -1 if it does not fit. */
static int copy_part(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

static int parse_port(const char *s, size_t n, int *port)
{
    if (n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

int ctl_url_parse(const char *url, struct ctl_url *out)
{
    memset(out, 0, sizeof *out);
    if (!url)
        return -1;
    if (!strncmp(url, "wss://", 6))
        out->is_tls = true;
    else if (strncmp(url, "ws://", 5))
        return -1;
    const char *hp = url + (out->is_tls ? 6 : 5);
    size_t hlen = strcspn(hp, "/"); /* host[:port] runs up to the path */
    const char *path = hp[hlen] ? hp + hlen : NULL, *hend = hp + hlen;
    const char *h0 = hp, *h1, *portp = NULL;
    if (hlen > 0 && hp[0] == '[') {
        h0 = hp + 1;
        h1 = memchr(h0, ']', hlen - 1);
        if (!h1)
            return -1;
        if (h1 + 1 < hend) {
            if (h1[1] != ':')
                return -1;
            portp = h1 + 2;
        }
    } else {
        h1 = memchr(hp, ':', hlen);
        if (h1)
            portp = h1 + 1;
        else
            h1 = hend;
    }
    if (h1 == h0 || copy_part(out->host, sizeof out->host, h0, (size_t)(h1 - h0)))
        return -1;
    out->port = out->is_tls ? 443 : 80;
    if (portp && parse_port(portp, (size_t)(hend - portp), &out->port))
        return -1;
    const char *p = path ? path : "/";
    return copy_part(out->path, sizeof out->path, p, strlen(p));
}
