/*
 * reclog — a room's command log as bytes (server/store/FILES.md §1 is the
 * normative layout): the file's preamble and its records, written into and
 * read from memory.
 *
 * A log is a 16-byte preamble and then records, each framed by its
 * payload's length and CRC-32. A room writes, in order: BEGIN (the build
 * that writes what follows and the room's state as a checkpoint,
 * checkpoint.h: fresh, or restored from a checkpoint file), then every
 * command that changed the room (COMMAND, with the tick it took effect at
 * and who sent it; the server's own commands too), every N ticks the
 * tick's sim_hash (HASH), a mark wherever a checkpoint was taken
 * (CHECKPOINT), the text of a room script wherever one was loaded
 * (SCRIPT) and, when the room closes, END with the last tick and hash.
 * A restarted room appends a new BEGIN to the same log.
 *
 * Reading applies the torn-record rule: a record that fails its frame
 * (length past the end of the file, or a CRC that does not match) is torn,
 * and ends the log without an error, when nothing but zero bytes follows
 * it: a write cut short by a crash. Anything else that fails is
 * corruption, reported with its offset: a log is never misread.
 *
 * Never: I/O, clocks, allocation, globals. Threading: reentrant.
 * Errors: 0 (or a length) or a negative PROTO_E_* code, with a static
 * reason in *why where the signature has one.
 */
#ifndef FLOCKD_RECLOG_H
#define FLOCKD_RECLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "proto_command.h"

#define RECLOG_VERSION    1
#define RECLOG_PREAMBLE   16           /* bytes before the first record */
#define RECLOG_FRAME      8            /* a record's length and CRC-32 */
#define RECLOG_RECORD_MAX (256u << 20) /* bytes of one record's payload */
#define RECLOG_FILE_MAX   (1u << 30)   /* bytes of a log a server reads back to resume a room */
#define RECLOG_SMALL      2048 /* enough for any record but BEGIN (a select of 256 ids: 1,077) */

enum reclog_type {
    RECLOG_BEGIN = 1,
    RECLOG_COMMAND = 2,
    RECLOG_HASH = 3,
    RECLOG_CHECKPOINT = 4,
    RECLOG_END = 5,
    RECLOG_SCRIPT = 6,
    RECLOG_RESUME = 7,
};

#define RECLOG_SCRIPT_NAME_MAX 32        /* bytes of a script's name */
#define RECLOG_SCRIPT_MAX      (1 << 20) /* bytes of a script's text */

enum reclog_reason {
    RECLOG_FRESH = 0,    /* the room starts new (created, or nothing to restore) */
    RECLOG_RESTORED = 1, /* the room carries on from the checkpoint in the record */
    RECLOG_RESUMED = 2,  /* it carries on where the records before this one end (a crash) */
};

/* One decoded record. Which members mean something depends on type. */
struct reclog_record {
    enum reclog_type type;
    size_t offset; /* where its frame starts in the log */
    uint64_t tick; /* COMMAND, HASH, CHECKPOINT, END */
    /* BEGIN */
    enum reclog_reason reason;
    char build[CKPT_BUILD_MAX + 1];
    const uint8_t *state; /* the room's checkpoint, not yet decoded (points into the log) */
    size_t state_len;
    /* COMMAND */
    uint64_t client; /* who sent it; 0: the server itself */
    struct proto_command cmd;
    uint32_t obstacle; /* obstacle_add: the id it was given */
    /* HASH and END */
    uint64_t hash;
    /* CHECKPOINT */
    uint32_t seq;
    /* RESUME: the lease term of the node that carries the room on */
    uint64_t term;
    /* SCRIPT: the room runs this script from this tick on (points into the log) */
    char script_name[RECLOG_SCRIPT_NAME_MAX + 1];
    const char *script;
    size_t script_len;
};

/* True for the commands a log records: those that change a room (not
 * ping, join or kick). */
bool reclog_is_recorded(enum proto_cmd kind);

/* ---- writing: each puts one framed record into buf[0..cap) and returns
 * its length, or PROTO_E_NOSPACE (or PROTO_E_BAD_ARG: not recorded). ---- */

void reclog_preamble(uint8_t out[RECLOG_PREAMBLE]);
/* Bytes reclog_put_begin() needs for a state of state_len bytes. */
size_t reclog_begin_size(size_t state_len);
int reclog_put_begin(uint8_t *buf, size_t cap, enum reclog_reason reason, const char *build,
                     const uint8_t *state, size_t state_len);
int reclog_put_command(uint8_t *buf, size_t cap, uint64_t tick, uint64_t client,
                       const struct proto_command *cmd, uint32_t obstacle);
int reclog_put_hash(uint8_t *buf, size_t cap, uint64_t tick, uint64_t hash);
int reclog_put_checkpoint(uint8_t *buf, size_t cap, uint64_t tick, uint32_t seq);
/* A script's text the room runs from `tick` on (a room's script loaded or
 * reloaded); reclog_script_size() bytes. */
size_t reclog_script_size(size_t name_len, size_t text_len);
int reclog_put_script(uint8_t *buf, size_t cap, uint64_t tick, const char *name, const char *text,
                      size_t text_len);
int reclog_put_end(uint8_t *buf, size_t cap, uint64_t tick, uint64_t hash);
/* A cluster node (lease term `term`) carries the room on from the records
 * before, its world stepped on to `tick` first (a failover, CLUSTER.md). */
int reclog_put_resume(uint8_t *buf, size_t cap, uint64_t tick, uint64_t term);

/* ---- reading ---- */

struct reclog_reader {
    const uint8_t *buf;
    size_t len;
    size_t at;       /* where the next record's frame starts */
    size_t good_end; /* end of the last whole record: where an append goes */
    bool torn;       /* the log ended in a torn record, ignored */
};

/*
 * Starts reading buf[0..len). Returns 0, or PROTO_E_BAD_MAGIC (not a
 * command log), PROTO_E_BAD_VERSION (another format version) or
 * PROTO_E_TRUNCATED (shorter than the preamble).
 */
int reclog_reader_init(struct reclog_reader *rd, const uint8_t *buf, size_t len, const char **why);

/*
 * The next record into *rec: 1, or 0 at the end of the log (rd->torn if a
 * torn last record was ignored), or a negative code with rd->at at the
 * bad record: PROTO_E_HASH_MISMATCH (a record fails its CRC or length and
 * more follows: corruption) or PROTO_E_BAD_VALUE (a whole record whose
 * content breaks the format). After an error, it stays at that record.
 */
int reclog_next(struct reclog_reader *rd, struct reclog_record *rec, const char **why);

#endif
