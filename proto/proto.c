/*
 * proto.c — status names.
 */
#include "proto.h"

struct status_name {
    int status;
    const char *name;
};

/* The names are part of the protocol: never rename one. */
static const struct status_name status_names[] = {
    {PROTO_OK, "ok"},
    {PROTO_E_BAD_JSON, "bad_json"},
    {PROTO_E_TOO_LARGE, "too_large"},
    {PROTO_E_UNKNOWN_CMD, "unknown_cmd"},
    {PROTO_E_BAD_ARG, "bad_arg"},
    {PROTO_E_OUT_OF_RANGE, "out_of_range"},
    {PROTO_E_CAPACITY, "capacity"},
    {PROTO_E_NOT_FOUND, "not_found"},
    {PROTO_E_QUEUE_FULL, "queue_full"},
    {PROTO_E_RATE_LIMITED, "rate_limited"},
    {PROTO_E_FORBIDDEN, "forbidden"},
    {PROTO_E_NOT_JOINED, "not_joined"},
    {PROTO_E_BAD_ROOM, "bad_room"},
    {PROTO_E_INTERNAL, "internal"},
    {PROTO_E_REFUSED, "refused"},
    {PROTO_E_UNAVAILABLE, "unavailable"},
    {PROTO_E_NOSPACE, "nospace"},
    {PROTO_E_UNENCODABLE, "unencodable"},
    {PROTO_E_TRUNCATED, "truncated"},
    {PROTO_E_BAD_MAGIC, "bad_magic"},
    {PROTO_E_BAD_VERSION, "bad_version"},
    {PROTO_E_BAD_TYPE, "bad_type"},
    {PROTO_E_BAD_LENGTH, "bad_length"},
    {PROTO_E_BAD_VALUE, "bad_value"},
    {PROTO_E_OVER_LIMIT, "over_limit"},
    {PROTO_E_NO_BASE, "no_base"},
    {PROTO_E_BAD_BODY, "bad_body"},
    {PROTO_E_HASH_MISMATCH, "hash_mismatch"},
};

const char *proto_status_name(int status)
{
    for (size_t i = 0; i < sizeof status_names / sizeof status_names[0]; i++)
        if (status_names[i].status == status)
            return status_names[i].name;
    return "unknown";
}

int proto_status_is_wire(int status)
{
    return status <= PROTO_E_BAD_JSON && status >= PROTO_E_UNAVAILABLE;
}
