/*
 * persist.c — checkpoint files, the writer thread and the loading of
 * checkpoints at start (see persist.h; the file layout is FILES.md §2).
 *
 * Locking: `lock` guards the task queue and the counters persist_flush()
 * waits on. The writer thread takes one task at a time off the queue and
 * runs it without the lock. The restored list and the checkpoint timer
 * are the lobby thread's alone.
 */
#define _POSIX_C_SOURCE 200809L

#include "persist.h"

#include "clock.h"
#include "reclog.h"
#include "sim_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_BYTES 1400

enum task_kind { TASK_CHECKPOINT, TASK_REMOVE, TASK_SYNC };

struct task {
    struct task *next;
    enum task_kind kind;
    struct persist_job *job; /* TASK_CHECKPOINT */
    char room[PROTO_ROOM_MAX + 1];
    int fd; /* TASK_SYNC */
};

/* A checkpoint loaded at start: its bytes and what they decode to. */
struct loaded {
    uint8_t *buf;
    struct ckpt ck;
};

struct persist {
    struct persist_config cfg;
    char record_dir[1024], checkpoint_dir[1024], build[CKPT_BUILD_MAX + 1];
    int dir_fd; /* the checkpoint directory, for fsync after a rename; -1 */

    pthread_mutex_t lock;
    pthread_cond_t work, done;
    struct task *head, **tail;
    uint64_t queued, finished;
    int stop;
    pthread_t thread;

    /* The lobby thread's. */
    int64_t due_last_ns;
    bool due_started;
    struct loaded *restored;
    size_t nrestored;
    char (*logged)[PROTO_ROOM_MAX + 1]; /* rooms with a log in the record directory */
    size_t nlogged;
};

void persist_say(const struct persist *p, const char *fmt, ...)
{
    (void)p;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "flockd: %s\n", line);
}

/* ---- the writer thread ----------------------------------------------------- */

int persist_write_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0) /* nothing written, no error said: the device takes no more */
            return -EIO;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes bytes to DIR/ROOM.ckpt through a temporary file: 0, or a
 * negative errno. */
static int replace_file(struct persist *p, const char *room, const uint8_t *buf, size_t len)
{
    char path[PATH_BYTES], tmp[PATH_BYTES + sizeof ".tmp"];
    snprintf(path, sizeof path, "%s/%s.ckpt", p->checkpoint_dir, room);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = persist_write_all(fd, buf, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc < 0)
        unlink(tmp);
    else if (rename(tmp, path) < 0)
        rc = -errno;
    if (rc == 0 && p->dir_fd >= 0)
        fsync(p->dir_fd);
    return rc;
}

void persist_stamp(const struct persist *p, struct ckpt *c)
{
    c->wall_us = clock_wall_us();
    snprintf(c->build, sizeof c->build, "%s", p->build);
}

static void write_checkpoint(struct persist *p, struct persist_job *j)
{
    persist_stamp(p, &j->ck);
    size_t n = ckpt_size(&j->ck);
    uint8_t *buf = malloc(n);
    int len = buf ? ckpt_encode(&j->ck, buf, n) : PROTO_E_NOSPACE;
    if (len >= 0 && p->cfg.sink)
        p->cfg.sink(p->cfg.sink_arg, j->ck.room, buf, (size_t)len);
    int rc = len < 0 || !p->checkpoint_dir[0] ? 0 : replace_file(p, j->ck.room, buf, (size_t)len);
    if (len < 0)
        persist_say(p, "checkpoint of room \"%s\" not written: %s", j->ck.room,
                    buf ? proto_status_name(len) : "out of memory");
    else if (rc < 0)
        persist_say(p, "checkpoint %s/%s.ckpt not written: %s", p->checkpoint_dir, j->ck.room,
                    strerror(-rc));
    free(buf);
}

static void run_task(struct persist *p, struct task *t)
{
    char path[PATH_BYTES];
    switch (t->kind) {
    case TASK_CHECKPOINT:
        write_checkpoint(p, t->job);
        persist_job_free(t->job);
        break;
    case TASK_REMOVE:
        if (!p->checkpoint_dir[0])
            break;
        snprintf(path, sizeof path, "%s/%s.ckpt", p->checkpoint_dir, t->room);
        if (unlink(path) == 0 && p->dir_fd >= 0)
            fsync(p->dir_fd);
        break;
    case TASK_SYNC:
        fdatasync(t->fd);
        close(t->fd);
        break;
    }
}

static void *writer_main(void *arg)
{
    struct persist *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->work, &p->lock);
        struct task *t = p->head;
        if (!t)
            break; /* stopping, and nothing is left */
        p->head = t->next;
        if (!p->head)
            p->tail = &p->head;
        pthread_mutex_unlock(&p->lock);
        run_task(p, t);
        free(t);
        pthread_mutex_lock(&p->lock);
        p->finished++;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Queues t (owned by the queue from now on). */
static void enqueue(struct persist *p, struct task *t)
{
    pthread_mutex_lock(&p->lock);
    t->next = NULL;
    *p->tail = t;
    p->tail = &t->next;
    p->queued++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

static struct task *task_new(enum task_kind kind)
{
    struct task *t = calloc(1, sizeof *t);
    if (t)
        t->kind = kind;
    return t;
}

struct persist_job *persist_job_alloc(size_t bytes)
{
    struct persist_job *j = calloc(1, sizeof *j);
    if (j && !(j->mem = malloc(bytes ? bytes : 1))) {
        free(j);
        j = NULL;
    }
    return j;
}

void persist_job_free(struct persist_job *j)
{
    if (j)
        free(j->mem);
    free(j);
}

void persist_write(struct persist *p, struct persist_job *j)
{
    struct task *t = task_new(TASK_CHECKPOINT);
    if (!t) {
        persist_say(p, "checkpoint of room \"%s\" not written: out of memory", j->ck.room);
        persist_job_free(j);
        return;
    }
    t->job = j;
    enqueue(p, t);
}

void persist_remove(struct persist *p, const char *room)
{
    struct task *t = task_new(TASK_REMOVE);
    if (!t)
        return;
    snprintf(t->room, sizeof t->room, "%s", room);
    enqueue(p, t);
}

void persist_sync_later(struct persist *p, int fd)
{
    struct task *t = task_new(TASK_SYNC);
    if (!t) {
        close(fd);
        return;
    }
    t->fd = fd;
    enqueue(p, t);
}

void persist_flush(struct persist *p)
{
    pthread_mutex_lock(&p->lock);
    uint64_t until = p->queued;
    while (p->finished < until)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

bool persist_checkpoint_due(struct persist *p, int64_t now)
{
    if (!persist_has_checkpoints(p) || !(p->cfg.checkpoint_every > 0))
        return false;
    if (!p->due_started) {
        p->due_started = true;
        p->due_last_ns = now;
        return false;
    }
    if ((double)(now - p->due_last_ns) < p->cfg.checkpoint_every * 1e9)
        return false;
    p->due_last_ns = now;
    return true;
}

/* ---- loading at start -------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Reads all of path if it is at most max bytes: 0, or a reason. */
static const char *read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
    static _Thread_local char why[96];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(why, sizeof why, "cannot read it (%s)", strerror(errno));
        if (fd >= 0)
            close(fd);
        return why;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(why, sizeof why,
                 "oversized: %lld bytes, more than the %zu a room of this server takes",
                 (long long)st.st_size, max);
        close(fd);
        return why;
    }
    *len = (size_t)st.st_size;
    *out = malloc(*len ? *len : 1);
    size_t got = 0;
    while (*out && got < *len) {
        ssize_t n = read(fd, *out + got, *len - got);
        if (n <= 0 && !(n < 0 && errno == EINTR))
            break;
        got += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    if (!*out || got != *len) {
        free(*out);
        *out = NULL;
        return "cannot read it whole";
    }
    return NULL;
}

/* Why the decoded checkpoint cannot be restored here (NULL: it can). */
static const char *restorable(const struct persist *p, const struct ckpt *ck, const char *name)
{
    static _Thread_local char why[160];
    struct sim_state_info info;
    sim_state_check(ck->world, ck->world_len, &info, NULL); /* passed in ckpt_decode */
    if (strcmp(ck->room, name) != 0) {
        snprintf(why, sizeof why, "it holds room \"%s\", not \"%s\"", ck->room, name);
        return why;
    }
    if (info.cfg.capacity > p->cfg.max_capacity || info.cfg.max_obstacles > p->cfg.max_obstacles) {
        snprintf(why, sizeof why,
                 "oversized: a world of %u boids and %u obstacles, more than this server's "
                 "limits (%u, %u)",
                 info.cfg.capacity, info.cfg.max_obstacles, p->cfg.max_capacity,
                 p->cfg.max_obstacles);
        return why;
    }
    return NULL;
}

/* Names a refused file, says what becomes of its room, keeps it aside. */
static void refuse_file(const struct persist *p, const char *path, const char *name,
                        const char *reason)
{
    char aside[PATH_BYTES + sizeof ".refused"];
    snprintf(aside, sizeof aside, "%s.refused", path);
    bool kept = rename(path, aside) == 0;
    persist_say(p, "checkpoint %s refused: %s; %s%s%s", path, reason,
                strcmp(name, "default") == 0 ? "room \"default\" starts fresh"
                                             : "its room is not restored (a join creates it anew)",
                kept ? "; the file is kept as " : "", kept ? aside : "");
}

/* Loads DIR/NAME.ckpt into the restored list, or refuses it. */
static void load_one(struct persist *p, const char *file)
{
    char path[PATH_BYTES], name[PROTO_ROOM_MAX + 8];
    snprintf(path, sizeof path, "%s/%s", p->checkpoint_dir, file);
    snprintf(name, sizeof name, "%.*s", (int)(strlen(file) - 5), file);
    size_t max = ckpt_max_size(p->cfg.max_capacity, p->cfg.max_obstacles), len = 0;
    uint8_t *buf = NULL;
    const char *why = read_file(path, max, &buf, &len);
    struct loaded l = {.buf = buf};
    if (!why && ckpt_decode(buf, len, &l.ck, &why) == 0)
        why = restorable(p, &l.ck, name);
    struct loaded *grown = why ? NULL : realloc(p->restored, (p->nrestored + 1) * sizeof *grown);
    if (why || !grown) {
        refuse_file(p, path, name, why ? why : "out of memory");
        free(buf);
        return;
    }
    p->restored = grown;
    p->restored[p->nrestored++] = l;
}

static int by_room(const void *a, const void *b)
{
    const struct loaded *x = a, *y = b;
    int dx = strcmp(x->ck.room, "default") != 0, dy = strcmp(y->ck.room, "default") != 0;
    return dx != dy ? dx - dy : strcmp(x->ck.room, y->ck.room);
}

/* Every checkpoint file of the directory (NAME.ckpt); leftovers of a write
 * cut short (NAME.ckpt.tmp) go. */
static void load_all(struct persist *p)
{
    DIR *d = opendir(p->checkpoint_dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char path[PATH_BYTES];
        if (has_suffix(e->d_name, ".ckpt.tmp")) {
            snprintf(path, sizeof path, "%s/%s", p->checkpoint_dir, e->d_name);
            unlink(path);
            persist_say(p, "removed %s, a checkpoint whose writing was cut short", path);
        } else if (has_suffix(e->d_name, ".ckpt")) {
            load_one(p, e->d_name);
        }
    }
    if (d)
        closedir(d);
    if (p->nrestored)
        qsort(p->restored, p->nrestored, sizeof *p->restored, by_room);
}

/* The rooms of the record directory's logs (NAME.flog, NAME a room's name). */
static void list_logs(struct persist *p)
{
    DIR *d = p->record_dir[0] ? opendir(p->record_dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (!has_suffix(e->d_name, ".flog") || n - 5 > PROTO_ROOM_MAX ||
            strspn(e->d_name, PROTO_ROOM_CHARS) != n - 5)
            continue;
        char(*grown)[PROTO_ROOM_MAX + 1] = realloc(p->logged, (p->nlogged + 1) * sizeof *grown);
        if (!grown)
            break;
        p->logged = grown;
        snprintf(p->logged[p->nlogged++], sizeof *grown, "%.*s", (int)(n - 5), e->d_name);
    }
    if (d)
        closedir(d);
}

const char *persist_logged_at(const struct persist *p, size_t i)
{
    return i < p->nlogged ? p->logged[i] : NULL;
}

int persist_read_log(const struct persist *p, const char *room, uint8_t **buf, size_t *len)
{
    char path[PATH_BYTES];
    struct stat st;
    *buf = NULL;
    *len = 0;
    snprintf(path, sizeof path, "%s/%s.flog", p->record_dir, room);
    if (!p->record_dir[0] || (stat(path, &st) < 0 && errno == ENOENT))
        return 0;
    const char *why = read_file(path, RECLOG_FILE_MAX, buf, len);
    if (why) {
        persist_say(p, "command log %s not read: %s", path, why);
        return PROTO_E_BAD_LENGTH;
    }
    return 1;
}

const struct ckpt *persist_restored(const struct persist *p, const char *room)
{
    for (size_t i = 0; i < p->nrestored; i++)
        if (strcmp(p->restored[i].ck.room, room) == 0)
            return &p->restored[i].ck;
    return NULL;
}

const struct ckpt *persist_restored_at(const struct persist *p, size_t i)
{
    return i < p->nrestored ? &p->restored[i].ck : NULL;
}

void persist_restored_done(struct persist *p)
{
    for (size_t i = 0; i < p->nrestored; i++)
        free(p->restored[i].buf);
    free(p->restored);
    p->restored = NULL;
    p->nrestored = 0;
    free(p->logged);
    p->logged = NULL;
    p->nlogged = 0;
}

/* ---- life ---------------------------------------------------------------------- */

/* Makes dir (one level) and checks it is a writable directory. */
static const char *use_dir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return "cannot make the directory";
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return "not a directory";
    if (access(dir, W_OK | X_OK) < 0)
        return "the directory is not writable";
    return NULL;
}

struct persist *persist_create(const struct persist_config *cfg, const char **err)
{
    struct persist *p = calloc(1, sizeof *p);
    if (!p) {
        *err = "out of memory";
        return NULL;
    }
    p->cfg = *cfg;
    snprintf(p->record_dir, sizeof p->record_dir, "%s", cfg->record_dir ? cfg->record_dir : "");
    snprintf(p->checkpoint_dir, sizeof p->checkpoint_dir, "%s",
             cfg->checkpoint_dir ? cfg->checkpoint_dir : "");
    snprintf(p->build, sizeof p->build, "%s", cfg->build ? cfg->build : "");
    p->cfg.record_dir = p->record_dir;
    p->cfg.checkpoint_dir = p->checkpoint_dir;
    p->cfg.build = p->build;
    p->dir_fd = -1;
    static char reason[1200]; /* start-up only: one thread */
    const char *why = NULL, *flag = NULL;
    if (p->record_dir[0] && (why = use_dir(p->record_dir)) != NULL)
        flag = "--record";
    else if (p->checkpoint_dir[0] && (why = use_dir(p->checkpoint_dir)) != NULL)
        flag = "--checkpoint-dir";
    if (why) {
        snprintf(reason, sizeof reason, "%s %s: %s", flag,
                 flag[2] == 'r' ? p->record_dir : p->checkpoint_dir, why);
        *err = reason;
        free(p);
        return NULL;
    }
    if (p->checkpoint_dir[0]) {
        p->dir_fd = open(p->checkpoint_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        load_all(p);
        list_logs(p); /* a room restarts where its log ends (room_persist.h) */
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->tail = &p->head;
    if (pthread_create(&p->thread, NULL, writer_main, p) != 0) {
        *err = "cannot start the checkpoint writer thread";
        p->stop = 1;
        persist_destroy(p);
        return NULL;
    }
    return p;
}

void persist_destroy(struct persist *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    bool running = !p->stop;
    p->stop = 1;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
    if (running)
        pthread_join(p->thread, NULL);
    persist_restored_done(p);
    if (p->dir_fd >= 0)
        close(p->dir_fd);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

const struct persist_config *persist_config(const struct persist *p)
{
    return &p->cfg;
}

bool persist_is_recording(const struct persist *p)
{
    return p && p->record_dir[0];
}

bool persist_has_checkpoints(const struct persist *p)
{
    return p && (p->checkpoint_dir[0] || p->cfg.sink);
}
