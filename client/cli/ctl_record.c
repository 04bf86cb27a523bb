/*
 * ctl_record.c — `flockctl record` writes every message flockd sends (the
 * welcome, the view's ack, then snapshots of any version) with its arrival
 * time to a file in the layout of RECORDING.md (ctl_recording.h); the file
 * header names the protocol the server took. `flockctl dump` reads it
 * (ctl_dump.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "bytes.h"
#include "ctl_commands.h"
#include "ctl_recording.h"
#include "ctl_session.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct recorder {
    FILE *f;
    int failed; /* a write failed */
    uint64_t snapshots, bytes;
};

static void write_record(struct recorder *r, int kind, const uint8_t *data, size_t len)
{
    uint8_t hdr[REC_HEADER] = {0};
    bytes_le_put(hdr, ctl_wall_us(), 8);
    bytes_le_put(hdr + 8, len, 4);
    hdr[12] = (uint8_t)kind;
    if (fwrite(hdr, 1, sizeof hdr, r->f) != sizeof hdr || fwrite(data, 1, len, r->f) != len)
        r->failed = 1;
    r->bytes += sizeof hdr + len;
}

static void on_message(void *user, int binary, const uint8_t *data, size_t len)
{
    struct recorder *r = user;
    if (r->failed || len > UINT32_MAX)
        return;
    write_record(r, binary ? REC_SNAPSHOT : REC_TEXT, data, len);
    r->snapshots += binary != 0;
}

static FILE *create_file(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    uint8_t hdr[REC_FILE_HEADER] = {0};
    memcpy(hdr, REC_MAGIC, 8);
    bytes_le_put(hdr + 8, REC_VERSION, 2);
    if (fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* The file header's protocol version: the one the server took. */
static int write_protocol(FILE *f, int protocol)
{
    uint8_t v[2];
    bytes_le_put(v, (uint64_t)protocol, 2);
    long end = ftell(f);
    return end < 0 || fseek(f, REC_OFF_PROTOCOL, SEEK_SET) || fwrite(v, 1, 2, f) != 2 ||
                   fseek(f, end, SEEK_SET)
               ? -1
               : 0;
}

int ctl_record_run(const struct ctl_args *a)
{
    const char *path = a->pos[0];
    struct recorder r = {0};
    r.f = create_file(path);
    if (!r.f) {
        fprintf(stderr, "flockctl record: cannot write %s: %s\n", path, strerror(errno));
        return CTL_EXIT_FAILED;
    }
    struct ctl_open_error err;
    struct ctl_session *s = ctl_session_open(a, on_message, &r, &err);
    if (!s) {
        fprintf(stderr, "flockctl record: %s\n", err.reason);
        fclose(r.f);
        return err.status;
    }
    int rc = CTL_EXIT_OK;
    if (write_protocol(r.f, ctl_session_protocol(s)))
        r.failed = 1;
    double end = ctl_mono_s() + a->seconds;
    while (!ctl_stop && !r.failed && (a->seconds <= 0 || ctl_mono_s() < end)) {
        if (ctl_session_service(s)) {
            fprintf(stderr, "flockctl record: %s\n", ctl_session_error(s));
            rc = CTL_EXIT_FAILED;
            break;
        }
    }
    ctl_session_close(s);
    if (fclose(r.f) || r.failed) {
        fprintf(stderr, "flockctl record: writing %s failed\n", path);
        rc = CTL_EXIT_FAILED;
    }
    printf("{\"file\":\"%s\",\"snapshots\":%llu,\"bytes\":%llu}\n", path,
           (unsigned long long)r.snapshots, (unsigned long long)r.bytes);
    return rc;
}
