/*
 * flockctl — command-line client for flockd: send commands, watch the
 * flock, record and dump snapshots, and load-test a server with thousands
 * of viewers. See `flockctl --help` and `flockctl COMMAND --help`.
 *
 * This file is the dispatch table: each subcommand's name, flags, help and
 * entry point. The subcommands live in ctl_<name>.c.
 */
#include "ctl_args.h"
#include "ctl_commands.h"

#include <stdio.h>
#include <string.h>

#define JOIN_FLAGS                                                                                 \
    "--room", "--role", "--token", "--password", "--name", "--mode", "--boids", "--width",         \
        "--height", "--edges", "--teams", "--units"
#define VIEW_FLAGS "--view", "--px", "--budget"

static const char *const send_flags[] = {"--url",      "--timeout", "--protocol",
                                         "--insecure", JOIN_FLAGS,  NULL};
static const char *const watch_flags[] = {"--url",      "--seconds", "--timeout", "--protocol",
                                          "--insecure", JOIN_FLAGS,  VIEW_FLAGS,  NULL};
static const char *const record_flags[] = {"--url",      "--seconds", "--timeout", "--protocol",
                                           "--insecure", JOIN_FLAGS,  VIEW_FLAGS,  NULL};
static const char *const dump_flags[] = {"--format", NULL};
static const char *const load_flags[] = {
    "--url",          "--clients",   "--seconds",  "--threads",  "--read-delay-ms", "--rcvbuf",
    "--connect-rate", "--timeout",   "--protocol", "--insecure", JOIN_FLAGS,        VIEW_FLAGS,
    "--views",        "--view-size", "--decode",   NULL};

/* What every command that joins says about it in its help. */
#define JOIN_DETAILS                                                                               \
    "Any of --room, --role, --token, --password, --name makes it join a room after\n"              \
    "the welcome (PROTOCOL.md 5.6) and wait for the join's ack and the room's welcome\n"           \
    "before it begins; nothing of the room it left is shown. --mode, --boids, --width,\n"          \
    "--height, --edges, --teams and --units shape a room the join creates (an existing\n"          \
    "room ignores them). A refused or unanswered\n"                                                \
    "join ends it with status 1 and the server's code and message (e.g.\n"                         \
    "flockctl watch: join refused: forbidden: ...). A flag the server would refuse\n"              \
    "is a usage error before connecting.\n"

/* What every command that sends a view says about it in its help. */
#define VIEW_DETAILS                                                                               \
    "With --protocol 3 (flock.v3, PROTOCOL.md 12) the snapshots are view frames:\n"                \
    "without --view the whole room, every tile at full detail; --view X,Y,W,H asks\n"              \
    "for the view in the URL (without --room: /ws?view=X,Y,W,H, even the first frame\n"            \
    "is of it) or with the view command once in the joined room (the frames of the\n"              \
    "whole room until its ack count too), and waits for its ack before it begins;\n"               \
    "--px and --budget go with it. The server picks the level of detail (grid\n"                   \
    "shift, sample) that --px and --budget allow. A refused view ends it with\n"                   \
    "status 1 and the server's code and message, e.g.\n"                                           \
    "  flockctl watch: view refused: out_of_range: the URL's view: view: field 'w'\n"              \
    "  must be in [1, 2263]\n"                                                                     \
    "--view without --protocol 3, or --px or --budget without --view, is a usage\n"                \
    "error.\n"

static const struct ctl_command commands[] = {
    {"send", "JSON...", 0, CTL_MAX_POS, send_flags,
     "Sends each JSON command in turn, waits for its reply and prints the reply as one line.",
     "Without JSON arguments the commands are read from standard input, one per line.\n"
     "A command is sent once the previous one was answered; after a command goes\n"
     "unanswered for --timeout seconds the rest are not sent. The exit status is 1\n"
     "if any command was refused (an error reply) or unanswered.\n"
     "example: flockctl send '{\"cmd\":\"seek\",\"id\":1,\"group\":0,\"x\":400,\"y\":300}'\n"
     "\n" JOIN_DETAILS "The commands then go to that room, with that role.\n"
     "example: flockctl send --room lab --role admin --token T '{\"cmd\":\"pause\"}'\n",
     ctl_send_run, "player"},
    {"watch", "", 0, 0, watch_flags,
     "Prints one JSON line per second: tick, boids, snapshots and bytes per second, "
     "bytes per boid, polarization, refused frames; with views, their level of detail.",
     "Fields: t (seconds since start), protocol (the snapshot version the server took),\n"
     "tick and boids/obstacles/paused of the newest snapshot, snapshots_per_s,\n"
     "bytes_per_s, bytes_per_boid (bytes of the snapshots of that second divided by\n"
     "their boids), key_frames (version 2 key frames that second), polarization: the\n"
     "length of the mean unit heading of all boids (decoded headings), 0 disordered\n"
     ".. 1 aligned, and, since the start, refused (snapshots the decoder refused) and\n"
     "hash_mismatches (version 2 frames whose decoded boids did not hash to the\n"
     "frame's state_hash); available (false while the room's node in a cluster cannot\n"
     "be reached, with reason; each change is also written to stderr). After a\n"
     "refused version 2 or 3 frame watch sends keyframe and\n"
     "decodes again from the next key frame. Without --seconds it runs until\n"
     "interrupted (Ctrl-C). The exit status is 1 if any snapshot was refused.\n"
     "Version 3 lines also have kb_per_s (kilobytes, 1000 bytes, per second),\n"
     "shift and sample of the newest frame (its level of detail: PROTOCOL.md 12.2),\n"
     "parts_per_frame and boids_per_frame (means over the second); there boids is\n"
     "the room's count (the header's room_boids), bytes_per_boid counts the boids\n"
     "the frames held, key_frames the frames without a delta part, polarization is\n"
     "of the boids of the newest frame.\n"
     "example: flockctl watch --protocol 3 --view 3200,1800,1600,900 --budget 40000\n"
     "\n" JOIN_DETAILS "\n" VIEW_DETAILS,
     ctl_watch_run, "viewer"},
    {"record", "FILE", 1, 1, record_flags,
     "Records every message the server sends (welcome, snapshots) with its arrival time.",
     "The file format is described in client/cli/RECORDING.md. Without --seconds it\n"
     "records until interrupted. Prints {\"file\",\"snapshots\",\"bytes\"} at the end.\n"
     "\n" JOIN_DETAILS "The recording then starts with the joined room's welcome.\n"
     "\n" VIEW_DETAILS "The view's ack is in the recording, after the welcome.\n",
     ctl_record_run, "viewer"},
    {"dump", "FILE", 1, 1, dump_flags,
     "Prints a recording's snapshots decoded: JSON lines (every record), CSV or a JSON object "
     "per snapshot.",
     "--format records (default): one JSON line per record. Snapshot lines: arrival_us,\n"
     "every header field, runs [[group,count]], boids [[x,y,heading_rad,group]]\n"
     "(decoded per PROTOCOL.md 4.4), obstacles [[id,x,y,r]], targets [[group,x,y]];\n"
     "version 2 frames also kind, seq, base1, base0, sim_hash and state_hash. Version 3\n"
     "frames: their own header fields (seq, room_boids, shift, sample, tiles, rect,\n"
     "frame_hash, ...), key_parts, delta_parts, parts [[tx,ty,count]], fields, and\n"
     "boids [[id,x,y,heading_rad,group]]. Text lines: arrival_us and the message.\n"
     "--format csv: a header line, then one row per boid of every snapshot:\n"
     "  tick,server_time_us,arrival_us,epoch,index,group,x,y,heading\n"
     "(index: the boid's place in the snapshot, heading in radians); of a version 3\n"
     "recording: tick,server_time_us,arrival_us,seq,id,group,x,y,heading.\n"
     "--format jsonl: one JSON object per snapshot: tick, server_time_us, arrival_us,\n"
     "epoch, width, height, paused, boid_count, then the boids as columns x, y,\n"
     "heading, group (arrays in boid order), obstacles [[id,x,y,r]], targets\n"
     "[[group,x,y]]; version 3: seq for epoch, room_boids, shift, sample, and an id\n"
     "column first.\n"
     "csv and jsonl leave out text records and snapshots that do not decode. Values\n"
     "are those of --format records, to the same digits (client/cli/RECORDING.md).\n"
     "The exit status is 1 if the file is damaged or a snapshot does not decode.\n",
     ctl_dump_run, NULL},
    {"load", "", 0, 0, load_flags,
     "Opens N concurrent viewer connections and measures what each receives.",
     "Connects every client first (staggered, failed attempts retried twice), then\n"
     "measures for --seconds and prints, last, one JSON object:\n"
     "  clients, connected, frames_per_s (all clients), mb_per_s (bytes read),\n"
     "  client_rate_p50 / client_rate_p1 (snapshots per second of one client: median\n"
     "  and slowest percent), age_ms_p50 / age_ms_p99 (arrival time minus the\n"
     "  snapshot's server_time_us), skipped (snapshots missed, from tick gaps),\n"
     "  failures (clients that never connected plus connections lost while\n"
     "  measuring), dropped, retries, bad_frames, connect_s, seconds, protocol,\n"
     "  key_frames (version 2 key frames received), rcvbuf (a client's receive\n"
     "  buffer as the kernel reports it when the client connects),\n"
     "  bytes_per_boid (snapshot payload bytes / (frames x boids)), room (the room\n"
     "  measured), join_failures (joins the server refused, also in failures),\n"
     "  client_kb_per_s_p50 / _p99 / _max (kilobytes, 1000 bytes, one client read\n"
     "  per second: median, 99th percentile, most), parts_per_frame (version 3) and\n"
     "  boids_per_frame (the boids a frame held), decode (--decode given) and\n"
     "  decode_failures (null without it), views (clients whose view was acked),\n"
     "  distinct_views (how many of those views differ), view_failures (views the\n"
     "  server refused, also in failures), view_sample_max and view_rate_min (the\n"
     "  acks' largest sample and lowest frames per second).\n"
     "Every client offers --protocol (default 2, flock.v2 before flock.v1; 3:\n"
     "flock.v3 first). Uses its own WebSocket client over non-blocking sockets and\n"
     "epoll (not libwebsockets): version 1 and 2 payload is skipped in bulk, only\n"
     "snapshot headers are read; version 3 frames are read whole and their parts\n"
     "walked (proto_v3_scan), a frame whose framing is wrong is a bad frame.\n"
     "Over wss:// each client makes a full TLS handshake (OpenSSL) and decrypts all\n"
     "it receives; --insecure accepts a certificate that does not verify.\n"
     "--rcvbuf sets each client's receive buffer before it connects. Left to the\n"
     "kernel, the window a client offers grows as it reads: on the server's own\n"
     "machine, clients that get the CPU late keep small windows, and a frame longer\n"
     "than half a client's largest window is sent in two TCP segments.\n"
     "--decode: every client decodes every snapshot with a decoder of its own (what\n"
     "a viewer does; costs CPU beside the server's). Once in its room a client asks\n"
     "for a key frame (keyframe) and decodes from its first frame that decodes on;\n"
     "decode_failures counts the frames refused after that, plus clients that got\n"
     "frames and decoded none; after a refusal the client asks for a key frame again.\n"
     "The exit status is 1 if any client failed, no snapshot arrived, or (with\n"
     "--decode) a snapshot did not decode.\n"
     "\n" JOIN_DETAILS "Every client joins, as part of connecting: the measurement starts\n"
     "once all are welcomed in the room. A refused join is not tried again; the\n"
     "first refusal is written to stderr.\n"
     "\nWith --protocol 3, --view X,Y,W,H gives every client the same view; --views\n"
     "random gives each its own: --view-size W,H (default 1600,900, cut to the\n"
     "world) at a random place within the world its welcome names. The view is\n"
     "part of connecting (a client counts once its ack came); a refused view is\n"
     "not tried again and the first refusal is written to stderr (flockctl load: 3\n"
     "view(s) refused: out_of_range: ...). --px and --budget go with either. A\n"
     "benchmark of many viewers of a large room:\n"
     "  flockctl load --protocol 3 --views random --budget 40000 --clients 1000 \\\n"
     "      --seconds 20   # flockd --max-per-ip 2000 for more than 256 clients\n",
     ctl_load_run, "viewer"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: flockctl COMMAND [flags] [args]\n"
               "Command-line client for flockd (protocol: proto/PROTOCOL.md).\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nCommon flags: --url URL (default %s), --timeout S, --seconds S;\n"
            "send, watch, record and load: --room NAME, --role viewer|player|admin,\n"
            "--token T, --password P, --name N (work in that room, with that role).\n"
            "'flockctl COMMAND --help' describes each command.\n"
            "exit status: 0 ok, 1 refused or failed, 2 usage error, 3 cannot connect\n",
            CTL_DEFAULT_URL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CTL_EXIT_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name))
            continue;
        struct ctl_args a;
        int rc = ctl_args_parse(&commands[i], argc - 2, argv + 2, &a);
        if (rc)
            return rc == CTL_EXIT_HELP ? CTL_EXIT_OK : rc;
        ctl_install_signals();
        return commands[i].run(&a);
    }
    fprintf(stderr, "flockctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CTL_EXIT_USAGE;
}
