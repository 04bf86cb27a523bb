/*
 * base.c — names of the utilities' error codes (see base.h).
 */
#include "base.h"

const char *base_strerror(int code)
{
    switch (code) {
    case BASE_OK:
        return "ok";
    case BASE_EINVAL:
        return "invalid argument";
    case BASE_EFULL:
        return "full";
    case BASE_ENOMEM:
        return "out of memory";
    case BASE_ENOSPACE:
        return "no space left in the buffer";
    default:
        return "unknown";
    }
}
