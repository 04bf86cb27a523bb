/*
 * fuzz_config — the settings parser (server/config/config.h) on arbitrary input.
 *
 * Each input is used twice. First as the contents of a config file for
 * cfg_load_file(): the file is a memfd, opened through /proc/self/fd, so
 * nothing touches the disk. A refusal must leave struct cfg byte for byte
 * as it was. Then split at NUL bytes into at most MAX_ARGS arguments for
 * cfg_parse_args(); every --config in them is pointed at that same file,
 * so no other path is ever opened.
 *
 * After each success every setting must lie inside the bounds config.h
 * documents, and cfg_validate() must succeed exactly when the two
 * cross-setting rules (snapshot-hz <= tick-hz, boids <= capacity) hold.
 */
#define _GNU_SOURCE /* memfd_create */

#include "fuzz_common.h"

#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ARGS  64
#define INPUT_MAX (1 << 20) /* config.c refuses larger files anyway */

static int file_fd = -1;
static char file_path[64], config_flag[80];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    file_fd = memfd_create("flockd-fuzz-config", 0);
    if (file_fd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
    snprintf(config_flag, sizeof config_flag, "--config=%s", file_path);
    return 0;
}

static void write_file(const uint8_t *data, size_t size)
{
    if (ftruncate(file_fd, 0) != 0)
        fuzz_fail("ftruncate of the config memfd failed");
    for (size_t done = 0; done < size;) {
        ssize_t w = pwrite(file_fd, data + done, size - done, (off_t)done);
        if (w <= 0)
            fuzz_fail("pwrite to the config memfd failed");
        done += (size_t)w;
    }
}

static void check_range(const char *name, double v, double lo, double hi)
{
    if (!(v >= lo && v <= hi))
        fuzz_fail("accepted %s = %.17g outside [%.17g, %.17g]", name, v, lo, hi);
}

static void check_length(const char *name, const char *s, size_t size, size_t lo)
{
    const char *nul = memchr(s, '\0', size);
    if (!nul || (size_t)(nul - s) < lo)
        fuzz_fail("accepted %s of a bad length", name);
}

/* What libnats can write into its CONNECT line: no '"', '\\' or control
 * character. */
static bool is_sendable(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            return false;
    return true;
}

/* The bounds config.h states for each field, written out independently of
 * config.c's table; then cfg_validate() against the cross-setting rules. */
static void check_settings(const struct cfg *c)
{
    char err[256];
    check_length("host", c->host, sizeof c->host, 1);
    check_range("port", c->port, 0, 65535);
    check_range("boids", c->boids, 0, 1048576);
    check_range("capacity", c->capacity, 1, 1048576);
    check_range("tick-hz", c->tick_hz, 1, 240);
    check_range("snapshot-hz", c->snapshot_hz, 1, 60);
    check_range("seed", (double)c->seed, 0, 9007199254740992.0);
    check_range("width", c->width, 100, 100000);
    check_range("height", c->height, 100, 100000);
    if (strcmp(c->edges, "wrap") != 0 && strcmp(c->edges, "contain") != 0)
        fuzz_fail("accepted edges \"%.16s\"", c->edges);
    check_range("max-obstacles", c->max_obstacles, 0, 4096);
    check_length("web-root", c->web_root, sizeof c->web_root, 1);
    check_range("max-message", c->max_message, 256, 1048576);
    check_range("queue", c->queue_len, 16, 65536);
    check_range("stale-timeout", c->stale_timeout, 1, 600);
    check_range("max-clients", c->max_clients, 1, 100000);
    check_length("config", c->config_path, sizeof c->config_path, 0);

    check_range("tls-redirect-port", c->tls_redirect_port, 0, 65535);
    check_length("tls-cert", c->tls_cert, sizeof c->tls_cert, 0);
    check_length("tls-key", c->tls_key, sizeof c->tls_key, 0);
    check_length("nats", c->nats_url, sizeof c->nats_url, 0);
    check_length("nats-password", c->nats_password, sizeof c->nats_password, 0);
    check_length("nats-key", c->nats_key, sizeof c->nats_key, 0);

    /* The cross-setting rules: rates, boids, teams, pings, the TLS pair and
     * its redirect port; with --nats, its certificate and key, its user and
     * password, and at most one way of signing in (an '@' in the URLs is
     * one). */
    bool has_cert = c->tls_cert[0] != '\0', has_key = c->tls_key[0] != '\0';
    int sign_ins = (strchr(c->nats_url, '@') != NULL) + (c->nats_user[0] != '\0') +
                   (c->nats_token[0] != '\0') + (c->nats_creds[0] != '\0');
    bool nats_ok =
        !c->nats_url[0] ||
        ((!c->nats_cert[0] == !c->nats_key[0]) && (!c->nats_user[0] == !c->nats_password[0]) &&
         sign_ins <= 1 && is_sendable(c->nats_url) && is_sendable(c->nats_user) &&
         is_sendable(c->nats_password) && is_sendable(c->nats_token));
    int cross_ok =
        c->snapshot_hz <= c->tick_hz && c->boids <= c->capacity && c->team_units <= c->team_cap &&
        c->ping_interval <= c->idle_timeout && has_cert == has_key &&
        (!c->tls_redirect_port || (has_cert && c->tls_redirect_port != c->port)) && nats_ok;
    int rc = cfg_validate(c, err, sizeof err);
    if (rc != 0 && rc != CFG_EINVAL)
        fuzz_fail("cfg_validate returned %d", rc);
    if ((rc == 0) != cross_ok)
        fuzz_fail(
            "cfg_validate returned %d for snapshot-hz %g, tick-hz %g, boids %u, "
            "capacity %u, tls-cert %d, tls-key %d, tls-redirect-port %d, port %d, nats %d: %s",
            rc, c->snapshot_hz, c->tick_hz, c->boids, c->capacity, has_cert, has_key,
            c->tls_redirect_port, c->port, nats_ok, rc ? err : "");
    if (!memchr(err, '\0', sizeof err))
        fuzz_fail("cfg_validate left err unterminated");
}

static void fuzz_file(void)
{
    struct cfg c, before;
    char err[256];
    cfg_default(&c);
    before = c;
    int rc = cfg_load_file(&c, file_path, err, sizeof err);
    if (rc == 0)
        check_settings(&c);
    else if (rc != CFG_EINVAL && rc != CFG_EIO)
        fuzz_fail("cfg_load_file returned %d", rc);
    else if (memcmp(&c, &before, sizeof c) != 0)
        fuzz_fail("cfg_load_file changed the settings although it failed: %s", err);
}

/* Splits text[0..size) (NUL-terminated at size) at NULs into argv[1..]. */
static int split_args(char *text, size_t size, char **argv)
{
    static char prog[] = "flockd";
    int argc = 1;
    argv[0] = prog;
    for (size_t i = 0; i <= size && argc < MAX_ARGS; i += strlen(text + i) + 1)
        argv[argc++] = text + i;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--config=", 9) == 0)
            argv[i] = config_flag;
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc &&
                 strncmp(argv[i + 1], "--", 2) != 0)
            argv[i + 1] = file_path;
    }
    return argc;
}

static void fuzz_args(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 1] = {NULL};
    char err[256];
    struct cfg c;
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    int argc = split_args(text, size, argv);
    cfg_default(&c);
    int rc = cfg_parse_args(&c, argc, argv, err, sizeof err);
    if (rc == 0)
        check_settings(&c);
    else if (rc != CFG_HELP && rc != CFG_EINVAL && rc != CFG_EIO)
        fuzz_fail("cfg_parse_args returned %d", rc);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > INPUT_MAX)
        return 0;
    write_file(data, size);
    fuzz_file();
    fuzz_args(data, size);
    return 0;
}
