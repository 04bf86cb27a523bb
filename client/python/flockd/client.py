"""The asyncio client: one WebSocket connection to flockd, kept alive.

    async with flockd.connect_async("ws://127.0.0.1:8080/ws", room="lab",
                                    role="admin") as c:
        ack = await c.spawn(n=100, group=1, x=800, y=500)   # Ack: ack.tick, ack.count
        async for snap in c.snapshots(seconds=5):           # Snapshot: snap.x, snap.vx ...
            ...

Commands: one coroutine per command of the schema (`seek`, `params`,
`spawn`, ... `join`), generated from it, plus `command(name, **args)`. Each
is checked against the schema before it is sent (schema.check) and waits
for its reply: an Ack, or a CommandError subclass (client_side tells who
refused). Arguments given as None are left out (the server's default).

Snapshots: every binary message is decoded (decode.Decoder, version 2 by
default, version 3 with protocol=3); a frame the decoder refuses is counted
(`refused_frames`), a key frame is asked for (`keyframe`, at most every
0.5 s) and nothing of it reaches the caller. `snapshot` is the newest;
`snapshots()` iterates over them, `wait_for(predicate)` waits for one that
satisfies a condition.

Views (version 3): `view(x=, y=, w=, h=, px=, budget=)` says what part of
the room the client looks at; its Ack (`view_ack`) carries the plan of the
frames (shift, sample, rect, boids, bytes, rate). The client remembers the
last view acked and sends it again after a reconnect; a join forgets it
(another room, another world). `view=dict(x=, y=, w=, h=, px=, budget=)`
given to the client (protocol=3, no room) puts the first view in the
WebSocket URL (§12.4): the first frame is already of it, never a key
frame of the whole room; `start()` returns once it is acked (a refused one
raises its CommandError). Reconnecting outside a joined room, the client
puts its last view in the URL again.

Reconnecting: when the connection drops (the server restarted, the network
failed) the client connects again after a jittered, capped backoff
(Backoff: 0.1 s doubling up to 1 s, each delay drawn from its upper half),
joins the room it was in with the same role, token, password and name (an
RTS player with its rejoin token, so it gets its team back), and resumes on
a key frame. Commands sent meanwhile wait for the connection (up to their
timeout). A command that was waiting for its reply when the connection
dropped is sent again if sending it twice does what sending it once does
(RESENT_COMMANDS: ping, seek, params, pause, view ...); the others (spawn,
despawn, obstacle_add, obstacle_remove, step, reset, kick, join) raise
ConnectionLost, since they may or may not have been applied.
A close the server means (1008: kicked, too slow or over the rate limit;
1002, 1007, 1009: a protocol error) is not retried, nor is a join the
server refuses other than rate_limited, queue_full or internal. Then the
client is closed for good: commands raise ConnectionLost, iterators too.
`on("disconnect", fn)` and `on("reconnect", fn)` watch it (also "welcome",
"roster", "availability", "dilation", "squads", "game", "script", "refused").

Squads (§13): `select`, `move`, `patrol`, `follow`, `hold`, `stop` and
`formation` are commands of the schema like the others. The latest
`squads` message of each team is `squads[team]` (a Squads message; a
player gets its own team's, an admin every team's); `squad(n)` is one
squad's entry, `wait_squads(predicate)` waits for a squads message that
satisfies a condition; squads.py places a formation's slots.

Room scripts (§14): `game(**members)` (or `send_game(members)`, for any
member names) sends a `game` command to the room's script and returns its
Ack; a script's refusal raises Refused with its reason. `room_script` is
the welcome's script (name, hash), None in a room without one. The latest
room-wide `game` message is `room_game` and each team's `team_games[team]`
(Game messages: tick, team, state); `game_phase` is the room-wide phase;
`wait_game(predicate)` waits for a game message that satisfies a
condition; `on("game", fn)` sees each one and `on("script", fn)` the
script's status messages to admins (the latest: `script_status`).

Threading: one event loop; nothing here is thread-safe (the blocking
wrapper in blocking.py runs a client in a thread of its own).
"""

import asyncio
import collections
import inspect
import itertools
import json
import logging
import math
import random
import ssl as ssl_module
import time

import websockets

from . import schema
from .decode import Decoder
from .errors import (CommandError, ConnectError, ConnectionLost, InternalError, QueueFull,
                     RateLimited, SnapshotError, Timeout, command_error)
from .messages import Ack, Availability, Dilation, Game, Roster, ScriptStatus, Squads, Welcome
from .snapshot import Snapshot

log = logging.getLogger("flockd")

SUBPROTOCOLS = {3: ["flock.v3", "flock.v2", "flock.v1"], 2: ["flock.v2", "flock.v1"],
                1: ["flock.v1"]}
# Closes the server means: not retried (PROTOCOL.md §7.2).
FINAL_CLOSE_CODES = (1002, 1007, 1008, 1009)
# Join refusals worth another try after the backoff.
RETRIED_JOIN_ERRORS = (RateLimited, QueueFull, InternalError)
KEYFRAME_EVERY_S = 0.5
# Commands that do the same sent twice as once: one whose reply the
# connection took down with it is sent again once reconnected. The others
# raise ConnectionLost: they may have been applied.
RESENT_COMMANDS = frozenset(("ping", "seek", "seek_clear", "obstacle_clear", "params", "pause",
                             "resume", "keyframe", "stats", "goto", "view"))


class Backoff:
    """Delays between reconnect attempts: `initial` seconds doubling up to
    `cap`, each drawn uniformly from the upper half of its value (jitter,
    so that clients of a restarted server do not come back in step)."""

    def __init__(self, initial=0.1, cap=1.0, rng=random.random):
        self.initial, self.cap, self.rng = initial, cap, rng

    def delay(self, attempt):
        d = min(self.cap, self.initial * 2 ** min(attempt, 30))
        return d / 2 + self.rng() * d / 2


class Event:
    """Something that happened to the connection: `kind` ('disconnect',
    'reconnect', 'welcome', 'roster', 'availability', 'dilation', 'squads',
    'game', 'script', 'refused'), `at` (time.monotonic()) and per kind: code
    and reason (disconnect), attempts and downtime in seconds (reconnect),
    message (welcome, roster, availability, dilation, squads, game, script), error
    (refused: the SnapshotError)."""

    def __init__(self, kind, **fields):
        self.kind, self.at = kind, time.monotonic()
        self.__dict__.update(fields)

    def __repr__(self):
        rest = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k not in ("kind", "at"))
        return f"Event({self.kind}{', ' if rest else ''}{rest})"


def tls_context(url, insecure=False, ssl=None):
    """The TLS context for url: `ssl` if given, one that accepts any
    certificate with `insecure` (a self-signed one, say), else the default."""
    if ssl is not None or not url.startswith("wss://"):
        return ssl
    ctx = ssl_module.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl_module.CERT_NONE
    return ctx


class Client:
    """A connection to flockd; see the module's docstring. Make one with
    `connect_async()` (or `await Client(url, ...).start()`)."""

    def __init__(self, url, *, room=None, role=None, mode=None, token=None, password=None,
                 name=None, boids=None, protocol=2, insecure=False, ssl=None, reconnect=True,
                 backoff=None, timeout=10.0, connect_timeout=10.0, numpy=None,
                 max_boids=1 << 22, view=None):
        if protocol not in SUBPROTOCOLS:
            raise ValueError("protocol must be 1, 2 or 3")
        if (room is None) != (role is None):
            raise ValueError("room and role go together")
        if view is not None and (protocol != 3 or room is not None):
            raise ValueError("a view in the URL needs protocol=3 and no room (it is the first "
                             "room's); view() after a join")
        self.url, self.protocol_wanted = url, protocol
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self._ssl = tls_context(url, insecure, ssl)
        self._reconnect = reconnect
        self._backoff = backoff or Backoff()
        self._join = None
        if room is not None:
            self._join = {k: v for k, v in dict(room=room, role=role, mode=mode, token=token,
                                                password=password, name=name,
                                                boids=boids).items() if v is not None}
        self.team = self.rejoin_token = None
        self._decoder = Decoder(max_boids=max_boids, numpy=numpy)
        self._ws = self._task = None
        self._ids = itertools.count(1)
        self._pending = {}
        self._handlers = collections.defaultdict(list)
        self._subs = set()
        self._welcome_waiters = []
        self._connected = asyncio.Event()
        self._ended = asyncio.Event()
        self._closing = False
        self._dead = None  # why the client ended (None: closed by its user)
        self._stream = 0  # counts welcomes: a new stream of frames each
        self._prev = self._keyframe_at = None
        self._room = schema.Room()
        self.welcome = self.roster = self.availability = self.snapshot = None
        self.dilation = None  # the latest Dilation message (§6.7), in this room
        self._view = self.view_ack = None  # the last view acked: its arguments, its Ack
        self._url_view = None  # a future for the reply to the view of this connection's URL
        if view is not None:
            self._view = {k: schema.normalize(v) for k, v in view.items() if v is not None}
            view_query(self._view)  # refuse a bad one here
        self.squads = {}  # team -> its latest Squads message (§13.5), in this room
        self._squads_waiters = []
        self.room_game = None  # the latest room-wide Game message (§14.4), in this room
        self.team_games = {}  # team -> its latest Game message
        self.script_status = None  # the latest script message (§14.5; admins)
        self._game_waiters = []
        self.last_ack_tick = -1
        self.frames = self.refused_frames = self.keyframes_requested = self.reconnects = 0

    # ---- the connection ---------------------------------------------------------------

    async def start(self):
        """Connects (and joins, if a room was given); returns the client.
        Raises ConnectError, or the CommandError of a refused join or of
        the refused view of the URL."""
        ws, welcome = await self._handshake()
        self._install(ws, welcome)
        self._task = asyncio.ensure_future(self._run())
        if self._url_view is not None:
            try:
                await self._took_url_view()
            except BaseException:
                await self.close()
                raise
        return self

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    @property
    def connected(self):
        return self._connected.is_set()

    @property
    def closed(self):
        return self._ended.is_set()

    @property
    def protocol(self):
        """The protocol version the server took (the welcome's)."""
        return self.welcome.protocol if self.welcome else None

    def _socket_url(self):
        """The URL to connect to: with the last view in its query outside a
        joined room (version 3), and then the future its reply will fill."""
        self._url_view = None
        if self._view is None or self._join or self.protocol_wanted != 3:
            return self.url
        self._url_view = asyncio.get_running_loop().create_future()
        return self.url + ("&" if "?" in self.url else "?") + view_query(self._view)

    async def _took_url_view(self):
        """Waits for the reply to the URL's view: its Ack is view_ack; a
        refusal forgets the view and raises its CommandError."""
        fut = self._url_view
        try:
            reply = await asyncio.wait_for(fut, self.timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"view: no reply within {self.timeout} s") from None
        finally:
            self._url_view = None
            self._pending.pop(None, None)
        if reply["type"] == "error":
            self._view = self.view_ack = None
            raise command_error(reply.get("code"), reply.get("message", ""), "view")
        self.view_ack = Ack(reply, "view")

    async def _open_socket(self):
        url = self._socket_url()
        if self._url_view is not None:  # its reply has no id
            self._pending[None] = (self._url_view, "view")
        try:
            return await asyncio.wait_for(websockets.connect(
                url, subprotocols=SUBPROTOCOLS[self.protocol_wanted], max_size=None,
                compression=None, ssl=self._ssl, open_timeout=None, close_timeout=2),
                self.connect_timeout)
        except (OSError, asyncio.TimeoutError, websockets.WebSocketException) as e:
            raise ConnectError(f"cannot connect to {self.url}: {e or 'timed out'}") from e

    async def _read_until(self, ws, wanted, deadline):
        """The first JSON message wanted() accepts; frames of the room being
        left and other messages before it are dropped."""
        while True:
            left = deadline - time.monotonic()
            try:
                msg = await asyncio.wait_for(ws.recv(), max(left, 0))
            except asyncio.TimeoutError:
                raise ConnectError(f"{self.url}: no welcome within {self.connect_timeout} s")
            except websockets.ConnectionClosed as e:
                raise ConnectError(f"{self.url}: closed during the handshake ({e})") from e
            if isinstance(msg, str):
                try:
                    m = json.loads(msg)
                except ValueError:
                    continue
                if isinstance(m, dict) and wanted(m):
                    return m

    async def _handshake(self):
        """A new connection, its welcome and, if the client is in a room,
        the join: (websocket, the welcome of the room to stay in)."""
        ws = await self._open_socket()
        deadline = time.monotonic() + self.connect_timeout
        try:
            welcome = await self._read_until(ws, _is_welcome, deadline)
            if self._join:
                welcome = await self._join_now(ws, welcome, deadline)
            return ws, welcome
        except websockets.ConnectionClosed as e:
            await ws.close()
            raise ConnectError(f"{self.url}: closed during the handshake ({e})") from e
        except BaseException:
            await ws.close()
            raise

    async def _join_now(self, ws, welcome, deadline):
        msg_id = next(self._ids)
        args = dict(self._join, **({"rejoin": self.rejoin_token} if self.rejoin_token else {}))
        await ws.send(schema.check("join", args, schema.Room.of(welcome), msg_id))
        reply = await self._read_until(
            ws, lambda m: m.get("type") in ("ack", "error") and m.get("id") == msg_id, deadline)
        if reply["type"] == "error":
            raise command_error(reply.get("code"), reply.get("message", ""), "join")
        self._took_join(reply)
        return await self._read_until(ws, _is_welcome, deadline)

    def _took_join(self, ack):
        self.team, self.rejoin_token = ack.get("team"), ack.get("rejoin")

    def _install(self, ws, welcome):
        self._ws = ws
        self._take_welcome(welcome)
        self._connected.set()

    async def _run(self):
        """Reads the connection; when it drops, connects again (or ends)."""
        while True:
            ws = self._ws
            try:
                async for msg in ws:
                    try:
                        self._take(msg)
                    except Exception:  # a bug here must not stop the reading
                        log.exception("flockd: a message from the server could not be taken")
            except websockets.ConnectionClosed:
                pass
            self._connected.clear()
            code, reason = ws.close_code, ws.close_reason
            self._fail_pending(ConnectionLost(f"the connection closed ({code} {reason}) before "
                                              "the reply; the command may have been applied"))
            if self._closing:
                return
            log.info("flockd: connection to %s closed (%s %s)", self.url, code, reason)
            self._emit(Event("disconnect", code=code, reason=reason))
            if not self._reconnect or code in FINAL_CLOSE_CODES:
                self._end(ConnectionLost(f"the connection closed ({code} {reason})"))
                return
            if not await self._reconnect_loop():
                return

    async def _reconnect_loop(self):
        down_at = time.monotonic()
        for attempt in itertools.count():
            await asyncio.sleep(self._backoff.delay(attempt))
            if self._closing:
                return False
            try:
                ws, welcome = await self._handshake()
            except (ConnectError, *RETRIED_JOIN_ERRORS) as e:
                log.debug("flockd: reconnect attempt %d: %s", attempt + 1, e)
                continue
            except CommandError as e:  # the room will not take us back
                self._end(e)
                return False
            if self._closing:
                await ws.close()
                return False
            self._install(ws, welcome)
            self.reconnects += 1
            self._view_again()
            downtime = time.monotonic() - down_at
            log.info("flockd: reconnected to %s after %.2f s", self.url, downtime)
            self._emit(Event("reconnect", attempts=attempt + 1, downtime=downtime))
            return True

    def _end(self, why):
        """The client is over for good: everything waiting hears why."""
        self._dead = why
        self._ended.set()
        for sub in list(self._subs):
            sub._wake()
        for fut in self._welcome_waiters:
            if not fut.done():
                fut.set_exception(why or ConnectionLost("the client was closed"))
        self._welcome_waiters.clear()

    def _fail_pending(self, exc):
        pending, self._pending = self._pending, {}
        for fut, _ in pending.values():
            if not fut.done():
                fut.set_exception(exc)

    async def close(self):
        """Closes the connection; iterators end, waiting commands raise
        ConnectionLost. Closing twice is harmless."""
        if self._closing:
            return
        self._closing = True
        self._end(None)
        if self._ws is not None:
            await self._ws.close()
        if self._task is not None:
            if not self._connected.is_set():  # between two connections: stop trying
                self._task.cancel()
            done, _ = await asyncio.wait([self._task], timeout=3)
            if not done:
                self._task.cancel()
        self._fail_pending(ConnectionLost("the client was closed"))

    # ---- what the server sends ------------------------------------------------------

    def _take(self, msg):
        if isinstance(msg, bytes):
            self._take_frame(msg)
            return
        try:
            m = json.loads(msg)
        except ValueError:
            return
        kind = m.get("type") if isinstance(m, dict) else None
        if kind in ("ack", "error"):
            if kind == "ack" and isinstance(m.get("tick"), int):
                self.last_ack_tick = m["tick"]
            fut = self._pending.pop(m.get("id"), (None,))[0]
            if fut is not None and not fut.done():
                fut.set_result(m)
        elif kind == "welcome":
            self._take_welcome(m)
        elif kind == "roster":
            self.roster = Roster(m)
            self._emit(Event("roster", message=self.roster))
        elif kind == "availability":
            self.availability = Availability(m)
            self._emit(Event("availability", message=self.availability))
        elif kind == "dilation":
            self.dilation = Dilation(m)
            self._emit(Event("dilation", message=self.dilation))
        elif kind == "squads" and isinstance(m.get("team"), int):
            self._take_squads(Squads(m))
        elif kind == "game" and isinstance(m.get("state"), dict):
            self._take_game(Game(m))
        elif kind == "script":
            self.script_status = ScriptStatus(m)
            self._emit(Event("script", message=self.script_status))

    def _take_squads(self, msg):
        self.squads[msg.team] = msg
        self._squads_waiters = _wake(self._squads_waiters, msg)
        self._emit(Event("squads", message=msg))

    def _take_game(self, msg):
        if isinstance(msg.team, int):
            self.team_games[msg.team] = msg
        else:
            self.room_game = msg
        self._game_waiters = _wake(self._game_waiters, msg)
        self._emit(Event("game", message=msg))

    def _take_welcome(self, m):
        if self.welcome is None or self.welcome.get("room") != m.get("room"):
            # Another room: its squads and its game are still to come.
            self.squads, self.team_games = {}, {}
            self.room_game = self.script_status = self.dilation = None
        self.welcome = Welcome(m)
        self._room = schema.Room.of(m)
        # A new stream starts on a key frame (§11.1, §12.7), its fields this size.
        self._decoder.forget(_field_cells(m))
        self._prev = None
        self._stream += 1
        if "team" in m:
            self.team = m["team"]
        waiters, self._welcome_waiters = self._welcome_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(self.welcome)
        self._emit(Event("welcome", message=self.welcome))

    def _take_frame(self, buf):
        try:
            frame = self._decoder.decode(buf)
        except SnapshotError as e:
            self.refused_frames += 1
            log.info("flockd: frame refused (%s); asking for a key frame", e.code)
            self._ask_keyframe()
            self._emit(Event("refused", error=e))
            return
        snap = Snapshot(frame, self.welcome.tick_hz if self.welcome else 0, self._prev)
        snap._stream = self._stream
        self._prev = self.snapshot = snap
        self.frames += 1
        for sub in list(self._subs):
            sub._push(snap)

    def _ask_keyframe(self):
        now = time.monotonic()
        if self.protocol not in (2, 3) or (self._keyframe_at is not None and
                                  now - self._keyframe_at < KEYFRAME_EVERY_S):
            return
        self._keyframe_at = now
        self.keyframes_requested += 1
        task = asyncio.ensure_future(self.command("keyframe"))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # nothing to do

    # ---- events ------------------------------------------------------------------------

    def on(self, kind, callback):
        """Calls callback(event) on each Event of `kind` ('*': every kind);
        a coroutine function is scheduled. Returns callback."""
        self._handlers[kind].append(callback)
        return callback

    def _emit(self, event):
        for cb in self._handlers[event.kind] + self._handlers["*"]:
            try:
                r = cb(event)
                if inspect.isawaitable(r):
                    asyncio.ensure_future(r)
            except Exception:  # a watcher's bug must not stop the reader
                log.exception("flockd: %s handler failed", event.kind)

    # ---- commands ----------------------------------------------------------------------

    async def _until_connected(self, deadline):
        if self._connected.is_set():
            return
        if self._ended.is_set():
            raise self._dead or ConnectionLost("the client was closed")
        waits = [asyncio.ensure_future(e.wait()) for e in (self._connected, self._ended)]
        try:
            await asyncio.wait(waits, timeout=max(0.0, deadline - time.monotonic()),
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if self._ended.is_set() or not self._connected.is_set():
            if self._ended.is_set():
                raise self._dead or ConnectionLost("the client was closed")
            raise Timeout("not connected: the server did not come back in time")

    async def command(self, cmd, timeout=None, **args):
        """Sends command `cmd` with args (None values left out) and returns
        its Ack; raises the CommandError of a refusal (the library's own,
        before sending, or the server's), Timeout without a reply within
        `timeout` seconds (default: the client's), ConnectionLost."""
        return await self.command_with(cmd, args, timeout)

    async def command_with(self, cmd, args, timeout=None):
        """As command(), with the arguments as a dict (any names, `timeout`
        too)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        args = {k: schema.normalize(v) for k, v in args.items() if v is not None}
        schema.check(cmd, args, self._room)  # refuse at once, even while disconnected
        while True:
            await self._until_connected(deadline)
            try:
                reply = await self._send(cmd, args, deadline, timeout)
                break
            except ConnectionLost:
                if cmd not in RESENT_COMMANDS or self._ended.is_set():
                    raise
                log.info("flockd: %s lost with the connection; sending it again", cmd)
        if reply["type"] == "error":
            raise command_error(reply.get("code"), reply.get("message", ""), cmd)
        ack = Ack(reply, cmd)
        if cmd == "view":
            self._view, self.view_ack = args, ack
        return ack

    def _view_again(self):
        """After a reconnect: the last view acked, in the URL (its reply
        awaited in the background) or, in a joined room, sent again (the
        frames before its ack are the whole room's)."""
        if self._view is None:
            return
        if self._url_view is not None:
            task = asyncio.ensure_future(self._took_url_view())
        else:
            task = asyncio.ensure_future(self.command("view", **self._view))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _send(self, cmd, args, deadline, timeout):
        """Sends one command on the current connection; its reply."""
        msg_id = next(self._ids)
        text = schema.check(cmd, args, self._room, msg_id)
        fut = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (fut, cmd)
        try:
            await self._ws.send(text)
            return await asyncio.wait_for(fut, max(0.0, deadline - time.monotonic()))
        except websockets.ConnectionClosed:
            raise ConnectionLost(f"{cmd}: the connection closed while sending") from None
        except asyncio.TimeoutError:
            raise Timeout(f"{cmd}: no reply within {timeout} s") from None
        finally:
            self._pending.pop(msg_id, None)

    async def join(self, room, role, *, mode=None, name=None, token=None, password=None,
                   rejoin=None, boids=None, width=None, height=None, edges=None, teams=None,
                   units=None, script=None, timeout=None):
        """Moves to `room` with `role` (§5.6) and waits for its welcome; the
        client rejoins it after a reconnect. A room the join creates takes
        mode, boids, width, height, edges, (rts) teams and units and the
        script it runs (§14.1; an existing room's must be the same). Returns
        the Ack (room, role, client; RTS players: team and rejoin)."""
        args = dict(room=room, role=role, mode=mode, name=name, token=token, password=password,
                    rejoin=rejoin, boids=boids, width=width, height=height, edges=edges,
                    teams=teams, units=units, script=script)
        fut = asyncio.get_running_loop().create_future()
        self._welcome_waiters.append(fut)
        try:
            ack = await self.command("join", timeout=timeout, **args)
            await asyncio.wait_for(fut, self.timeout if timeout is None else timeout)
        except BaseException:
            fut.cancel()
            raise
        self._join = {k: v for k, v in args.items() if v is not None and k != "rejoin"}
        self._view = self.view_ack = None  # another world: the whole room until a view
        self._took_join(ack.to_dict())
        return ack

    # ---- squads (§13) -------------------------------------------------------------------

    def squad(self, n, team=None):
        """Squad n's entry in the latest squads message of `team` (default:
        the client's own), or None (no message yet, or the squad has no
        units)."""
        msg = self.squads.get(self.team if team is None else team)
        return msg.entry(n) if msg is not None else None

    async def wait_squads(self, predicate, timeout=30.0, team=None):
        """The first squads message of `team` (default: the client's own;
        the latest one first) for which predicate(message) is true;
        Timeout after `timeout` seconds."""
        team = self.team if team is None else team
        return await _wait(self._squads_waiters, lambda: self.squads.get(team),
                           lambda m: m.team == team and predicate(m), timeout,
                           f"squads message of team {team}")

    # ---- room scripts (§14) -------------------------------------------------------------

    @property
    def room_script(self):
        """The room's script from its welcome (name, hash), or None."""
        return self.welcome.script if self.welcome is not None else None

    @property
    def game_phase(self):
        """The phase of the latest room-wide game state (lobby, countdown,
        playing, ended), or None."""
        return self.room_game.state.phase if self.room_game is not None else None

    async def send_game(self, members, timeout=None):
        """Sends `{"cmd": "game", **members}` to the room's script (any
        names, any JSON; None values left out) and returns its Ack; raises
        Refused with the script's reason, BadArgument in a room without a
        script, TooLarge over 1024 bytes of members."""
        return await self.command_with("game", members, timeout)

    async def wait_game(self, predicate, timeout=30.0, team=None):
        """The first game message (room-wide, or with `team` that team's;
        the latest one first) for which predicate(message) is true;
        Timeout after `timeout` seconds."""
        latest = (lambda: self.room_game) if team is None else (lambda: self.team_games.get(team))
        return await _wait(self._game_waiters, latest, lambda m: m.team == team and predicate(m),
                           timeout, "game message" + ("" if team is None else f" of team {team}"))

    # ---- snapshots ---------------------------------------------------------------------

    def snapshots(self, seconds=None, count=None, timeout=None, fresh=True, maxlen=256):
        """An async iterator of the snapshots from now on, in order. It
        stops after `count` snapshots, or before the first that is
        `seconds` of simulated time (ticks / tick_hz) past the first one.
        `timeout`: seconds to wait for each (Timeout beyond). `fresh`: skip
        snapshots taken before the last command acked (tick below the
        ack's; equal unless paused, §5.5). At most `maxlen` wait unread;
        past that the oldest are dropped and counted (`dropped`). It ends
        when the client is closed, raises ConnectionLost when it ended."""
        return Snapshots(self, seconds, count, timeout, fresh, maxlen)

    async def next_snapshot(self, timeout=None, fresh=True):
        """The next snapshot (taken after the last ack, with `fresh`)."""
        async with self.snapshots(count=1, timeout=timeout, fresh=fresh) as it:
            async for snap in it:
                return snap
        raise ConnectionLost("the client was closed")

    async def wait_for(self, predicate, timeout=30.0, fresh=True):
        """The first snapshot for which predicate(snapshot) is true; Timeout
        after `timeout` seconds, naming the last value it gave."""
        deadline = time.monotonic() + timeout
        last = None
        async with self.snapshots(fresh=fresh) as it:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    snap = await it.next(timeout=left)
                except Timeout:
                    break
                last = predicate(snap)
                if last:
                    return snap
        raise Timeout(f"condition not met within {timeout} s (last: {last!r})")


def _wake(waiters, msg):
    """Settles the (future, predicate) waiters msg satisfies (or whose
    predicate fails: its error is the caller's); the others still wait."""
    left = []
    for w in waiters:
        fut, predicate = w
        if fut.done():
            continue
        try:
            if predicate(msg):
                fut.set_result(msg)
                continue
        except Exception as e:
            fut.set_exception(e)
            continue
        left.append(w)
    return left


async def _wait(waiters, latest, predicate, timeout, what):
    """The latest message (latest()) if predicate takes it, else the first
    one _wake hands on that it takes; Timeout naming `what` and the last."""
    last = latest()
    if last is not None and predicate(last):
        return last
    fut = asyncio.get_running_loop().create_future()
    waiter = (fut, predicate)
    waiters.append(waiter)
    try:
        return await asyncio.wait_for(fut, timeout)
    except asyncio.TimeoutError:
        raise Timeout(f"no {what} met the condition within {timeout} s "
                      f"(last: {latest()!r})") from None
    finally:
        if waiter in waiters:
            waiters.remove(waiter)


def _is_welcome(m):
    return m.get("type") == "welcome"


def _field_cells(welcome):
    """A version 3 welcome's stream.field.cells (1..8), else None."""
    stream = welcome.get("stream")
    field = stream.get("field") if isinstance(stream, dict) else None
    cells = field.get("cells") if isinstance(field, dict) else None
    return cells if isinstance(cells, int) and 1 <= cells <= 8 else None


class Snapshots:
    """An async iterator of a client's snapshots (Client.snapshots); also
    an async context manager that stops it."""

    def __init__(self, client, seconds, count, timeout, fresh, maxlen):
        self._client, self._seconds, self._count, self._timeout = client, seconds, count, timeout
        self._since = client.last_ack_tick if fresh else None
        self._stream = client._stream
        self._queue = collections.deque()
        self._maxlen = maxlen
        self._event = asyncio.Event()
        self._last, self._ticks, self._given, self._done = None, 0, 0, False
        self.dropped = 0
        client._subs.add(self)

    def _push(self, snap):
        if len(self._queue) >= self._maxlen:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(snap)
        self._event.set()

    def _wake(self):
        self._event.set()

    def close(self):
        self._done = True
        self._client._subs.discard(self)

    def __aiter__(self):
        return self

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.close()

    async def __anext__(self):
        return await self.next(self._timeout)

    def _stale(self, snap):
        """Taken before the command acked when the iterator started (§5.5).
        A spectator's delayed frames show no command's effect sooner than
        the delay: they are never stale."""
        if self._since is None or snap.delayed:
            return False
        if snap._stream != self._stream or snap.tick > self._since or \
                (snap.tick == self._since and snap.paused):
            self._since = None
            return False
        return True

    def _window_over(self, snap):
        last, self._last = self._last, snap
        if last is not None and last._stream == snap._stream and snap.tick > last.tick:
            self._ticks += snap.tick - last.tick
        return self._seconds is not None and snap.tick_hz and \
            self._ticks >= self._seconds * snap.tick_hz

    async def next(self, timeout=None):
        """The next snapshot; StopAsyncIteration at the end, Timeout after
        `timeout` seconds without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._done or (self._count is not None and self._given >= self._count):
                self.close()
                raise StopAsyncIteration
            if self._queue:
                snap = self._queue.popleft()
                if self._stale(snap):
                    continue
                if self._window_over(snap):
                    self.close()
                    raise StopAsyncIteration
                self._given += 1
                return snap
            if self._client._ended.is_set():
                self.close()
                if self._client._dead is not None:
                    raise self._client._dead
                raise StopAsyncIteration
            self._event.clear()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise Timeout(f"no snapshot within {timeout} s")
            try:
                await asyncio.wait_for(self._event.wait(), left)
            except asyncio.TimeoutError:
                raise Timeout(f"no snapshot within {timeout} s") from None


# ---- one coroutine per command, from the schema --------------------------------------

def _arg_doc(a):
    if a["type"] in ("int", "number"):
        text = f"{a['name']}: {a['type']} {a['min']}..{a['max']}"
    elif a["type"] == "enum":
        text = f"{a['name']}: one of {', '.join(a['values'])}"
    elif a["type"] == "bool":
        text = f"{a['name']}: True or False"
    elif a["type"] == "rect":
        text = f"{a['name']}: [x, y, w, h]"
    elif a["type"] == "array":
        items = "points [x, y]" if a["items"] == "point" else f"{a['items']}s {a['min']}..{a['max']}"
        text = f"{a['name']}: list of {a['min_items']}..{a['max_items']} {items}"
    else:
        text = f"{a['name']}: string of {a.get('min_len', 0)}..{a['max_len']} bytes"
    if "default" in a:
        text += f", default {a['default']}"
    elif not a.get("required"):
        text += ", optional" + (f" ({a['doc']})" if a.get("doc") else "")
    return text


def command_doc(spec):
    """The docstring of a command's method, from the schema."""
    lines = [spec["summary"], "", f"Who may send it: {schema.SCHEMA['who'][spec['who']]}."]
    if spec["args"] or spec.get("registry"):
        lines += ["", "Arguments (None: left out):"]
        lines += ["    " + _arg_doc(a) for a in spec["args"]]
        if spec.get("registry"):
            lines.append("    NAME=VALUE: parameters of the registry (the welcome's params)")
    if spec.get("open_args"):
        lines += ["", "Arguments: NAME=VALUE, any members and any JSON values for the room's",
                  f"script, at most {schema.OPEN_ARGS_MAX} bytes of them as JSON (send_game",
                  "takes them as a dict)."]
    members = ", ".join(["tick"] + list(spec["ack"]))
    lines += ["", f"Returns the Ack ({members})."]
    if spec["errors"]:
        lines.append(f"Refusals the room may give: {', '.join(spec['errors'])}.")
    return "\n".join(lines)


def command_signature(spec, extra=("timeout",)):
    """The keyword-only signature of a command's method, from the schema."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    for a in spec["args"]:
        params.append(P(a["name"], P.KEYWORD_ONLY,
                        **({} if a.get("required") else {"default": None})))
    params += [P(name, P.KEYWORD_ONLY, default=None) for name in extra]
    if spec.get("registry"):
        params.append(P("params", P.VAR_KEYWORD))
    elif spec.get("open_args"):
        params.append(P("members", P.VAR_KEYWORD))
    return inspect.Signature(params)


def command_method(spec, blocking=False):
    """The method of one command, named, documented and signed from the
    schema: a coroutine, or with `blocking` a plain function."""
    name = spec["name"]
    if blocking:
        def method(self, timeout=None, **args):
            return self.command(name, timeout=timeout, **args)
    else:
        async def method(self, timeout=None, **args):
            return await self.command(name, timeout=timeout, **args)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = command_doc(spec)
    method.__signature__ = command_signature(spec)
    return method


def add_command_methods(cls, blocking=False):
    """One method per command of the schema on cls (join is written by hand)."""
    for spec in schema.SCHEMA["commands"]:
        if spec["name"] != "join":
            setattr(cls, spec["name"], command_method(spec, blocking))


add_command_methods(Client)


def view_query(view):
    """The query of a WebSocket URL that asks for view (§12.4): view=X,Y,W,H
    and px, budget if given. ValueError if a number is missing or not finite."""
    try:
        rect = [float(view[k]) for k in ("x", "y", "w", "h")]
        extra = {k: int(view[k]) for k in ("px", "budget") if view.get(k) is not None}
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"a view wants numbers x, y, w, h (and px, budget): {e}") from None
    unknown = set(view) - {"x", "y", "w", "h", "px", "budget"}
    if unknown or not all(math.isfinite(v) for v in rect):
        raise ValueError(f"not a view: {view}")
    query = "view=" + ",".join(format(v, ".17g") for v in rect)
    return query + "".join(f"&{k}={v}" for k, v in extra.items())


class connect_async:
    """`c = await connect_async(url, ...)` or `async with connect_async(url,
    ...) as c`: a connected Client (its keyword arguments are Client's:
    room, role, mode, token, password, name, boids, protocol (3, 2 or 1),
    insecure, ssl, reconnect, backoff, timeout, connect_timeout, numpy,
    view)."""

    def __init__(self, url, **kwargs):
        self._client = Client(url, **kwargs)

    def __await__(self):
        return self._client.start().__await__()

    async def __aenter__(self):
        return await self._client.start()

    async def __aexit__(self, *exc):
        await self._client.close()


__all__ = ["Backoff", "Client", "Event", "Snapshots", "connect_async"]
