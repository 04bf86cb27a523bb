/*
 * cluster_log.c — the rooms' command log in the cluster's stream
 * (CLUSTER.md §2.1): an owner stores each batch of its room's records
 * before the batch's replies leave, fenced by the subject's last sequence
 * number; a node taking a room over reads the records, marks the log as
 * its own (a RESUME record the old owner's next write fails on) and
 * hands both to the room; a checkpoint stored lets the log before the
 * previous one go. Calls no other file of the cluster (cluster_internal.h).
 */
#include "cluster_internal.h"

#include "clock.h"
#include "room_relay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_WAIT_MS  1000       /* the longest a batch waits for its ack, a read for a message */
#define LOG_READ_MAX (64 << 20) /* bytes of a room's log a takeover reads, at most */
#define MARK_TRIES   4          /* takeovers' marks tried while other writes come first */

static void log_subject(const char *room, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%s", LOG_SUBJECTS_PREFIX, room);
}

int cluster__log_open(struct cluster *c)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    if (js_GetStreamInfo(&si, c->js, LOG_STREAM, NULL, &jerr) == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return 0;
    }
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = {LOG_SUBJECTS_PREFIX ".>"};
    sc.Name = LOG_STREAM;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.AllowDirect = true;
    natsStatus s = js_AddStream(&si, c->js, &sc, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    return s == NATS_OK || jerr == JSStreamNameExistErr ? 0 : PROTO_E_INTERNAL;
}

/* ---- an owner's batches --------------------------------------------------------- */

bool cluster__link_can_log(void *arg, struct room *r)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find_room(c, r);
    bool ok = cr && cr->owner && !cr->log_failed && !cluster__is_fenced(c, cr, clock_mono_ns());
    pthread_mutex_unlock(&c->lock);
    return ok && cluster__is_connected(c);
}

/* The room stops ticking for the cluster: its state holds commands the log
 * lacks. It relays from its next tick; the steward takes it back from
 * the log at once if the lease is still this node's (cluster_lease.c).
 * Under lock. */
static void step_down(struct cluster *c, struct croom *cr, const char *why)
{
    cr->log_failed = true;
    cluster__become_relay(cr, clock_mono_ns());
    COUNT(c, log_failures);
    fprintf(stderr, "flockd: cluster: room \"%s\" stops ticking here: its command log %s\n",
            cr->name, why);
}

/* Remembers that the log's message seq holds checkpoint ckpt's mark. */
static void remember_mark(struct croom *cr, uint32_t ckpt, uint64_t seq)
{
    memmove(cr->marks + 1, cr->marks, sizeof cr->marks - sizeof cr->marks[0]);
    cr->marks[0].ckpt = ckpt;
    cr->marks[0].seq = seq;
    cr->marks[0].ns = clock_mono_ns();
}

int cluster__link_log(void *arg, struct room *r, const uint8_t *records, size_t len,
                      uint32_t checkpoint)
{
    struct cluster *c = arg;
    char subject[SUBJECT_MAX];
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find_room(c, r);
    uint64_t expect = cr && cr->owner ? cr->log_seq : 0;
    bool ok = cr && cr->owner && !cr->log_failed;
    if (cr)
        log_subject(cr->name, subject, sizeof subject);
    pthread_mutex_unlock(&c->lock);
    if (!ok)
        return PROTO_E_UNAVAILABLE;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = LOG_WAIT_MS;
    po.ExpectLastSubjectSeq = expect; /* 0: the room's first record (not checked) */
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = cluster__is_connected(c)
                       ? js_Publish(&pa, c->js, subject, records, (int)len, &po, &jerr)
                       : NATS_CONNECTION_DISCONNECTED;
    uint64_t seq = s == NATS_OK && pa ? pa->Sequence : 0;
    /* Surely not stored: refused for its sequence, or never sent. */
    bool lacks = jerr == JSStreamWrongLastSequenceErr || s == NATS_CONNECTION_DISCONNECTED;
    jsPubAck_Destroy(pa);
    pthread_mutex_lock(&c->lock);
    cr = cluster__find_room(c, r);
    if (cr && seq) {
        cr->log_seq = seq;
        if (checkpoint)
            remember_mark(cr, checkpoint, seq);
        COUNT(c, log_batches);
    } else if (cr && cr->owner) {
        step_down(c, cr,
                  jerr == JSStreamWrongLastSequenceErr
                      ? "has another node's records: that node owns the room now"
                      : "could not store a batch of commands (NATS lost or slow)");
    }
    pthread_mutex_unlock(&c->lock);
    return seq ? 0 : lacks ? PROTO_E_UNAVAILABLE : PROTO_E_INTERNAL;
}

/* ---- a takeover ------------------------------------------------------------------ */

/* The sequence number of a message a direct get returned. */
static uint64_t msg_seq(natsMsg *m)
{
    uint64_t seq = natsMsg_GetSequence(m);
    const char *v = NULL;
    if (!seq && natsMsgHeader_Get(m, "Nats-Sequence", &v) == NATS_OK && v)
        seq = strtoull(v, NULL, 10);
    return seq;
}

/* Appends message m's data to t->log: 0, or PROTO_E_INTERNAL (more
 * than a takeover reads, or no memory). */
static int append(struct room_takeover *t, size_t *cap, natsMsg *m)
{
    size_t n = (size_t)natsMsg_GetDataLength(m);
    if (t->log_len + n > LOG_READ_MAX)
        return PROTO_E_INTERNAL;
    if (t->log_len + n > *cap) {
        size_t want = (t->log_len + n) * 2;
        uint8_t *grown = realloc(t->log, want);
        if (!grown)
            return PROTO_E_INTERNAL;
        t->log = grown;
        *cap = want;
    }
    memcpy(t->log + t->log_len, natsMsg_GetData(m), n);
    t->log_len += n;
    return 0;
}

/* Every record of the room's log into *t (t->log malloc'd, NULL if it has
 * none), and the last message's sequence number: 0, or PROTO_E_INTERNAL
 * (NATS did not answer, or the log is larger than a takeover reads). The
 * subject's last message is got first; then an ordered consumer of the
 * subject brings the messages up to it in one stream, not one round trip
 * each. */
static int read_log(struct cluster *c, const char *subject, struct room_takeover *t, uint64_t *last)
{
    *last = 0;
    jsDirectGetMsgOptions o;
    jsDirectGetMsgOptions_Init(&o);
    o.LastBySubject = subject;
    natsMsg *m = NULL;
    natsStatus s = js_DirectGetMsg(&m, c->js, LOG_STREAM, NULL, &o);
    uint64_t end = s == NATS_OK ? msg_seq(m) : 0;
    natsMsg_Destroy(m);
    if (s == NATS_NOT_FOUND)
        return 0;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = LOG_STREAM;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverAll;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    if (!end || js_SubscribeSync(&sub, c->js, subject, NULL, &so, &jerr) != NATS_OK)
        return PROTO_E_INTERNAL;
    int rc = 0;
    size_t cap = 0;
    while (rc == 0 && *last < end) {
        m = NULL;
        jsMsgMetaData *meta = NULL;
        if (natsSubscription_NextMsg(&m, sub, LOG_WAIT_MS) == NATS_OK &&
            natsMsg_GetMetaData(&meta, m) == NATS_OK && meta->Sequence.Stream > *last) {
            *last = meta->Sequence.Stream;
            rc = append(t, &cap, m);
        } else {
            rc = PROTO_E_INTERNAL;
        }
        if (meta)
            jsMsgMetaData_Destroy(meta);
        natsMsg_Destroy(m);
    }
    cluster__unsubscribe(&sub);
    return rc;
}

int cluster__log_take(struct cluster *c, const char *room, uint64_t term, struct room_takeover *t,
                      uint64_t *seq)
{
    char subject[SUBJECT_MAX];
    log_subject(room, subject, sizeof subject);
    for (int k = 0; k < MARK_TRIES; k++) {
        uint64_t last = 0;
        free(t->log);
        t->log = NULL;
        t->log_len = 0;
        if (read_log(c, subject, t, &last) < 0)
            break;
        uint8_t mark[64];
        int len = room_resume_mark(mark, sizeof mark, t->tick, term);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = LOG_WAIT_MS;
        po.ExpectLastSubjectSeq = last;
        jsPubAck *pa = NULL;
        jsErrCode jerr = 0;
        natsStatus s = len > 0 ? js_Publish(&pa, c->js, subject, mark, len, &po, &jerr) : NATS_ERR;
        *seq = s == NATS_OK && pa ? pa->Sequence : 0;
        jsPubAck_Destroy(pa);
        if (*seq)
            return 0;
        if (jerr != JSStreamWrongLastSequenceErr) /* not a write that came first: give up */
            break;
    }
    free(t->log);
    t->log = NULL;
    t->log_len = 0;
    return PROTO_E_INTERNAL;
}

/* ---- trimming -------------------------------------------------------------------- */

/* Purges the log before the newest mark of a checkpoint older than the
 * one stored (ckpt `stored`) that is at least LOG_KEEP_S old: a takeover
 * replays from the stored checkpoint's mark, and the records before it
 * tell it which forwarded commands were applied (one sent again comes
 * within FORWARD_TTL_S). */
void cluster__log_trim(struct cluster *c, const char *room, uint32_t stored)
{
    uint64_t before = 0;
    int64_t old = clock_mono_ns() - (int64_t)(LOG_KEEP_S * 1e9);
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find(c, room, strlen(room));
    for (size_t i = 0; cr && i < LOG_MARKS && !before; i++) /* newest first */
        if (cr->marks[i].seq && cr->marks[i].ckpt < stored && cr->marks[i].ns <= old)
            before = cr->marks[i].seq;
    pthread_mutex_unlock(&c->lock);
    if (before <= 1) /* nothing before; and a purge "up to 1" would take every message */
        return;
    char subject[SUBJECT_MAX];
    log_subject(room, subject, sizeof subject);
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Purge.Subject = subject;
    o.Stream.Purge.Sequence = before;
    jsErrCode jerr = 0;
    if (js_PurgeStream(c->js, LOG_STREAM, &o, &jerr) == NATS_OK)
        COUNT(c, log_trims);
}
