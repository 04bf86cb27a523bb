/*
 * ctl_commands — the entry points of flockctl's subcommands. Each takes the
 * parsed flags and returns an exit status (enum ctl_exit); each prints its
 * results to stdout and its diagnostics to stderr.
 *
 * Threading: called once on the main thread (load starts its own workers
 * and joins them before returning).
 */
#ifndef FLOCKCTL_COMMANDS_H
#define FLOCKCTL_COMMANDS_H

#include "ctl_args.h"

int ctl_send_run(const struct ctl_args *a);   /* ctl_send.c */
int ctl_watch_run(const struct ctl_args *a);  /* ctl_watch.c */
int ctl_record_run(const struct ctl_args *a); /* ctl_record.c */
int ctl_dump_run(const struct ctl_args *a);   /* ctl_dump.c */
int ctl_load_run(const struct ctl_args *a);   /* ctl_load.c */

#endif
