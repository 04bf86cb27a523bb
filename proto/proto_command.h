/*
 * proto_command — client commands: JSON text in, typed struct out (and back).
 *
 * proto_command_parse() is the single gate every client text message goes
 * through: size, encoding, JSON syntax, shape, field names, types, finite
 * numbers and ranges against the world's limits (PROTOCOL.md §5). A parsed
 * command is known to be well-formed; only what depends on the state at
 * apply time (capacity, unknown obstacle ids, permissions) is left to the
 * server. proto_command_format() writes the canonical text of a command,
 * for clients such as flockctl and for tests.
 *
 * Never: I/O, sockets, clocks, threads, globals of its own. Commands are
 * dispatched through a table of per-command parsers.
 *
 * Threading: reentrant, except that cJSON records the position of its last
 * parse error in a process-wide variable: run proto_command_parse() on one
 * thread at a time (in flockd, the network service thread).
 *
 * Memory: nothing is returned that the caller must free. cJSON allocates
 * while parsing and frees before returning; struct proto_command holds
 * everything by value (param descriptors point into the static registry).
 */
#ifndef FLOCKD_PROTO_COMMAND_H
#define FLOCKD_PROTO_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "proto.h"

#define PROTO_ID_STRING_MAX  64  /* bytes of a string id, decoded */
#define PROTO_ID_TEXT_MAX    390 /* buffer for an id's JSON text: "..." with \uXXXX escapes */
#define PROTO_MAX_DEPTH      4   /* deepest [ / { nesting accepted anywhere in a message */
#define PROTO_MAX_PARAMS     32  /* >= sim_param_count() (checked by the tests) */
#define PROTO_MAX_STEP       1000
#define PROTO_MAX_SEED       9007199254740992.0 /* 2^53: exact in every JSON reader */
#define PROTO_DEFAULT_SPREAD 50.0f
#define PROTO_ROOM_MAX       32 /* characters of [A-Za-z0-9_-] */
/* Set in every origin: the key of a command one node of a cluster
 * forwards to another, unique for the life of the cluster's command log
 * (server/cluster/CLUSTER.md §3.2); a log records it instead of the client
 * (server/store/FILES.md §1.3). */
#define PROTO_ORIGIN_BIT     (1ull << 63)
#define PROTO_ROOM_CHARS     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
#define PROTO_NAME_MAX       32  /* bytes of printable UTF-8 */
#define PROTO_TOKEN_MAX      128 /* bytes of printable UTF-8 */
#define PROTO_NODE_MAX       64  /* characters of [A-Za-z0-9_-]: a cluster node's id (/api/rooms) */
#define PROTO_MESSAGE_MAX    160 /* bytes of a proto_error message, NUL included */
#define PROTO_WORLD_MIN      16.0f /* a world's width or height a join may ask for, world units */
#define PROTO_WORLD_MAX      1e6f
#define PROTO_TEAMS_MIN      2      /* teams an rts room a join creates may take */
#define PROTO_TEAM_UNITS_MAX 100000 /* units per team a join may ask for (also --team-units') */

/* What the range checks are against: the room's world and server settings
 * (the server fills it in from its room). */
struct proto_limits {
    float width, height; /* world size, world units */
    uint32_t capacity;   /* max boids */
    size_t max_message;  /* bytes; longer text is too_large; 0 = no limit */
};

enum proto_cmd {
    PROTO_CMD_PING,
    PROTO_CMD_SEEK,
    PROTO_CMD_SEEK_CLEAR,
    PROTO_CMD_OBSTACLE_ADD,
    PROTO_CMD_OBSTACLE_REMOVE,
    PROTO_CMD_OBSTACLE_CLEAR,
    PROTO_CMD_SPAWN,
    PROTO_CMD_DESPAWN,
    PROTO_CMD_PARAMS,
    PROTO_CMD_PAUSE,
    PROTO_CMD_RESUME,
    PROTO_CMD_STEP,
    PROTO_CMD_RESET,
    PROTO_CMD_JOIN,
    PROTO_CMD_KICK,
    PROTO_CMD_KEYFRAME,
    PROTO_CMD_GOTO,
    PROTO_CMD_STATS,
    PROTO_CMD_VIEW,
    PROTO_CMD_SELECT,
    PROTO_CMD_MOVE, /* the squads' orders: move .. stop, in enum proto_order's order */
    PROTO_CMD_PATROL,
    PROTO_CMD_FOLLOW,
    PROTO_CMD_HOLD,
    PROTO_CMD_STOP,
    PROTO_CMD_FORMATION,
    PROTO_CMD_GAME,   /* a custom command for the room's script (§14) */
    PROTO_CMD_SCRIPT, /* admin: the room's script reloaded */
    PROTO_CMD_COUNT
};

/* The wire name of a command ("obstacle_add"); NULL if kind is out of range. */
const char *proto_cmd_name(enum proto_cmd kind);

enum proto_role { PROTO_ROLE_VIEWER, PROTO_ROLE_PLAYER, PROTO_ROLE_ADMIN };
enum proto_mode { PROTO_MODE_ANY, PROTO_MODE_SANDBOX, PROTO_MODE_RTS };      /* ANY: not given */
enum proto_edges { PROTO_EDGES_ANY, PROTO_EDGES_WRAP, PROTO_EDGES_CONTAIN }; /* ANY: not given */

/* The wire names of roles and modes ("viewer", "rts"); "" if out of range or ANY. */
const char *proto_role_name(enum proto_role role);
const char *proto_mode_name(enum proto_mode mode);

#define PROTO_SCRIPT_NAME_MAX 32 /* bytes of a room script's name (§14) */

/* Squads (PROTOCOL.md §13). */
#define PROTO_SQUADS     32  /* squads of a team: 1..32 */
#define PROTO_SELECT_MAX 256 /* ids one select may name */
#define PROTO_WAYPOINTS  16  /* waypoints of a squad */

enum proto_select_by { PROTO_SELECT_RECT, PROTO_SELECT_IDS, PROTO_SELECT_ALL, PROTO_SELECT_SQUADS };

struct proto_select_args {
    int team;  /* 0..255; -1: not given (a player's own team) */
    int squad; /* 0..32; -1: not given (the lowest with no units) */
    enum proto_select_by by;
    float rect[4]; /* RECT: x, y, w, h */
    uint32_t n;    /* IDS: how many */
    uint32_t ids[PROTO_SELECT_MAX];
    uint64_t squads; /* SQUADS: bit s for squad s */
};

/* Orders, numbered as the core's enum sim_order. */
enum proto_order {
    PROTO_ORDER_MOVE = 1,
    PROTO_ORDER_PATROL,
    PROTO_ORDER_FOLLOW,
    PROTO_ORDER_HOLD,
    PROTO_ORDER_STOP,
    PROTO_ORDER_COUNT
};

/* Formations, numbered as the core's enum sim_shape. */
enum proto_shape {
    PROTO_SHAPE_NONE,
    PROTO_SHAPE_LINE,
    PROTO_SHAPE_COLUMN,
    PROTO_SHAPE_WEDGE,
    PROTO_SHAPE_BOX,
    PROTO_SHAPE_COUNT
};

/* The order a command gives (PROTO_CMD_MOVE..STOP), or 0 for another. */
static inline int proto_cmd_order(enum proto_cmd kind)
{
    return kind >= PROTO_CMD_MOVE && kind <= PROTO_CMD_STOP
               ? PROTO_ORDER_MOVE + (int)(kind - PROTO_CMD_MOVE)
               : 0;
}

/* The wire names ("patrol", "wedge"); NULL out of range. */
const char *proto_order_name(int order);
const char *proto_shape_name(int shape);

struct proto_order_args {
    int team;  /* 0..255; -1: not given */
    int squad; /* 1..32 */
    int order; /* enum proto_order: which of move .. stop the command is */
    uint32_t nway;
    float way[PROTO_WAYPOINTS][2];
    int queue;     /* move: after the current waypoints */
    int squad_of;  /* follow: a squad, or 0 */
    uint32_t unit; /* follow: a boid's id, or 0 */
};

struct proto_formation_args {
    int team;      /* 0..255; -1: not given */
    int squad;     /* 1..32 */
    int shape;     /* enum proto_shape */
    float spacing; /* 1..200; 0: not given */
};

struct proto_seek_args {
    int group; /* 0..255 */
    float x, y;
};

struct proto_group_args {
    int group; /* 0..255 */
};

struct proto_obstacle_add_args {
    float x, y, r;
};

struct proto_obstacle_remove_args {
    uint32_t id; /* >= 1 */
};

struct proto_spawn_args {
    uint32_t n;
    int group;
    float x, y, spread;
};

struct proto_despawn_args {
    uint32_t n;
    int group; /* -1: any group */
};

struct proto_param_value {
    const struct sim_param_desc *desc; /* points into the registry (params.h) */
    float value;                       /* valid for desc (sim_param_valid) */
};

struct proto_params_args {
    int group; /* -1: every group */
    int reset; /* 1: the group's (every group's) parameters go back to their defaults first */
    uint32_t count;
    struct proto_param_value items[PROTO_MAX_PARAMS]; /* in message order, names distinct */
};

struct proto_step_args {
    uint32_t n; /* 1..PROTO_MAX_STEP */
};

struct proto_reset_args {
    int has_seed, has_boids; /* 0: not given, the server's default applies */
    uint64_t seed;
    uint32_t boids;
};

struct proto_join_args {
    char room[PROTO_ROOM_MAX + 1];
    enum proto_role role;
    enum proto_mode mode;
    int has_name, has_token, has_password, has_rejoin, has_boids;
    char name[PROTO_NAME_MAX + 1];
    char token[PROTO_TOKEN_MAX + 1];
    char password[PROTO_TOKEN_MAX + 1];
    char rejoin[PROTO_TOKEN_MAX + 1];
    uint32_t boids; /* a room created by this join starts with this many */
    /* A room created by this join: its world and, rts, its teams. */
    int has_width, has_height, has_teams, has_units;
    float width, height; /* PROTO_WORLD_MIN..PROTO_WORLD_MAX */
    enum proto_edges edges;
    uint32_t teams; /* PROTO_TEAMS_MIN..PROTO_GROUPS - 1 (the server's max-teams: the lobby's) */
    uint32_t units; /* 0..PROTO_TEAM_UNITS_MAX per team */
    int has_script;
    char script[PROTO_SCRIPT_NAME_MAX + 1]; /* the room's script, by name (§14) */
};

/* A room script's custom command (§14), or a player's arrival or leaving
 * that the room tells its script (never sent by a client): what the
 * script is handed, as the room resolved it, and its log records. */
#define PROTO_GAME_MAX 1024 /* bytes of a game command's members as JSON */
enum proto_game_event { PROTO_GAME_COMMAND, PROTO_GAME_JOIN, PROTO_GAME_LEAVE };

struct proto_game_args {
    int event;       /* enum proto_game_event */
    int role;        /* the sender's (enum proto_role) */
    int team;        /* the sender's team; -1: none */
    uint64_t player; /* the sender's client id */
    char
        text[PROTO_GAME_MAX + 1]; /* COMMAND: the members but cmd and id, as JSON; JOIN: the name */
};

struct proto_script_args {
    int reload; /* reload the room's script from the scripts directory */
};

struct proto_kick_args {
    uint64_t client; /* 1..2^53 */
};

struct proto_goto_args {
    uint64_t tick; /* 0..2^53: where a recording's playback goes */
};

/* What a version 3 client looks at (PROTOCOL.md §12.4). */
struct proto_view_args {
    float x, y, w, h; /* world units: top-left corner and size */
    uint32_t px;      /* pixels across the view is drawn at; 0: not given (w) */
    uint32_t budget;  /* bytes per second it accepts; 0: not given */
};

#define PROTO_VIEW_PX_MAX     16384
#define PROTO_VIEW_BUDGET_MIN 1000
#define PROTO_VIEW_BUDGET_MAX 100000000

struct proto_command {
    enum proto_cmd kind;
    /* The id exactly as the client wrote it (JSON text), "" if absent. */
    char id[PROTO_ID_TEXT_MAX];
    union {
        struct proto_seek_args seek;
        struct proto_group_args seek_clear;
        struct proto_obstacle_add_args obstacle_add;
        struct proto_obstacle_remove_args obstacle_remove;
        struct proto_spawn_args spawn;
        struct proto_despawn_args despawn;
        struct proto_params_args params;
        struct proto_step_args step;
        struct proto_reset_args reset;
        struct proto_join_args join;
        struct proto_kick_args kick;
        struct proto_goto_args go;
        struct proto_view_args view;
        struct proto_select_args select;
        struct proto_order_args order;
        struct proto_formation_args formation;
        struct proto_game_args game;
        struct proto_script_args script;
    } args; /* ping, obstacle_clear, pause, resume, keyframe, stats: none */
};

/* Why a message was refused. */
struct proto_error {
    int code;                        /* a wire error code, PROTO_E_* */
    char id[PROTO_ID_TEXT_MAX];      /* the id's JSON text if it could be read, else "" */
    char message[PROTO_MESSAGE_MAX]; /* human-readable; names the offending field */
};

/*
 * Parses one client text message text[0..len) (need not be NUL-terminated;
 * a NUL byte inside it is an error). Returns 0 and fills *out, or returns a
 * negative wire code (PROTO_E_TOO_LARGE, _BAD_JSON, _UNKNOWN_CMD, _BAD_ARG,
 * _OUT_OF_RANGE; _INTERNAL only if the codec itself is broken) and fills
 * *err: the code, a message naming the command and field, and the id's
 * text if the id could be read. *out is then unspecified. err is always
 * written: code 0 and empty strings on success.
 */
int proto_command_parse(const char *text, size_t len, const struct proto_limits *lim,
                        struct proto_command *out, struct proto_error *err);

/*
 * The view a WebSocket URL's query asks for (PROTOCOL.md §12.4): parts[0..n)
 * are the query's parts ("name=value", decoded), of which view=X,Y,W,H,
 * px=N and budget=B are read, the others ignored. Returns 0 when there is
 * no view, 1 with *out the view command it makes (no id, parsed against
 * lim as the command would be), or a negative wire code with *err saying
 * why (PROTO_E_BAD_ARG: a part given twice, not numbers, px or budget
 * without view; the parser's codes for what the command would be refused
 * for), its message starting "the URL's view: ".
 */
int proto_view_from_query(const char *const *parts, size_t n, const struct proto_limits *lim,
                          struct proto_command *out, struct proto_error *err);

/*
 * Writes the canonical JSON text of cmd into buf[0..cap), NUL-terminated:
 * {"cmd":NAME,"id":ID,...args} with every argument that has a value
 * (defaults filled in by the parser included) and no others. cmd->id must
 * be "" or one JSON null, number or string; anything else is left out.
 * Returns the length or PROTO_E_NOSPACE (or PROTO_E_BAD_ARG for an unknown
 * kind).
 */
int proto_command_format(const struct proto_command *cmd, char *buf, size_t cap);

#endif
