/*
 * cluster_msg.c — the messages between nodes on NATS (server/cluster/CLUSTER.md
 * §3): an owner publishes its rooms' frames, serves the other nodes'
 * commands (each a pending slot until its room's reply) and takes their
 * wants; a relay serves the frames of the rooms it relays (dropping those
 * of an older term), forwards its clients' commands and hands the replies
 * back. Every message is decoded by cluster_wire.c before it is used; a
 * bad one is counted and dropped. Of the cluster's files it calls only
 * cluster_dir.c (cluster_internal.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "cluster_internal.h"

#include "clock.h"
#include "cluster_wire.h"
#include "metrics.h"
#include "proto_reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The room name in "flockd.room.NAME.KIND", checked: its start and length,
 * or NULL. */
static const char *subject_room(const char *subject, size_t *len)
{
    static const char prefix[] = "flockd.room.";
    if (strncmp(subject, prefix, sizeof prefix - 1) != 0)
        return NULL;
    const char *name = subject + sizeof prefix - 1;
    const char *dot = strchr(name, '.');
    if (!dot || !cluster_is_room_name(name, (size_t)(dot - name)))
        return NULL;
    *len = (size_t)(dot - name);
    return name;
}

void cluster__link_frame(void *arg, struct room *r, const struct frame *f)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find_room(c, r);
    uint64_t term = cr && cr->owner ? cr->term : 0;
    if (term && cluster__is_fenced(c, cr, clock_mono_ns())) {
        COUNT(c, frames_fenced); /* its lease may be another node's by now */
        term = 0;
    }
    if (term && cluster__is_connected(c))
        cluster__tiles_publish(c, cr, f, term); /* its relays' tiles, off the tick */
    pthread_mutex_unlock(&c->lock);
    if (!term)
        return;
    if (!cluster__is_connected(c)) { /* nothing buffers while NATS is away */
        COUNT(c, frames_dropped);
        return;
    }
    size_t size = cluster_frame_size(f);
    uint8_t *buf = malloc(size);
    int len = buf ? cluster_frame_encode(f, term, buf, size) : PROTO_E_NOSPACE;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.frame", room_name(r));
    if (len > 0 && natsConnection_Publish(c->nc, subject, buf, len) == NATS_OK)
        COUNT(c, frames_published);
    else
        COUNT(c, frames_dropped);
    free(buf);
}

/* A slot for a command from reply_to's client: its client id here, or 0
 * if every slot is taken. */
static uint64_t pending_take(struct cluster *c, const char *room, const char *reply_to,
                             uint64_t client, uint64_t origin)
{
    int64_t now = clock_mono_ns();
    uint64_t id = 0;
    pthread_mutex_lock(&c->pend_lock);
    for (uint32_t i = 0; i < PENDING && !id; i++) {
        struct pending *p = &c->pend[i];
        if (p->gen && (double)(now - p->at_ns) < PENDING_TTL_S * 1e9)
            continue;
        *p = (struct pending){
            .gen = ++c->pend_gen, .client = client, .origin = origin, .at_ns = now};
        snprintf(p->room, sizeof p->room, "%s", room);
        snprintf(p->reply_to, sizeof p->reply_to, "%s", reply_to);
        id = REMOTE | (p->gen << 12) | i;
    }
    pthread_mutex_unlock(&c->pend_lock);
    return id;
}

/* Forgets a command whose reply will never come. */
static void pending_free(struct cluster *c, uint64_t client)
{
    uint32_t i = (uint32_t)(client & 0xfff);
    pthread_mutex_lock(&c->pend_lock);
    if (c->pend[i].gen == (client & ~REMOTE) >> 12)
        c->pend[i].gen = 0;
    pthread_mutex_unlock(&c->pend_lock);
}

/* True if subject is a node's reply subject, flockd.node.ID.reply. */
static bool is_reply_subject(const char *subject)
{
    static const char prefix[] = "flockd.node.", suffix[] = ".reply";
    size_t n = strlen(subject);
    if (n >= SUBJECT_MAX || n <= sizeof prefix + sizeof suffix - 2 ||
        strncmp(subject, prefix, sizeof prefix - 1) != 0 ||
        strcmp(subject + n - (sizeof suffix - 1), suffix) != 0)
        return false;
    return cluster_is_token(subject + sizeof prefix - 1,
                            n - (sizeof prefix - 1) - (sizeof suffix - 1), PROTO_NODE_MAX);
}

/* Sends a reply to the node whose client it is. */
static void send_reply(struct cluster *c, const struct pending *p, enum room_reply_kind kind,
                       const char *text, size_t len)
{
    struct cluster_reply rep = {
        .client = p->client, .origin = p->origin, .kind = kind, .text = text, .text_len = len};
    snprintf(rep.room, sizeof rep.room, "%s", p->room);
    uint8_t buf[PROTO_REPLY_BYTES + 128];
    int n =
        len <= PROTO_REPLY_BYTES ? cluster_reply_encode(&rep, buf, sizeof buf) : PROTO_E_NOSPACE;
    if (n > 0 && natsConnection_Publish(c->nc, p->reply_to, buf, n) == NATS_OK)
        COUNT(c, commands_served);
}

bool cluster__link_reply(void *arg, uint64_t client, enum room_reply_kind kind, const char *text,
                         size_t len)
{
    struct cluster *c = arg;
    if (!(client & REMOTE))
        return false;
    uint32_t i = (uint32_t)(client & 0xfff);
    uint64_t gen = (client & ~REMOTE) >> 12;
    struct pending p = {0};
    pthread_mutex_lock(&c->pend_lock);
    if (c->pend[i].gen == gen) {
        p = c->pend[i];
        c->pend[i].gen = 0;
    }
    pthread_mutex_unlock(&c->pend_lock);
    if (p.gen)
        send_reply(c, &p, kind, text, len);
    return true;
}

/* An error for a command that never reached the room, straight back. */
static void refuse_now(struct cluster *c, const struct cluster_cmd *cmd, const char *reply_to,
                       int code, const char *message)
{
    char text[PROTO_REPLY_BYTES];
    int len = proto_reply_error(text, sizeof text, cmd->id, code, message);
    struct pending p = {.gen = 1, .client = cmd->who.client, .origin = cmd->who.origin};
    snprintf(p.room, sizeof p.room, "%s", cmd->room);
    snprintf(p.reply_to, sizeof p.reply_to, "%s", reply_to);
    if (len > 0)
        send_reply(c, &p, ROOM_REPLY_PLAIN, text, (size_t)len);
}

/* The key of the obstacles another node's client adds here: its own key
 * there, moved into a space no key of this node uses. */
static uint64_t remote_owner(const char *reply_to, uint64_t owner)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = reply_to; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return REMOTE | ((h ^ owner * 0x9E3779B97F4A7C15ull) & ~REMOTE);
}

/* Pushes a decoded command into the owned room r. Under lock. */
static void serve_command(struct cluster *c, struct room *r, struct cluster_cmd *cmd,
                          const char *reply_to)
{
    struct proto_command pc;
    struct proto_error perr;
    struct proto_limits lim;
    int refused = cmd->refused;
    const char *message = "";
    char msg[PROTO_MESSAGE_MAX];
    if (refused) {
        snprintf(msg, sizeof msg, "%.*s", (int)cmd->text_len, cmd->text);
        message = msg;
    } else {
        room_limits(r, c->cfg.max_message, &lim);
        if (proto_command_parse(cmd->text, cmd->text_len, &lim, &pc, &perr) < 0 ||
            pc.kind == PROTO_CMD_JOIN) {
            cluster__reject(c, "a forwarded command that does not parse");
            refuse_now(c, cmd, reply_to, PROTO_E_BAD_ARG, "the owner node refused the command");
            return;
        }
    }
    uint64_t client = pending_take(c, cmd->room, reply_to, cmd->who.client, cmd->who.origin);
    if (!client) {
        refuse_now(c, cmd, reply_to, PROTO_E_QUEUE_FULL, "the owner node has too many commands");
        return;
    }
    struct room_actor who = cmd->who;
    who.client = client;
    who.owner = remote_owner(reply_to, cmd->who.owner);
    who.team = -1; /* teams are the owner's lobby's */
    int rc =
        refused ? room_push_refusal(r, client, cmd->id, refused, message) : room_push(r, &who, &pc);
    if (rc < 0) {
        pending_free(c, client);
        refuse_now(c, cmd, reply_to, rc, "the room's command queue is full");
    }
}

static void on_command(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    struct cluster_cmd cmd;
    size_t len;
    const char *name = subject_room(natsMsg_GetSubject(msg), &len);
    const char *reply_to = natsMsg_GetReply(msg);
    if (!name || !reply_to || !is_reply_subject(reply_to) ||
        cluster_cmd_decode((const uint8_t *)natsMsg_GetData(msg),
                           (size_t)natsMsg_GetDataLength(msg), &cmd) < 0 ||
        strlen(cmd.room) != len || memcmp(cmd.room, name, len) != 0) {
        cluster__reject(c, "a command message that does not read");
        natsMsg_Destroy(msg);
        return;
    }
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find(c, name, len);
    if (cr && cr->owner) /* else the relay sends it again, to the owner of then */
        serve_command(c, cr->room, &cmd, reply_to);
    pthread_mutex_unlock(&c->lock);
    natsMsg_Destroy(msg);
}

static void on_want(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    size_t len;
    unsigned kinds;
    const char *name = subject_room(natsMsg_GetSubject(msg), &len);
    if (!name || cluster_want_decode((const uint8_t *)natsMsg_GetData(msg),
                                     (size_t)natsMsg_GetDataLength(msg), &kinds) < 0) {
        cluster__reject(c, "a want message that does not read");
    } else {
        pthread_mutex_lock(&c->lock);
        struct croom *cr = cluster__find(c, name, len);
        if (cr && cr->owner)
            room_relay_want(cr->room, kinds, clock_mono_ns());
        pthread_mutex_unlock(&c->lock);
    }
    natsMsg_Destroy(msg);
}

static void on_frame(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    size_t len = 0;
    char name[PROTO_ROOM_MAX + 1];
    const char *subject_name = subject_room(natsMsg_GetSubject(msg), &len);
    if (subject_name)
        memcpy(name, subject_name, len); /* the subject goes with the message */
    struct cluster_frame_meta meta = {0};
    int rc = PROTO_E_BAD_VALUE;
    struct frame *f = subject_name ? cluster_frame_decode((const uint8_t *)natsMsg_GetData(msg),
                                                          (size_t)natsMsg_GetDataLength(msg),
                                                          c->cfg.frame_pre, &meta, &rc)
                                   : NULL;
    uint64_t term = meta.term;
    natsMsg_Destroy(msg);
    if (!f) {
        cluster__reject(c, "a frame that does not read");
        return;
    }
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find(c, name, len);
    if (cr && !cr->owner && term >= cr->term_seen) {
        cr->term_seen = term;
        cr->frame_ns = clock_mono_ns();
        if (cr->unavailable) { /* at once, not at the steward's next step */
            cr->unavailable = false;
            room_relay_set_available(cr->room, true, NULL);
        }
        cluster__tiles_frame(c, cr, f, meta.boids, meta.paused); /* takes f */
        f = NULL;
        COUNT(c, frames_relayed);
    } else if (cr && !cr->owner) {
        COUNT(c, frames_stale); /* an owner that lost its lease */
    }
    pthread_mutex_unlock(&c->lock);
    frame_release(f);
}

void cluster__availability(struct cluster *c, int64_t now)
{
    bool is_connected = cluster__is_connected(c);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms && !c->quiet; i++) {
        struct croom *cr = c->rooms[i];
        bool is_silent = !cr->owner && (double)(now - cr->frame_ns) > OWNER_SILENT_S * 1e9;
        bool is_down = !cr->owner && (!is_connected || is_silent);
        if (is_down == cr->unavailable)
            continue;
        cr->unavailable = is_down;
        char reason[ROOM_REASON_MAX];
        const struct dir_entry *d = cluster__dir_find(&c->dir, cr->name);
        if (!is_connected)
            snprintf(reason, sizeof reason,
                     "this node lost the cluster's messaging (NATS); waiting for it");
        else
            snprintf(reason, sizeof reason, "no frame from the room's node %s for %.0f s",
                     d ? d->node : "(none yet)", OWNER_SILENT_S);
        room_relay_set_available(cr->room, !is_down, reason);
        fprintf(stderr, "flockd: cluster: room \"%s\" is %s%s\n", cr->name,
                is_down ? "unavailable: " : "available again", is_down ? reason : "");
    }
    pthread_mutex_unlock(&c->lock);
}

/* room's parameters as a message into a new buffer: its length and
 * *buf (the caller frees it), or a negative code. */
static int params_message(struct room *r, uint8_t **buf)
{
    static _Thread_local struct sim_params values[SIM_GROUPS];
    size_t cap = cluster_params_size();
    *buf = malloc(cap);
    if (!*buf)
        return PROTO_E_INTERNAL;
    room_values(r, values);
    return cluster_params_encode(values, *buf, cap);
}

/* Publishes an owned room's parameters on flockd.room.NAME.params. */
static void publish_params(struct cluster *c, struct room *r, const char *name)
{
    uint8_t *buf = NULL;
    int len = params_message(r, &buf);
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.params", name);
    if (len > 0)
        natsConnection_Publish(c->nc, subject, buf, len);
    free(buf);
}

void cluster__link_params(void *arg, struct room *r)
{
    struct cluster *c = arg;
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find_room(c, r);
    if (cr && cr->owner && !c->quiet && cluster__is_connected(c))
        publish_params(c, r, cr->name);
    pthread_mutex_unlock(&c->lock);
}

void cluster__publish_params(struct cluster *c)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms && !c->quiet; i++)
        if (c->rooms[i]->owner)
            publish_params(c, c->rooms[i]->room, c->rooms[i]->name);
    pthread_mutex_unlock(&c->lock);
}

/* A relay's clients get the owner's parameters in their welcomes. */
static void on_params(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    static _Thread_local struct sim_params values[SIM_GROUPS];
    size_t len;
    const char *name = subject_room(natsMsg_GetSubject(msg), &len);
    if (!name || cluster_params_decode((const uint8_t *)natsMsg_GetData(msg),
                                       (size_t)natsMsg_GetDataLength(msg), values) < 0) {
        cluster__reject(c, "a params message that does not read");
    } else {
        pthread_mutex_lock(&c->lock);
        struct croom *cr = cluster__find(c, name, len);
        if (cr && !cr->owner)
            room_relay_params(cr->room, values);
        pthread_mutex_unlock(&c->lock);
    }
    natsMsg_Destroy(msg);
}

/* The owner answers a node that opens the room with its parameters. */
static void on_ask(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    size_t len;
    const char *name = subject_room(natsMsg_GetSubject(msg), &len);
    const char *reply_to = natsMsg_GetReply(msg);
    if (!name || !reply_to || strncmp(reply_to, "_INBOX.", 7) != 0 || strpbrk(reply_to, "*>") ||
        cluster_ask_decode((const uint8_t *)natsMsg_GetData(msg),
                           (size_t)natsMsg_GetDataLength(msg)) < 0) {
        cluster__reject(c, "an ask message that does not read");
    } else {
        pthread_mutex_lock(&c->lock);
        struct croom *cr = cluster__find(c, name, len);
        uint8_t *buf = NULL;
        int n = cr && cr->owner ? params_message(cr->room, &buf) : PROTO_E_NOT_FOUND;
        if (n > 0)
            natsConnection_Publish(c->nc, reply_to, buf, n);
        free(buf);
        pthread_mutex_unlock(&c->lock);
    }
    natsMsg_Destroy(msg);
}

void cluster__ask_params(struct cluster *c, const char *name)
{
    static _Thread_local struct sim_params values[SIM_GROUPS];
    natsMsg *reply = NULL;
    cluster__ask(c, name, ASK_MS, &reply);
    if (!reply)
        return; /* nobody answers (yet): the checkpoint's parameters until it does */
    int rc = cluster_params_decode((const uint8_t *)natsMsg_GetData(reply),
                                   (size_t)natsMsg_GetDataLength(reply), values);
    natsMsg_Destroy(reply);
    if (rc < 0) {
        cluster__reject(c, "an owner's parameters that do not read");
        return;
    }
    pthread_mutex_lock(&c->lock);
    size_t slot = 0;
    for (size_t i = 0; i < MAX_FETCHED; i++)
        if (strcmp(c->fetched[i].name, name) == 0 || !c->fetched[i].name[0]) {
            slot = i;
            break;
        }
    snprintf(c->fetched[slot].name, sizeof c->fetched[slot].name, "%s", name);
    memcpy(c->fetched[slot].values, values, sizeof values);
    pthread_mutex_unlock(&c->lock);
}

void cluster__take_fetched(struct cluster *c, struct room *r)
{
    for (size_t i = 0; i < MAX_FETCHED; i++)
        if (c->fetched[i].name[0] && strcmp(c->fetched[i].name, room_name(r)) == 0) {
            room_relay_params(r, c->fetched[i].values);
            c->fetched[i].name[0] = '\0';
        }
}

/* ---- a relay's forwarded commands until their replies ---------------------------- */

static uint64_t new_origin(struct cluster *c)
{
    pthread_mutex_lock(&c->fwd_lock);
    uint64_t n = ++c->origin_count;
    pthread_mutex_unlock(&c->fwd_lock);
    return PROTO_ORIGIN_BIT | ((c->origin_base + n) & ~PROTO_ORIGIN_BIT);
}

/* A command message to the owner of room: 0, or PROTO_E_UNAVAILABLE. */
static int send_command(struct cluster *c, const char *room, const uint8_t *buf, size_t len)
{
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.cmd", room);
    return natsConnection_PublishRequest(c->nc, subject, c->reply_subject, buf, (int)len) == NATS_OK
               ? 0
               : PROTO_E_UNAVAILABLE;
}

/* Keeps m (sent as buf) until its reply: false if every slot is taken. */
static bool hold_forward(struct cluster *c, const struct cluster_cmd *m, const uint8_t *buf,
                         size_t len)
{
    int64_t now = clock_mono_ns();
    uint8_t *copy = malloc(len);
    if (!copy)
        return false;
    memcpy(copy, buf, len);
    pthread_mutex_lock(&c->fwd_lock);
    struct forward *f = NULL;
    for (size_t i = 0; i < FORWARDS && !f; i++)
        if (!c->fwd[i].origin)
            f = &c->fwd[i];
    if (f) {
        *f = (struct forward){.origin = m->who.origin,
                              .client = m->who.client,
                              .msg = copy,
                              .len = len,
                              .first_ns = now,
                              .sent_ns = now};
        snprintf(f->room, sizeof f->room, "%s", m->room);
        snprintf(f->id, sizeof f->id, "%s", m->id);
        copy = NULL;
    }
    pthread_mutex_unlock(&c->fwd_lock);
    free(copy);
    return f != NULL;
}

/* True if the forwarded command of origin was waiting for its reply (it
 * is not any more), false if it was answered already or never held. */
static bool take_forward(struct cluster *c, uint64_t origin)
{
    bool held = false;
    pthread_mutex_lock(&c->fwd_lock);
    for (size_t i = 0; i < FORWARDS && !held; i++)
        if (c->fwd[i].origin == origin) {
            free(c->fwd[i].msg);
            c->fwd[i] = (struct forward){0};
            held = true;
        }
    pthread_mutex_unlock(&c->fwd_lock);
    return held;
}

/* Answers a forwarded command that had no reply in time. */
static void expire(struct cluster *c, const struct forward *f)
{
    char text[PROTO_REPLY_BYTES];
    int len = proto_reply_error(text, sizeof text, f->id, PROTO_E_UNAVAILABLE,
                                "no node that owns the room answered within 8 s (NATS or "
                                "the owner lost): its outcome is unknown (it may have "
                                "taken effect)");
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find(c, f->room, strlen(f->room));
    if (cr && len > 0)
        room_relay_reply(cr->room, f->client, ROOM_REPLY_PLAIN, text, (size_t)len);
    pthread_mutex_unlock(&c->lock);
    COUNT(c, commands_expired);
}

void cluster__resend(struct cluster *c, int64_t now)
{
    for (size_t i = 0; i < FORWARDS; i++) {
        struct forward f = {0};
        pthread_mutex_lock(&c->fwd_lock);
        struct forward *at = &c->fwd[i];
        bool old = at->origin && (double)(now - at->first_ns) >= FORWARD_TTL_S * 1e9;
        bool again = at->origin && !old && (double)(now - at->sent_ns) >= RESEND_S * 1e9 &&
                     cluster__is_connected(c);
        if (old) { /* answered below, outside the lock */
            f = *at;
            *at = (struct forward){0};
        } else if (again && (f.msg = malloc(at->len)) != NULL) {
            memcpy(f.msg, at->msg, at->len);
            f.len = at->len;
            snprintf(f.room, sizeof f.room, "%s", at->room);
            at->sent_ns = now;
        }
        pthread_mutex_unlock(&c->fwd_lock);
        if (old)
            expire(c, &f);
        else if (f.msg && send_command(c, f.room, f.msg, f.len) == 0)
            COUNT(c, commands_resent);
        free(f.msg);
    }
}

void cluster__forwards_free(struct cluster *c)
{
    for (size_t i = 0; i < FORWARDS; i++)
        free(c->fwd[i].msg);
}

int cluster__link_forward(void *arg, struct room *r, const struct room_actor *who,
                          const struct proto_command *cmd, int refused, const char *message)
{
    struct cluster *c = arg;
    /* A room placed on another node that has not taken it yet: nobody
     * would answer, so the client hears it at once. */
    pthread_mutex_lock(&c->lock);
    struct croom *cr = cluster__find_room(c, r);
    const struct dir_entry *d = cluster__dir_find(&c->dir, room_name(r));
    bool has_owner = (cr && cr->term_seen > 0) || (d && !d->placed);
    pthread_mutex_unlock(&c->lock);
    if (!cluster__is_connected(c) || !has_owner)
        return PROTO_E_UNAVAILABLE;
    char text[CLUSTER_TEXT_MAX < 65536 ? CLUSTER_TEXT_MAX : 65536];
    int tlen = refused ? snprintf(text, sizeof text, "%s", message)
                       : proto_command_format(cmd, text, sizeof text);
    if (tlen < 0 || (size_t)tlen >= sizeof text)
        return PROTO_E_INTERNAL;
    struct cluster_cmd m = {
        .who = *who, .refused = refused, .text = text, .text_len = (size_t)tlen};
    m.who.origin = new_origin(c);
    snprintf(m.room, sizeof m.room, "%s", room_name(r));
    snprintf(m.id, sizeof m.id, "%s", cmd->id);
    static _Thread_local uint8_t buf[65536 + 1024];
    int len = cluster_cmd_encode(&m, buf, sizeof buf);
    if (len < 0 || !hold_forward(c, &m, buf, (size_t)len))
        return PROTO_E_UNAVAILABLE; /* every slot taken: too many commands in flight */
    if (send_command(c, m.room, buf, (size_t)len) < 0) {
        take_forward(c, m.who.origin);
        return PROTO_E_UNAVAILABLE;
    }
    COUNT(c, commands_forwarded);
    return 0;
}

void cluster__on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
    (void)nc;
    (void)sub;
    struct cluster *c = arg;
    struct cluster_reply rep;
    if (natsMsg_IsNoResponders(msg)) {
        /* NATS's own word that no node took a command (no owner subscribed
         * yet): it is sent again within RESEND_S. */
    } else if (cluster_reply_decode((const uint8_t *)natsMsg_GetData(msg),
                                    (size_t)natsMsg_GetDataLength(msg), &rep) < 0) {
        cluster__reject(c, "a reply that does not read");
    } else if (!take_forward(c, rep.origin)) { /* answered already: one reply per command */
        COUNT(c, replies_duplicate);
    } else {
        pthread_mutex_lock(&c->lock);
        struct croom *cr = cluster__find(c, rep.room, strlen(rep.room));
        if (cr) {
            room_relay_reply(cr->room, rep.client, rep.kind, rep.text, rep.text_len);
            COUNT(c, replies_relayed);
        }
        pthread_mutex_unlock(&c->lock);
    }
    natsMsg_Destroy(msg);
}

static void subscribe(struct cluster *c, natsSubscription **s, const char *name, const char *kind,
                      natsMsgHandler cb)
{
    if (*s)
        return;
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "flockd.room.%s.%s", name, kind);
    if (natsConnection_Subscribe(s, c->nc, subject, cb, c) != NATS_OK)
        *s = NULL;
    else /* latest-frame policy: a relay that falls behind drops, never queues without bound */
        natsSubscription_SetPendingLimits(*s, 64, 64 * 1024 * 1024);
}

/* The subscriptions a room needs as owner or relay. Under lock. */
void cluster__resubscribe(struct cluster *c, struct croom *cr)
{
    if (cr->owner) {
        cluster__unsubscribe(&cr->frames);
        cluster__unsubscribe(&cr->params);
        subscribe(c, &cr->cmds, cr->name, "cmd", on_command);
        subscribe(c, &cr->wants, cr->name, "want", on_want);
        subscribe(c, &cr->asks, cr->name, "ask", on_ask);
    } else {
        cluster__unsubscribe(&cr->cmds);
        cluster__unsubscribe(&cr->wants);
        cluster__unsubscribe(&cr->asks);
        subscribe(c, &cr->frames, cr->name, "frame", on_frame);
        subscribe(c, &cr->params, cr->name, "params", on_params);
    }
    cluster__tiles_resubscribe(c, cr);
}

void cluster__follow_roles(struct cluster *c)
{
    uint8_t want[CLUSTER_WANT_SIZE];
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nrooms; i++) {
        struct croom *cr = c->rooms[i];
        cluster__resubscribe(c, cr);
        /* Version 3's tiles are asked for by view messages (cluster_tiles.c). */
        unsigned kinds = cr->owner ? 0 : room_relay_wanted(cr->room) & ((1u << FRAME_KINDS) - 1);
        char subject[SUBJECT_MAX];
        snprintf(subject, sizeof subject, "flockd.room.%s.want", cr->name);
        if (kinds && cluster_want_encode(kinds, want, sizeof want) > 0)
            natsConnection_Publish(c->nc, subject, want, CLUSTER_WANT_SIZE);
    }
    pthread_mutex_unlock(&c->lock);
}
