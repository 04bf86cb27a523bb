/*
 * ctl_recording — the layout of a flockctl recording (RECORDING.md), which
 * `flockctl record` writes (ctl_record.c) and `flockctl dump` reads
 * (ctl_dump.c): a 16-byte file header, then records of a 16-byte header and
 * one message each. Constants only.
 */
#ifndef FLOCKCTL_RECORDING_H
#define FLOCKCTL_RECORDING_H

#define REC_MAGIC        "FLOCKREC"
#define REC_VERSION      1 /* of the container; the messages' protocol is at offset 10 */
#define REC_FILE_HEADER  16
#define REC_OFF_PROTOCOL 10
#define REC_HEADER       16
#define REC_SNAPSHOT     1
#define REC_TEXT         2
#define REC_MAX_LEN      (256u << 20) /* dump refuses larger records */

#endif
