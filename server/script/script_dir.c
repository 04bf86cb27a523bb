/*
 * script_dir.c — the scripts directory in memory (script_dir.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "script_dir.h"

#include <lauxlib.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIR_MAX 64 /* scripts one directory holds */

struct entry {
    struct script_source src;
    char error[SCRIPT_REASON_MAX];
};

struct script_dir {
    pthread_mutex_t lock;
    char *path;
    struct entry e[DIR_MAX];
    int n;
};

bool script_compiles(const struct script_source *src, char *why, size_t cap)
{
    lua_State *L = luaL_newstate();
    if (!L) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    char chunk[SCRIPT_NAME_MAX + 8];
    snprintf(chunk, sizeof chunk, "=%s.lua", src->name);
    bool ok = luaL_loadbufferx(L, src->text, src->len, chunk, "t") == LUA_OK;
    if (!ok)
        snprintf(why, cap, "%s", lua_tostring(L, -1));
    lua_close(L);
    return ok;
}

/* The file's text into *text (malloc'd): its length, or a negative errno. */
static long read_file(const char *path, char **text)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    char *buf = malloc(SCRIPT_SOURCE_MAX + 1);
    size_t n = buf ? fread(buf, 1, SCRIPT_SOURCE_MAX + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > SCRIPT_SOURCE_MAX) {
        free(buf);
        return !buf ? -ENOMEM : bad ? -EIO : -EFBIG;
    }
    *text = buf;
    return (long)n;
}

static struct entry *find(struct script_dir *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->e[i].src.name, name) == 0)
            return &d->e[i];
    return NULL;
}

/* One file NAME.lua read again: true if it failed (reported). */
static bool failed_one(struct script_dir *d, const char *file, char *why, size_t cap)
{
    char name[SCRIPT_NAME_MAX + 1], path[4096];
    size_t len = strlen(file);
    if (len < 5 || len - 4 > SCRIPT_NAME_MAX || strcmp(file + len - 4, ".lua") != 0)
        return false;
    snprintf(name, sizeof name, "%.*s", (int)(len - 4), file);
    snprintf(path, sizeof path, "%s/%s", d->path, file);
    char *text = NULL, err[SCRIPT_REASON_MAX] = "";
    long n = read_file(path, &text);
    struct script_source src = {0};
    if (n < 0)
        snprintf(err, sizeof err, "cannot read %s.lua: %s", name, strerror((int)-n));
    else if (script_source_set(&src, name, text, (size_t)n) < 0)
        snprintf(err, sizeof err, "%s.lua: a bad name or a NUL byte in it", name);
    else
        script_compiles(&src, err, sizeof err);
    free(text);
    pthread_mutex_lock(&d->lock);
    struct entry *e = find(d, name);
    if (!e && err[0] == '\0' && d->n < DIR_MAX)
        e = &d->e[d->n++];
    if (e && err[0] == '\0') {
        script_source_free(&e->src);
        e->src = src;
        src = (struct script_source){0};
    }
    if (e)
        snprintf(e->error, sizeof e->error, "%s", err);
    pthread_mutex_unlock(&d->lock);
    script_source_free(&src);
    if (err[0] == '\0')
        return false;
    fprintf(stderr, "flockd: script %s not loaded (%s)\n", name,
            e ? "the previous version stays" : "no previous version");
    fprintf(stderr, "flockd:   %s\n", err);
    if (why && why[0] == '\0')
        snprintf(why, cap, "%s", err);
    return true;
}

int script_dir_reload(struct script_dir *d, char *why, size_t cap)
{
    if (why && cap)
        why[0] = '\0';
    DIR *dir = opendir(d->path);
    if (!dir) {
        if (why)
            snprintf(why, cap, "cannot read %s: %s", d->path, strerror(errno));
        return 1;
    }
    int failed = 0;
    for (struct dirent *f; (f = readdir(dir)) != NULL;)
        failed += failed_one(d, f->d_name, why, cap);
    closedir(dir);
    return failed;
}

struct script_dir *script_dir_open(const char *path, const char **err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        *err = "the scripts directory cannot be read (or is not a directory)";
        return NULL;
    }
    struct script_dir *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        *err = "out of memory";
        return NULL;
    }
    pthread_mutex_init(&d->lock, NULL);
    script_dir_reload(d, NULL, 0);
    return d;
}

void script_dir_destroy(struct script_dir *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n; i++)
        script_source_free(&d->e[i].src);
    pthread_mutex_destroy(&d->lock);
    free(d->path);
    free(d);
}

bool script_dir_get(struct script_dir *d, const char *name, struct script_source *out)
{
    pthread_mutex_lock(&d->lock);
    struct entry *e = find(d, name);
    bool ok = e && script_source_set(out, e->src.name, e->src.text, e->src.len) == 0;
    pthread_mutex_unlock(&d->lock);
    return ok;
}

void script_dir_error(struct script_dir *d, const char *name, char *why, size_t cap)
{
    pthread_mutex_lock(&d->lock);
    struct entry *e = find(d, name);
    snprintf(why, cap, "%s", e ? e->error : "");
    pthread_mutex_unlock(&d->lock);
}

void script_dir_names(struct script_dir *d, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", d->e[i].src.name);
    pthread_mutex_unlock(&d->lock);
}
