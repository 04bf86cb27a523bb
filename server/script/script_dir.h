/*
 * script_dir — the room scripts a server may run: the NAME.lua files of
 * its --scripts-dir, read into memory at start and again on a reload
 * (SIGHUP, or an admin's `script` command). A client names a script; it
 * never sends code.
 *
 * A reload reads every file again: one that changed and compiles replaces
 * its old text, one that fails to compile (or to be read) keeps the old
 * text and is reported, one that is gone stays as it was (rooms may run
 * it). Each text is checked for its syntax only; its top level runs when
 * a room loads it.
 *
 * Never: run a script. Threading: any thread; a lock covers the texts.
 */
#ifndef FLOCKD_SCRIPT_DIR_H
#define FLOCKD_SCRIPT_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "script.h"

struct script_dir;

/* Reads dir's scripts. NULL (with a static reason in *err) if dir cannot
 * be read; scripts that fail are reported on stderr and left out. */
struct script_dir *script_dir_open(const char *dir, const char **err);
void script_dir_destroy(struct script_dir *d);

/* Reads the files again. Returns how many failed (each reported on stderr
 * and, the first, into why[0..cap)). */
int script_dir_reload(struct script_dir *d, char *why, size_t cap);

/* A copy of the script's text into *out (free with script_source_free):
 * true, or false if the directory has no such script. */
bool script_dir_get(struct script_dir *d, const char *name, struct script_source *out);

/* The last reload's error for this script ("" if none) into why. */
void script_dir_error(struct script_dir *d, const char *name, char *why, size_t cap);

/* The names it holds, comma-separated, into buf. */
void script_dir_names(struct script_dir *d, char *buf, size_t cap);

/* True if `text` compiles as Lua, else false with the error in why. */
bool script_compiles(const struct script_source *src, char *why, size_t cap);

#endif
