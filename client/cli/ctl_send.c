/*
 * ctl_send.c — `flockctl send`: sends JSON commands one at a time and
 * prints each reply (ack or error, PROTOCOL.md §6.2–6.3) as one line.
 *
 * The server answers every command exactly once and in order (§1), so the
 * reply to the command in flight is the next ack or error; snapshots and
 * unknown message types in between are ignored. A command is sent only
 * after the previous one was answered, so a timeout cannot shift replies
 * onto the wrong command: after one, the rest are not sent.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_commands.h"
#include "ctl_session.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

struct sender {
    char *reply; /* the answer to the command in flight, or NULL */
};

static void on_message(void *user, int binary, const uint8_t *data, size_t len)
{
    struct sender *sd = user;
    if (binary || sd->reply)
        return;
    cJSON *msg = cJSON_ParseWithLength((const char *)data, len);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    if (type && (!strcmp(type, "ack") || !strcmp(type, "error"))) {
        sd->reply = malloc(len + 1);
        if (sd->reply) {
            memcpy(sd->reply, data, len);
            sd->reply[len] = '\0';
        }
    }
    cJSON_Delete(msg);
}

/* 1 if the reply text is an ack. */
static int is_ack(const char *reply)
{
    cJSON *msg = cJSON_Parse(reply);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "type"));
    int ok = type && !strcmp(type, "ack");
    cJSON_Delete(msg);
    return ok;
}

/* Sends one command and prints its reply. 0 acked, 1 refused, -1 no reply
 * (timeout or connection lost). */
static int send_one(struct ctl_session *s, struct sender *sd, const char *text, double timeout)
{
    if (ctl_session_send(s, text, strlen(text))) {
        fprintf(stderr, "flockctl send: cannot send %s: %s\n", text, ctl_session_error(s));
        return -1;
    }
    double deadline = ctl_mono_s() + timeout;
    while (!sd->reply && !ctl_stop && ctl_mono_s() < deadline)
        if (ctl_session_service(s))
            break;
    if (!sd->reply) {
        const char *why = ctl_session_error(s);
        fprintf(stderr, "flockctl send: no reply to %s (%s)\n", text,
                why[0]     ? why
                : ctl_stop ? "interrupted"
                           : "timed out");
        return -1;
    }
    printf("%s\n", sd->reply);
    fflush(stdout);
    int rc = is_ack(sd->reply) ? 0 : 1;
    free(sd->reply);
    sd->reply = NULL;
    return rc;
}

/* The commands: the positional arguments, or else stdin's non-empty lines.
 * Returns how many, with *owned set if they were read from stdin (free
 * each and the array). */
static int collect(const struct ctl_args *a, char ***out, int *owned)
{
    *owned = 0;
    if (a->npos) {
        *out = (char **)a->pos;
        return a->npos;
    }
    char **list = NULL, *line = NULL;
    size_t cap = 0;
    int n = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len)
            continue;
        char **grown = realloc(list, (size_t)(n + 1) * sizeof *list);
        char *copy = strdup(line);
        if (!grown || !copy) {
            free(copy);
            list = grown ? grown : list;
            break;
        }
        list = grown;
        list[n++] = copy;
    }
    free(line);
    *out = list;
    *owned = 1;
    return n;
}

int ctl_send_run(const struct ctl_args *a)
{
    char **cmds;
    int owned, n = collect(a, &cmds, &owned);
    struct sender sd = {NULL};
    struct ctl_open_error err;
    int rc = CTL_EXIT_OK;
    struct ctl_session *s = ctl_session_open(a, on_message, &sd, &err);
    if (!s) {
        fprintf(stderr, "flockctl send: %s\n", err.reason);
        rc = err.status;
    }
    for (int i = 0; s && i < n; i++) {
        int r = send_one(s, &sd, cmds[i], a->timeout);
        if (r)
            rc = CTL_EXIT_FAILED;
        if (r < 0) {
            if (i + 1 < n)
                fprintf(stderr, "flockctl send: %d command(s) not sent\n", n - i - 1);
            break;
        }
    }
    ctl_session_close(s);
    free(sd.reply);
    if (owned) {
        for (int i = 0; i < n; i++)
            free(cmds[i]);
        free(cmds);
    }
    return rc;
}
