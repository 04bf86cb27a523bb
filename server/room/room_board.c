/*
 * room_board.c — a room's board of texts for its members (room_board.h).
 */
#include "room_board.h"

#include "news.h"

#include <stdlib.h>
#include <string.h>

void room_board_init(struct room_board *b)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
}

void room_board_free(struct room_board *b)
{
    for (unsigned s = 0; s < ROOM_BOARD_SLOTS; s++)
        free(b->slot[s].text);
    pthread_mutex_destroy(&b->lock);
}

void room_board_put(struct room_board *b, unsigned slot, const char *text, size_t len)
{
    char *copy = slot < ROOM_BOARD_SLOTS ? malloc(len ? len : 1) : NULL;
    if (!copy)
        return;
    memcpy(copy, text, len);
    pthread_mutex_lock(&b->lock);
    free(b->slot[slot].text);
    b->slot[slot].text = copy;
    b->slot[slot].len = len;
    b->slot[slot].version = ++b->version;
    pthread_mutex_unlock(&b->lock);
    news_post(&b->news);
}

uint64_t room_board_send(struct room_board *b, uint64_t since,
                         bool (*wants)(unsigned slot, const void *arg), const void *arg,
                         room_text_fn *send, void *ctx)
{
    pthread_mutex_lock(&b->lock);
    for (unsigned s = 0; s < ROOM_BOARD_SLOTS; s++)
        if (b->slot[s].version > since && wants(s, arg))
            send(ctx, b->slot[s].text, b->slot[s].len);
    uint64_t now = b->version;
    pthread_mutex_unlock(&b->lock);
    return now;
}

uint64_t room_board_version(struct room_board *b)
{
    pthread_mutex_lock(&b->lock);
    uint64_t now = b->version;
    pthread_mutex_unlock(&b->lock);
    return now;
}
