/*
 * recorder.c — appending to a room's command log (see recorder.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "recorder.h"

#include "reclog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYNC_EVERY_NS 1000000000LL /* PERSIST_FSYNC_INTERVAL: at most this far behind */
#define KEEP_BYTES    65536        /* a pending buffer larger than this is freed after a flush */

struct recorder {
    struct persist *persist;
    char path[1100];
    int fd;
    bool failed; /* a write failed: recording stopped */
    uint8_t *pending;
    size_t len, cap;
    int64_t synced_ns; /* when the last sync was asked for */
    bool dirty;        /* written since then */
};

/*
 * Where an append to the log in fd (size bytes) goes: after its last whole
 * record. A negative code if the log is unusable, with *why: a negative
 * errno if it cannot be mapped, the reader's PROTO_E_* if it is corrupt
 * or of another version.
 */
static off_t append_point(int fd, off_t size, const char **why)
{
    if (size == 0)
        return 0;
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        *why = "cannot read it";
        return -errno;
    }
    static _Thread_local struct reclog_record rec;
    struct reclog_reader rd;
    int rc = reclog_reader_init(&rd, map, (size_t)size, why);
    while (rc == 0 && (rc = reclog_next(&rd, &rec, why)) == 1)
        rc = 0;
    munmap(map, (size_t)size);
    if (rc < 0 && rd.good_end <= RECLOG_PREAMBLE && rc == PROTO_E_TRUNCATED)
        return 0; /* a preamble cut short: start over */
    return rc < 0 ? rc : (off_t)rd.good_end;
}

/* Opens the log, ready to append: 0, or a negative errno with *err set. */
static int open_log(struct recorder *r, const char **err)
{
    r->fd = open(r->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) < 0) {
        *err = "cannot open the command log";
        return -errno;
    }
    const char *why = NULL;
    off_t end = append_point(r->fd, st.st_size, &why);
    if (end < 0) {
        char aside[1200];
        snprintf(aside, sizeof aside, "%s.corrupt", r->path);
        persist_say(r->persist, "command log %s is unusable (%s); kept as %s, a new one starts",
                    r->path, why, aside);
        close(r->fd);
        if (rename(r->path, aside) < 0)
            unlink(r->path);
        r->fd = open(r->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        end = 0;
    } else if (end < st.st_size) {
        persist_say(r->persist, "command log %s ended in a torn record; it is cut at byte %lld",
                    r->path, (long long)end);
    }
    if (r->fd < 0 || ftruncate(r->fd, end) < 0 || lseek(r->fd, end, SEEK_SET) < 0) {
        *err = "cannot write the command log";
        return -errno;
    }
    if (end == 0) {
        uint8_t pre[RECLOG_PREAMBLE];
        reclog_preamble(pre);
        recorder_add(r, pre, sizeof pre);
    }
    return 0;
}

struct recorder *recorder_open(struct persist *p, const char *room, const char **err)
{
    struct recorder *r = calloc(1, sizeof *r);
    if (!r) {
        *err = "out of memory";
        return NULL;
    }
    r->persist = p;
    r->fd = -1;
    snprintf(r->path, sizeof r->path, "%s/%s.flog", persist_config(p)->record_dir, room);
    if (open_log(r, err) < 0) {
        if (r->fd >= 0)
            close(r->fd);
        free(r->pending);
        free(r);
        return NULL;
    }
    return r;
}

void recorder_add(struct recorder *r, const uint8_t *record, size_t len)
{
    if (r->failed)
        return;
    if (len > r->cap - r->len) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap - r->len < len)
            cap *= 2;
        uint8_t *grown = realloc(r->pending, cap);
        if (!grown) {
            r->failed = true;
            persist_say(r->persist, "command log %s: out of memory; its recording stops", r->path);
            return;
        }
        r->pending = grown;
        r->cap = cap;
    }
    memcpy(r->pending + r->len, record, len);
    r->len += len;
}

/* Asks for the sync the policy wants now. */
static void sync_as_told(struct recorder *r, int64_t now)
{
    enum persist_fsync policy = persist_config(r->persist)->fsync;
    if (policy == PERSIST_FSYNC_ALWAYS) {
        fdatasync(r->fd);
        return;
    }
    if (policy != PERSIST_FSYNC_INTERVAL || !r->dirty || now - r->synced_ns < SYNC_EVERY_NS)
        return;
    int fd = dup(r->fd);
    if (fd >= 0)
        persist_sync_later(r->persist, fd);
    r->synced_ns = now;
    r->dirty = false;
}

void recorder_flush(struct recorder *r, int64_t now)
{
    if (r->failed)
        return;
    if (r->len) {
        int rc = persist_write_all(r->fd, r->pending, r->len);
        if (rc < 0) {
            r->failed = true;
            persist_say(r->persist, "command log %s: write failed (%s); its recording stops",
                        r->path, strerror(-rc));
            return;
        }
        r->len = 0;
        r->dirty = true;
        if (r->cap > KEEP_BYTES) {
            free(r->pending);
            r->pending = NULL;
            r->cap = 0;
        }
    }
    if (r->dirty)
        sync_as_told(r, now);
}

void recorder_close(struct recorder *r)
{
    if (!r)
        return;
    if (!r->failed) {
        recorder_flush(r, 0);
        if (persist_config(r->persist)->fsync != PERSIST_FSYNC_NEVER)
            fdatasync(r->fd);
    }
    close(r->fd);
    free(r->pending);
    free(r);
}
