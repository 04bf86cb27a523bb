// Type declarations of flockd-client (src/index.js). Written by hand;
// tests/web/client_types.test.mjs checks that they name every export of
// src/index.js and every command of proto/schema.json with its arguments
// and ack members.

// ---- server messages (proto/PROTOCOL.md §6) ---------------------------------------

export interface World {
  width: number;
  height: number;
  edges: 'wrap' | 'contain';
  capacity: number;
  max_obstacles: number;
}

export interface ParamInfo {
  name: string;
  default: number;
  min: number;
  max: number;
  unit: string;
  integer: boolean;
  help: string;
}

export interface FlockMeasures {
  tick: number;
  boids: number;
  local_polarization: number;
  global_polarization: number;
  nn_p5: number;
  nn_median: number;
  mean_speed: number;
  clusters: number;
  largest_cluster: number;
  flocks: number;
  mills: number;
  mill_fraction: number;
  measure_ms: number;
}

/** A version 3 welcome's `stream` (§12.3). */
export interface StreamInfo {
  tiles: { cols: number; rows: number };
  max_shift: number;
  max_sample: number;
  /** A super-tile's field is cells x cells cells; vscale: units/s per step of a cell's mean velocity. */
  field: { cells: number; vscale: number };
  /** Bytes per second the server aims at until a view says otherwise. */
  budget: number;
  /** all; team: an rts player, fogged; delayed: an rts spectator. */
  audience: 'all' | 'team' | 'delayed';
  /** Seconds the frames lag the room (delayed audience), else 0. */
  delay_s: number;
}

export interface Welcome {
  type: 'welcome';
  protocol: 1 | 2 | 3;
  server: string;
  version: string;
  client: number;
  room: string;
  mode: 'sandbox' | 'rts';
  role: Role;
  team?: number;
  tick: number;
  tick_hz: number;
  snapshot_hz: number;
  world: World;
  limits: { max_message: number; rate: number; burst: number; player_obstacles: number };
  params: ParamInfo[];
  values: Record<string, number>;
  groups?: Record<string, Record<string, number>>;
  flock?: FlockMeasures;
  available?: boolean;
  reason?: string;
  /** Only while the room's clock runs slow (§6.7): 0 < dilation < 1. */
  dilation?: number;
  replay?: { first_tick: number; last_tick: number };
  /** Version 3 only. */
  stream?: StreamInfo;
  /** A room that runs a script (§14.1). */
  script?: ScriptInfo;
}

export interface RosterEntry {
  client: number;
  name: string;
  role: Role;
  team?: number;
  connected: boolean;
}

export interface Roster {
  type: 'roster';
  room: string;
  mode: 'sandbox' | 'rts';
  viewers: number;
  players: RosterEntry[];
  more?: number;
}

export interface Availability {
  type: 'availability';
  room: string;
  available: boolean;
  reason?: string;
}

/** The room's clock runs slow, or keeps time again (§6.7). */
export interface Dilation {
  type: 'dilation';
  room: string;
  /** 0 < factor <= 1: ticks a second over the welcome's tick_hz; 1: it keeps time again. */
  factor: number;
  /** Ticks a second now. */
  tick_hz: number;
  /** Snapshots a second now. */
  snapshot_hz: number;
}

export interface RoomStats {
  boids: number;
  paused: boolean;
  tick_ms_mean: number;
  tick_ms_p99: number;
  late_ms_p99: number;
  /** 0 < dilation <= 1: 1 unless the room's clock runs slow (§6.7). */
  dilation: number;
  /** Snapshots a second the room sends now (fewer while it sheds load). */
  snapshot_hz: number;
  flock: FlockMeasures | null;
}

export type Role = 'viewer' | 'player' | 'admin';

// ---- squads (§13) -----------------------------------------------------------------

export type FormationShape = 'none' | 'line' | 'column' | 'wedge' | 'box';
export type SquadOrder = 'none' | 'move' | 'patrol' | 'follow' | 'hold' | 'stop';
export type Point = [number, number];

/** One squad of a squads message (§13.5). */
export interface SquadEntry {
  squad: number;
  units: number;
  do: SquadOrder;
  /** The waypoints still ahead (patrol: the whole round, next first). */
  to?: Point[];
  squad_of?: number;
  unit?: number;
  formation: FormationShape;
  spacing: number;
  /** The middle of the front row (none: the squad's centre). */
  anchor: Point;
  /** Radians, atan2(dy, dx). */
  facing: number;
}

/** A team's squads (§13.5): to its players and to admins. */
export interface SquadsMessage {
  type: 'squads';
  tick: number;
  team: number;
  squads: SquadEntry[];
}

// ---- room scripts (§14) -------------------------------------------------------------

/** The room's script (§14.1), from the welcome. */
export interface ScriptInfo {
  name: string;
  /** FNV-1a 64 of the script's text, 16 hex digits. */
  hash: string;
}

/** What a room's script publishes: any JSON object; these keys every client may show (§14.4). */
export interface GameState {
  /** lobby, countdown, playing or ended. */
  phase?: string;
  round?: number;
  /** Seconds left in the countdown or the match. */
  time_left?: number;
  /** Teams (or names) ready in the lobby. */
  ready?: Array<number | string>;
  /** The `action`s a client may send now, e.g. ["ready", "unready"]. */
  actions?: string[];
  /** The winning team (or name) once the phase is ended; null: none. */
  winner?: number | string | null;
  results?: unknown;
  /** A line of text. */
  message?: string;
  [key: string]: unknown;
}

/** A game state (§14.4): room-wide, or (with team) one team's, to its player and admins. */
export interface GameMessage {
  type: 'game';
  tick: number;
  team?: number;
  state: GameState;
}

/** The room's script, to admins (§14.5): loaded, reloaded or disabled (and why). */
export interface ScriptMessage {
  type: 'script';
  room: string;
  name: string;
  hash: string;
  status: 'running' | 'reloaded' | 'disabled';
  reason?: string;
}

// ---- commands (proto/schema.json) -------------------------------------------------

/** Every ack carries the tick at which the command was applied. */
export interface Ack {
  tick: number;
}

export interface CommandOptions {
  /** How long to wait for the client to be connected and for the reply, ms (default: the client's). */
  timeoutMs?: number;
  /** Check the command against the schema before sending it (default: the client's). */
  validate?: boolean;
}

/** Parameters of the registry (the welcome's `params`), by name. */
export type ParamValues = Record<string, number>;

export interface JoinArgs {
  room: string;
  role: Role;
  mode?: 'sandbox' | 'rts';
  name?: string;
  token?: string;
  password?: string;
  rejoin?: string;
  boids?: number;
  /** For a room the join creates: world size (absent: sized for its boids). */
  width?: number;
  height?: number;
  /** For a room the join creates (absent: rts contain, sandbox the server's). */
  edges?: 'wrap' | 'contain';
  /** For an rts room the join creates: teams (2..the server's max-teams) and units per team. */
  teams?: number;
  units?: number;
  /** For a room the join creates: the script it runs, by name (§14.1); an existing room's must be the same. */
  script?: string;
}

export interface JoinAck extends Ack {
  room: string;
  role: Role;
  client: number;
  team?: number;
  rejoin?: string;
}

export interface ClientOptions {
  /** The room to be in (default: the room the server puts a new connection in, `default`). */
  room?: string;
  /** The role to have there (default: the one the server gives a new connection; admin with a token). */
  role?: Role;
  token?: string;
  password?: string;
  name?: string;
  /** For a room the join creates. */
  mode?: 'sandbox' | 'rts';
  /** For a room the join creates. */
  boids?: number;
  /** 2 (the default: version 2 frames, else version 1); 3: version 3's views, else 2, else 1; or 1. */
  protocol?: 1 | 2 | 3;
  /** Protocol 3, no room: the first view, in the WebSocket URL (§12.4): the first frame is already of it. */
  view?: { x: number; y: number; w: number; h: number; px?: number; budget?: number };
  /** For connecting and per command, ms (default 10000). */
  timeoutMs?: number;
  /** Check commands against the schema before sending them (default true). */
  validate?: boolean;
  /** Unread snapshots one iterator keeps (default 64). */
  snapshotBuffer?: number;
  backoff?: Backoff;
  /** Node: options for the `ws` package's TLS, e.g. {ca} or {rejectUnauthorized: false}. */
  tls?: Record<string, unknown>;
  /** The WebSocket class (default: `ws` in node, the platform's elsewhere). */
  WebSocket?: unknown;
}

export interface Backoff {
  firstMs: number;
  maxMs: number;
  /** A fraction: each delay is spread by ± this much. */
  jitter: number;
}

export interface Counters {
  snapshots: number;
  badFrames: number;
  keyframesAsked: number;
  reconnects: number;
  dropped: number;
}

/** What a view's ack says the frames hold from the next on (§12.4). */
export interface ViewAck extends Ack {
  shift: number;
  sample: number;
  /** Super-tiles [first column, first row, columns, rows]. */
  rect: number[];
  boids: number;
  bytes: number;
  rate: number;
}

export interface ViewArgs {
  x: number;
  y: number;
  w: number;
  h: number;
  px?: number;
  budget?: number;
}

export interface ClientEvents {
  welcome: Welcome;
  /** Each view acked (one sent again after a reconnection too), with the view it answers. */
  view: ViewAck & { view: ViewArgs };
  /** The last view, sent again after a reconnection, was refused (the world changed): the whole room comes. */
  viewrefused: CommandError;
  roster: Roster;
  availability: Availability;
  /** The room's clock runs slow, or keeps time again (§6.7). */
  dilation: Dilation;
  squads: SquadsMessage;
  /** Each game state the room's script publishes (§14.4). */
  game: GameMessage;
  /** The script's status, to admins (§14.5). */
  script: ScriptMessage;
  disconnect: { code?: number; reason?: string };
  reconnect: { welcome: Welcome; downMs: number };
  snapshot: Snapshot;
  badframe: SnapshotError;
  message: Record<string, unknown>;
  close: { error: Error | null };
}

export interface SnapshotIterator extends AsyncIterableIterator<Snapshot> {
  /** Snapshots this iterator let go unread because its buffer was full. */
  readonly dropped: number;
}

export declare class Client {
  readonly url: string;
  /** The latest welcome (§6.1). */
  readonly welcome: Welcome;
  /** The room's latest roster, or null. */
  readonly roster: Roster | null;
  /** False while the room cannot be reached (a cluster, §6.6). */
  readonly available: boolean;
  /** The room's dilation factor: 1, or less while its clock runs slow (§6.7). */
  readonly dilation: number;
  /** The newest snapshot, or null. */
  readonly latest: Snapshot | null;
  readonly counters: Counters;
  readonly state: 'connecting' | 'open' | 'reconnecting' | 'closed';
  readonly room: string;
  readonly role: Role;
  readonly mode: 'sandbox' | 'rts';
  readonly team: number | null;
  readonly protocol: 1 | 2 | 3;
  readonly world: World;
  /** The arguments of the latest view sent (sent again after each reconnection), or null. */
  readonly lastView: ViewArgs | null;
  /** The latest view's ack on this stream, or null (the whole room). */
  readonly viewAck: ViewAck | null;
  /** Team -> its latest squads message in this room (§13.5). */
  readonly squads: Map<number, SquadsMessage>;
  /** The room's script from its welcome, or null. */
  readonly roomScript: ScriptInfo | null;
  /** The latest room-wide game message in this room (§14.4), or null. */
  readonly roomGame: GameMessage | null;
  /** Team -> its latest game message in this room (a player: its own; an admin: every team's). */
  readonly teamGames: Map<number, GameMessage>;
  /** The phase of the latest room-wide game state, or null. */
  readonly gamePhase: string | null;
  /** The latest script message (admins), or null. */
  readonly scriptStatus: ScriptMessage | null;

  on<E extends keyof ClientEvents>(event: E, fn: (value: ClientEvents[E]) => void): () => void;
  off<E extends keyof ClientEvents>(event: E, fn: (value: ClientEvents[E]) => void): void;
  once<E extends keyof ClientEvents>(event: E): Promise<ClientEvents[E]>;

  /** Every snapshot from now on until the client closes. */
  snapshots(options?: { buffer?: number }): SnapshotIterator;
  nextSnapshot(options?: { timeoutMs?: number }): Promise<Snapshot>;
  /** Any command by name, checked against the schema. */
  command(cmd: string, args?: Record<string, unknown>, options?: CommandOptions): Promise<Ack & Record<string, unknown>>;
  whenReady(timeoutMs?: number): Promise<void>;
  /** Squad n's entry in the latest squads message of `team` (default: this player's), or null. */
  squad(n: number, team?: number | null): SquadEntry | null;
  /** The first squads message of `team` (the latest first) that satisfies predicate. */
  waitSquads(predicate: (msg: SquadsMessage) => boolean, options?: { timeoutMs?: number; team?: number | null }): Promise<SquadsMessage>;
  /** The first game message (room-wide; with team, that team's; the latest first) that satisfies predicate. */
  waitGame(predicate: (msg: GameMessage) => boolean, options?: { timeoutMs?: number; team?: number | null }): Promise<GameMessage>;
  close(): Promise<void>;

  // One method per command of the schema:
  ping(args?: Record<string, never>, options?: CommandOptions): Promise<Ack & { hash: string }>;
  seek(args: { group: number; x: number; y: number }, options?: CommandOptions): Promise<Ack>;
  seekClear(args: { group: number }, options?: CommandOptions): Promise<Ack>;
  obstacleAdd(args: { x: number; y: number; r: number }, options?: CommandOptions): Promise<Ack & { obstacle: number }>;
  obstacleRemove(args: { obstacle: number }, options?: CommandOptions): Promise<Ack>;
  obstacleClear(args?: Record<string, never>, options?: CommandOptions): Promise<Ack>;
  spawn(args: { n: number; group: number; x: number; y: number; spread?: number }, options?: CommandOptions): Promise<Ack & { count: number }>;
  despawn(args: { n: number; group?: number }, options?: CommandOptions): Promise<Ack & { count: number }>;
  params(args: { group?: number; reset?: boolean } & ParamValues, options?: CommandOptions): Promise<Ack>;
  pause(args?: Record<string, never>, options?: CommandOptions): Promise<Ack>;
  resume(args?: Record<string, never>, options?: CommandOptions): Promise<Ack>;
  step(args?: { n?: number }, options?: CommandOptions): Promise<Ack & { until: number }>;
  reset(args?: { seed?: number; boids?: number }, options?: CommandOptions): Promise<Ack & { count: number }>;
  kick(args: { client: number }, options?: CommandOptions): Promise<Ack>;
  keyframe(args?: Record<string, never>, options?: CommandOptions): Promise<Ack>;
  stats(args?: Record<string, never>, options?: CommandOptions): Promise<Ack & { stats: RoomStats }>;
  goto(args: { tick: number }, options?: CommandOptions): Promise<Ack>;
  join(args: JoinArgs, options?: CommandOptions): Promise<JoinAck>;
  /** Version 3 only (a local bad_arg otherwise); sent again after each reconnection. */
  view(args: { x: number; y: number; w: number; h: number; px?: number; budget?: number }, options?: CommandOptions): Promise<Ack & { shift: number; sample: number; rect: number[]; boids: number; bytes: number; rate: number }>;
  /** Squads (PROTOCOL.md §13): exactly one of rect, ids, all or squads. */
  select(args?: { team?: number; squad?: number; rect?: [number, number, number, number]; ids?: number[]; all?: true; squads?: number[] }, options?: CommandOptions): Promise<Ack & { squad: number; units: number }>;
  move(args: { team?: number; squad: number; to: [number, number][]; queue?: boolean }, options?: CommandOptions): Promise<Ack & { squad: number }>;
  patrol(args: { team?: number; squad: number; to: [number, number][] }, options?: CommandOptions): Promise<Ack & { squad: number }>;
  follow(args: { team?: number; squad: number; squad_of?: number; unit?: number }, options?: CommandOptions): Promise<Ack & { squad: number }>;
  hold(args: { team?: number; squad: number }, options?: CommandOptions): Promise<Ack & { squad: number }>;
  stop(args: { team?: number; squad: number }, options?: CommandOptions): Promise<Ack & { squad: number }>;
  formation(args: { team?: number; squad: number; shape: 'none' | 'line' | 'column' | 'wedge' | 'box'; spacing?: number }, options?: CommandOptions): Promise<Ack & { squad: number }>;
  /** To the room's script (§14.2): any members but cmd and id, at most OPEN_ARGS_MAX bytes of JSON; its refusal: code 'refused'. */
  game(args?: Record<string, unknown>, options?: CommandOptions): Promise<Ack>;
  /** Admins: the room's script read again (§14.3); at: now, next_match or unchanged. */
  script(args: { reload: boolean }, options?: CommandOptions): Promise<Ack & { at: string }>;
}

export declare function connect(url: string, options?: ClientOptions): Promise<Client>;
export declare const CLIENT_BACKOFF: Readonly<Backoff>;
/** A command's method name: seek_clear -> seekClear. */
export declare function methodName(cmd: string): string;
/** http(s) becomes ws(s); a URL without a path gets /ws. */
export declare function socketUrl(url: string): string;
export declare function webSocketClass(): Promise<unknown>;

// ---- errors ---------------------------------------------------------------------------

export declare class FlockdError extends Error {
  readonly code: string;
}

/** A command refused by the server, or by the library before sending it (`local`). */
export declare class CommandError extends FlockdError {
  readonly code: 'bad_json' | 'too_large' | 'unknown_cmd' | 'bad_arg' | 'out_of_range' | 'capacity' | 'not_found'
    | 'queue_full' | 'rate_limited' | 'forbidden' | 'not_joined' | 'bad_room' | 'internal' | string;
  readonly command: string | null;
  readonly local: boolean;
}

/** No reply can come: 'closed', 'disconnected', 'timeout', 'connect_failed' or 'closed_by_server' (1008: kicked, too slow, too fast). */
export declare class ConnectionError extends FlockdError {
  readonly code: 'closed' | 'disconnected' | 'timeout' | 'connect_failed' | 'closed_by_server';
}

// ---- snapshots ------------------------------------------------------------------------

export interface Obstacle { id: number; x: number; y: number; r: number }
export interface Target { group: number; x: number; y: number }
export interface Run { group: number; count: number }

export interface GroupView {
  /** Versions 1 and 2: where the group starts (the arrays are views); version 3: null (copies). */
  start: number | null;
  count: number;
  x: Float64Array;
  y: Float64Array;
  heading: Float64Array;
  vx: Float64Array;
  vy: Float64Array;
  /** Version 3: the boids' ids; else null. */
  ids: Uint32Array | null;
}

/** A version 3 part of a snapshot: one super-tile, placed in the world. */
export interface SnapshotPart {
  tx: number;
  ty: number;
  kind: 'empty' | 'key' | 'delta';
  /** Its boids are [start, start + count) of the snapshot's arrays. */
  start: number;
  count: number;
  /** The super-tile in world units (one at the grid's right or bottom edge may reach past the world). */
  x: number;
  y: number;
  w: number;
  h: number;
  /** The level of detail (sample > 0): cells x cells cells row by row, every boid the audience sees; mean velocities in units/s. */
  field: { cells: number; count: Uint32Array; vx: Float32Array; vy: Float32Array } | null;
}

export declare class Snapshot {
  constructor(frame: DecodedFrame, prev?: Snapshot | null, tickHz?: number, options?: { vscale?: number });
  readonly version: 1 | 2 | 3;
  readonly tick: number;
  /** The server's clock when the snapshot was encoded, seconds since the Unix epoch. */
  readonly time: number;
  /** Null in version 3. */
  readonly epoch: number | null;
  readonly paused: boolean;
  readonly wrap: boolean;
  readonly width: number;
  readonly height: number;
  readonly count: number;
  readonly x: Float64Array;
  readonly y: Float64Array;
  /** Radians in [0, 2 pi), 0 along +x, a quarter turn toward +y. */
  readonly heading: Float64Array;
  readonly group: Uint8Array;
  /** Units per second from the previous snapshot of the same epoch (version 3: of the same id); NaN where unknown. */
  readonly vx: Float64Array;
  readonly vy: Float64Array;
  /** Version 3: each boid's id; null before (index i is the same boid within an epoch). */
  readonly ids: Uint32Array | null;
  /** Per group its boids; in version 3 counts only (boids are listed by part and id). */
  readonly runs: Run[];
  readonly obstacles: Obstacle[];
  readonly targets: Target[];
  readonly frame: DecodedFrame;
  /** Version 3: the frame is a team's (fog of war) or a spectator's (delayed). */
  readonly fogged?: boolean;
  readonly delayed?: boolean;
  readonly shift?: number;
  /** 0: every boid of the rect; s > 0: those whose id passes the sampling test, and fields. */
  readonly sample?: number;
  readonly seq?: number;
  readonly roomBoids?: number;
  /** Super-tiles of the frame. */
  readonly rect?: { x: number; y: number; cols: number; rows: number };
  readonly parts?: SnapshotPart[];
  of(group: number): GroupView;
}

// ---- validation -----------------------------------------------------------------------

export interface Place {
  world?: { width: number; height: number; capacity: number };
  params?: { name: string; min: number; max: number; integer: boolean }[];
  role?: Role;
  mode?: 'sandbox' | 'rts';
  team?: number | null;
}

/** Throws a CommandError (local) for what the schema refuses. */
export declare function validateCommand(cmd: string, args?: Record<string, unknown>, place?: Place): void;
export declare function boundValue(bound: number | string, world: { width: number; height: number; capacity: number }): number;
export declare const COMMANDS: Map<string, SchemaCommand>;
/** Bytes of JSON a command with open_args (game) may carry in its members. */
export declare const OPEN_ARGS_MAX: number;
export declare const schema: { commands: SchemaCommand[]; [key: string]: unknown };

export interface SchemaCommand {
  name: string;
  summary: string;
  who: 'anyone' | 'player' | 'admin';
  team_arg?: string;
  registry?: boolean;
  /** Any members, any JSON (game, §14.2). */
  open_args?: boolean;
  args: { name: string; type: 'int' | 'number' | 'string' | 'enum'; min?: number | string; max?: number | string;
    required?: boolean; default?: number | string; min_len?: number; max_len?: number; chars?: string; values?: string[] }[];
  ack: Record<string, { type: string; doc?: string; optional?: boolean }>;
  errors: string[];
}

// ---- the connection the viewer runs on ------------------------------------------------

export interface ConnectionState {
  status: 'connecting' | 'open' | 'waiting' | 'closed';
  attempt: number;
  retryAt: number;
  everConnected: boolean;
}

export interface ConnectionHandlers {
  onWelcome(msg: Welcome, fresh: boolean): void;
  onSnapshot(data: ArrayBuffer, arrivalMs: number): void;
  onReply(msg: Record<string, unknown>, request: { cmd: string; sentAt: number } | null): void;
  onMessage?(msg: Record<string, unknown>): void;
  onState?(state: ConnectionState): void;
  onClose?(event: { code?: number; reason?: string; gaveUp: boolean }): void;
}

export declare class Connection {
  constructor(url: string, handlers: ConnectionHandlers, protocols?: string[],
    options?: { WebSocket?: unknown; socketOptions?: unknown; backoff?: Backoff; retryFirst?: boolean });
  readonly state: ConnectionState;
  readonly open: boolean;
  readonly version: 1 | 2 | 3 | null;
  start(): void;
  stop(): void;
  send(cmd: string, args?: Record<string, unknown>): number | null;
}

export declare const OFFER: string[];
export declare const VIEWER_BACKOFF: Readonly<Backoff>;
export declare function backoffDelay(attempt: number, rnd?: () => number, backoff?: Backoff): number;
/** The subprotocols to offer for a snapshot version (a Client's `protocol` option), preferred first. */
export declare function offerFor(protocol?: 1 | 2 | 3): string[];
/** The snapshot version of the subprotocol the server took. */
export declare function versionOf(subprotocol: string): 1 | 2 | 3;

// ---- decoders -------------------------------------------------------------------------

/** What the decoders return: header fields, quantized and decoded boids, sections. */
export interface DecodedFrame {
  version: 1 | 2 | 3;
  type: number;
  flags: number;
  tick: number;
  tickBig: bigint;
  serverTimeUs: number;
  serverTimeUsBig: bigint;
  paused: boolean;
  wrap: boolean;
  width: number;
  height: number;
  /** Versions 1 and 2. */
  epoch?: number;
  boidCount: number;
  /** Versions 1 and 2. */
  groupRunCount?: number;
  obstacleCount: number;
  targetCount: number;
  size: number;
  /** Versions 1 and 2. */
  runs?: Run[];
  group: Uint8Array;
  qx: Uint16Array;
  qy: Uint16Array;
  heading: Uint8Array;
  x: Float64Array;
  y: Float64Array;
  obstacles: Obstacle[];
  targets: Target[];
  /** Version 2 only. */
  kind?: 'key' | 'delta';
  seq?: number;
  gap1?: number;
  gap0?: number;
  base1?: number | null;
  base0?: number | null;
  packedLen?: number;
  plainLen?: number;
  simHash?: string;
  stateHash?: string;
  /** Version 3 only (FrameDecoderV3). */
  fogged?: boolean;
  delayed?: boolean;
  shift?: number;
  sample?: number;
  roomBoids?: number;
  cols?: number;
  rows?: number;
  rect?: { x: number; y: number; cols: number; rows: number };
  frameHash?: number;
  id?: Uint32Array;
  parts?: FramePart[];
}

/** A version 3 frame's part: a super-tile of the rect; its boids at [start, start + count) of the frame's arrays. */
export interface FramePart {
  tx: number;
  ty: number;
  kind: 'empty' | 'key' | 'delta';
  gap1: number;
  gap0: number;
  start: number;
  count: number;
  /** Its tile hash (§12.7). */
  hash: number;
  /** Mean velocities in steps of the welcome's stream.field.vscale units/s. */
  field: { cells: number; count: Uint32Array; vx: Int8Array; vy: Int8Array } | null;
}

export declare class SnapshotError extends Error {
  readonly code: 'truncated' | 'bad_magic' | 'bad_version' | 'bad_type' | 'bad_value' | 'bad_length' | 'over_limit'
    | 'no_base' | 'bad_body' | 'hash_mismatch';
}

export declare function decodeSnapshot(buf: ArrayBuffer | ArrayBufferView): DecodedFrame;
export declare function decodeAnySnapshot(buf: ArrayBuffer | ArrayBufferView, v2?: FrameDecoderV2): Promise<DecodedFrame>;
export declare const SUBPROTOCOL: 'flock.v1';
export declare const PROTOCOL_VERSION: 1;

export declare class FrameDecoderV2 {
  constructor(options?: { maxBoids?: number });
  decode(buf: ArrayBuffer | ArrayBufferView): Promise<DecodedFrame>;
  forget(): void;
  has(seq: number): boolean;
}

export declare const SUBPROTOCOL_V2: 'flock.v2';
export declare const PROTOCOL_VERSION_V2: 2;
export declare function parseFrameV2(buf: ArrayBuffer | ArrayBufferView): DecodedFrame & { body: Uint8Array };
export declare function stateHashV2(qx: Uint16Array, qy: Uint16Array, heading: Uint8Array, group: Uint8Array): string;
export declare function inflateBody(body: Uint8Array, plainLen: number): Promise<Uint8Array>;

/** Version 3 (§12): keeps the last 4 frames, the bases deltas name. */
export declare class FrameDecoderV3 {
  /** cells: the welcome's stream.field.cells (default 4). */
  constructor(options?: { cells?: number; maxBoids?: number });
  decode(buf: ArrayBuffer | ArrayBufferView): Promise<DecodedFrame>;
  forget(): void;
}

export declare const SUBPROTOCOL_V3: 'flock.v3';
export declare const PROTOCOL_VERSION_V3: 3;
export declare const FLAG_FOGGED: 4;
export declare const FLAG_DELAYED: 8;
/** §12.2: the sampling test's hash of a boid id. */
export declare function mix(id: number): number;
/** §12.2: whether boid `id` is in sample `s`. */
export declare function inSample(id: number, s: number): boolean;
/** Super-tiles across a grid of n tiles at grid shift k. */
export declare function gridAt(n: number, shift: number): number;
/** §12.7: the tile hash of `count` boids from `start`. */
export declare function tileHash(id: Uint32Array, qx: Uint16Array, qy: Uint16Array, heading: Uint8Array, group: Uint8Array,
  start: number, count: number): number;

// ---- squads' formation slots (src/squads.js, §13.3) -----------------------------------

export declare const SHAPES: readonly FormationShape[];
/** [a, b] per slot: a across the facing, b back from the front row, in spacings. */
export declare function slotOffsets(shape: FormationShape, n: number): Point[];
export declare function slots(shape: FormationShape, n: number, anchor: Point, facing: number, spacing: number): Point[];
export declare function entrySlots(entry: SquadEntry): Point[];
/** The share of the slots with a point within tolerance, each point for one slot. */
export declare function slotFit(slots: Point[], points: Point[], tolerance: number, wrap?: [number, number] | null): number;
