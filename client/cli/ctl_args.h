/*
 * ctl_args — flockctl's command line: one table of every flag (name, value
 * kind, bounds, default, help), the subcommands that pick from it, the
 * ws:// URL splitter, exit codes and the small clock helpers every
 * subcommand shares.
 *
 * Never: sockets or WebSocket traffic. Parsing writes diagnostics to stderr.
 * Threading: the parser runs once on the main thread; the clock helpers are
 * reentrant; ctl_stop is set from a signal handler and only read elsewhere.
 */
#ifndef FLOCKCTL_ARGS_H
#define FLOCKCTL_ARGS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes, the same for every subcommand (README and --help say so). */
enum ctl_exit {
    CTL_EXIT_OK = 0,      /* everything asked for was done */
    CTL_EXIT_FAILED = 1,  /* a command was refused or unanswered, or a check failed */
    CTL_EXIT_USAGE = 2,   /* bad flags or arguments */
    CTL_EXIT_CONNECT = 3, /* the server could not be reached or did not welcome us */
    CTL_EXIT_HELP = -1,   /* internal: --help was printed, exit 0 */
};

#define CTL_DEFAULT_URL "ws://127.0.0.1:8080/ws"
#define CTL_MAX_POS     256 /* positional arguments */

/* Every flag's value after parsing; the table says which field each fills. */
struct ctl_args {
    const char *url;
    double seconds;    /* 0: until interrupted (watch) */
    double timeout;    /* seconds to wait for a connection or a reply */
    int clients;       /* load */
    int threads;       /* load: epoll worker threads */
    int read_delay_ms; /* load: pause after each read */
    int rcvbuf;        /* load: SO_RCVBUF of each client, 0: the kernel's */
    int connect_batch; /* load: connections started per millisecond */
    int protocol;      /* snapshot version to ask for: 3 or 2 (each falls back to the versions below
                          it on servers without it) or 1 */
    int insecure;      /* wss://: accept a certificate that does not verify */
    int decode;        /* load: every client decodes every snapshot */
    /* The view (ctl_view.h): the flags as given (NULL, 0: not given); once
     * parsed, view says whether one is sent and view_args holds it (for
     * --views random, its size). */
    const char *view_rect, *view_size, *views;
    int px, budget;
    bool view, random_views;
    float view_args[4]; /* x, y, w, h: world units */
    /* The join (ctl_join.h): each NULL unless given; once parsed, join says
     * whether one is sent, and then room and role are set. The shape of a
     * room the join creates: mode, edges, and numbers as given (the
     * server's parser judges them). */
    const char *room, *role, *name, *token, *password;
    const char *mode, *boids, *width, *height, *edges, *teams, *units;
    bool join;
    const char *format; /* dump: records, csv or jsonl */
    const char *pos[CTL_MAX_POS];
    int npos;
};

/* A subcommand: its flags (names from the table, NULL-terminated), how
 * many positional arguments it takes, its help text and its entry point. */
struct ctl_command {
    const char *name;
    const char *positional; /* e.g. "JSON..." for --help, "" if none */
    int min_pos, max_pos;
    const char *const *flags;
    const char *summary; /* one line */
    const char *details; /* paragraphs after the flag list, may be NULL */
    int (*run)(const struct ctl_args *a);
    const char *role; /* the role a join takes without --role; NULL: no --role */
};

/*
 * Fills *a with the defaults, then argv[0..argc) (the words after the
 * subcommand; flags as --name VALUE or --name=VALUE, anywhere among the
 * positional arguments; "--" ends the flags). Returns 0, CTL_EXIT_HELP
 * after printing the help to stdout, or CTL_EXIT_USAGE after printing the
 * reason and the usage to stderr. a->pos and the string flags point into
 * argv. The join flags are checked as the server would check them
 * (ctl_join_settle()).
 */
int ctl_args_parse(const struct ctl_command *cmd, int argc, char **argv, struct ctl_args *a);

/* Writes cmd's help (synopsis, flags with defaults and bounds, details). */
void ctl_args_help(const struct ctl_command *cmd, FILE *f);

/* A ws:// or wss:// URL in pieces. */
struct ctl_url {
    bool is_tls;    /* wss:// */
    char host[256]; /* without brackets for an IPv6 literal */
    int port;       /* 80 (ws) or 443 (wss) if not given */
    char path[512]; /* starts with '/', includes any query */
};

/* Splits ws[s]://HOST[:PORT][/PATH]; 0, or -1 if url is not such a URL. */
int ctl_url_parse(const char *url, struct ctl_url *out);

/* Set by SIGINT/SIGTERM once ctl_install_signals() ran; loops poll it. */
extern volatile sig_atomic_t ctl_stop;
void ctl_install_signals(void);

double ctl_mono_s(void);    /* CLOCK_MONOTONIC, seconds */
uint64_t ctl_wall_us(void); /* CLOCK_REALTIME, microseconds since the Unix epoch */

#endif
