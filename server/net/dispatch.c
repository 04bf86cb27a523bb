/*
 * dispatch.c — one message from a client to its room (see dispatch.h).
 */
#include "dispatch.h"

#include "metrics.h"

#include <libwebsockets.h>

static const char queue_full_text[] =
    "the room's command queue is full; nothing was done, retry later";

/* A refusal found before the room still waits behind the client's earlier
 * commands; if even the refusal finds the queue full, queue_full now. */
static void refuse(struct session *s, const char *id, int code, const char *message)
{
    if (lobby_refuse(&s->m, id, code, message) < 0) {
        metrics_limit(LIMIT_QUEUE);
        session_send_error(s, id, PROTO_E_QUEUE_FULL, queue_full_text);
        return;
    }
    session_owe(s);
    metrics_reject(proto_status_name(code));
}

/* Takes one command from the client's bucket. A client that keeps sending
 * into an empty bucket is closed (1008) once its replies are written. */
static bool take_token(struct session *s, int64_t now)
{
    if (bucket_take(&s->bucket, now))
        return true;
    metrics_limit(LIMIT_RATE);
    if (bucket_is_abused(&s->bucket)) {
        metrics_limit(LIMIT_RATE_ABUSE);
        session_close_after_replies(s, LWS_CLOSE_STATUS_POLICY_VIOLATION);
    }
    return false;
}

void dispatch_command(struct session *s, const struct proto_command *cmd, struct lobby *l,
                      int64_t now)
{
    const char *why = "refused";
    struct lobby_member *kicked;
    int rc = lobby_submit(l, &s->m, cmd, now, &kicked, &why);
    if (kicked)
        session_close(kicked->session, session_eviction_status(kicked->evicted));
    if (rc == 0) {
        session_owe(s);
        if (cmd->kind == PROTO_CMD_JOIN)
            s->feed.room = NULL; /* no frames until the new room's welcome */
    } else if (rc == PROTO_E_QUEUE_FULL) {
        metrics_limit(LIMIT_QUEUE);
        session_send_error(s, cmd->id, rc, queue_full_text);
    } else if (cmd->kind == PROTO_CMD_JOIN) {
        session_send_error(s, cmd->id, rc, why); /* nothing owed: this is its turn */
    } else {
        refuse(s, cmd->id, rc, why);
    }
}

/* Rate, parse, then the lobby; a join waits for the replies owed. */
static void handle(struct session *s, const struct session_message *msg, struct lobby *l,
                   int64_t now)
{
    struct proto_command cmd;
    struct proto_error err;
    bool allowed = take_token(s, now);
    bool ok = !msg->binary && proto_command_parse(msg->text, msg->len, lobby_room_limits(s->m.room),
                                                  &cmd, &err) == 0;
    if (!allowed) { /* parsed only to answer with the command's id */
        refuse(s,
               ok            ? cmd.id
               : msg->binary ? ""
                             : err.id,
               PROTO_E_RATE_LIMITED,
               "too many commands; slow down (see limits.rate in the welcome)");
        return;
    }
    if (msg->binary) {
        refuse(s, "", PROTO_E_BAD_JSON, "binary frames are not commands; send JSON text");
        return;
    }
    if (!ok) {
        refuse(s, err.id, err.code, err.message);
        return;
    }
    if (cmd.kind == PROTO_CMD_JOIN && s->owed > 0) {
        session_hold_join(s, &cmd); /* replies keep their order across rooms */
        return;
    }
    dispatch_command(s, &cmd, l, now);
}

/* The query's parts kept for a view: more or longer ones are not read. */
enum { URL_PARTS = 8, URL_PART_MAX = 128 };

void dispatch_url_view(struct session *s, struct lobby *l, int64_t now)
{
    char text[URL_PARTS][URL_PART_MAX];
    const char *parts[URL_PARTS];
    size_t n = 0;
    for (int i = 0; n < URL_PARTS; i++) {
        int len = lws_hdr_copy_fragment(s->wsi, text[n], URL_PART_MAX, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (len < 0 && lws_hdr_fragment_length(s->wsi, WSI_TOKEN_HTTP_URI_ARGS, i) <= 0)
            break;
        if (len < 0) /* longer than a view's: not one */
            continue;
        parts[n] = text[n];
        n++;
    }
    struct proto_command cmd;
    struct proto_error err;
    int rc = proto_view_from_query(parts, n, lobby_room_limits(s->m.room), &cmd, &err);
    if (rc != 0 && !take_token(s, now)) {
        session_send_error(s, "", PROTO_E_RATE_LIMITED, "the URL's view: too many commands");
    } else if (rc < 0) {
        metrics_reject(proto_status_name(rc));
        session_send_error(s, "", rc, err.message);
    } else if (rc > 0) {
        dispatch_command(s, &cmd, l, now);
        s->awaits_view = s->owed > 0 && s->m.protocol == PROTO_V3_VERSION;
    }
}

void dispatch_message(struct session *s, const struct session_message *msg, struct lobby *l,
                      int64_t now)
{
    /* Only OPEN sessions are read (session_flow pauses the others, and lws
     * then delivers no further message); anything else is dropped. */
    if (s->state == SESSION_OPEN)
        handle(s, msg, l, now);
    session_flow(s);
}
