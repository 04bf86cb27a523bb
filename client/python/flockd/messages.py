"""The server's JSON messages as objects with attributes (PROTOCOL.md §6).

`Message` wraps one JSON object: its members are attributes (`welcome.world
.width`, `ack.stats.flock.local_polarization`), nested objects are Messages
too, `msg["name"]` and `msg.get("name")` work as on the dict, and
`to_dict()` gives the JSON object back. A member the schema lists for the
message but the server left out (an optional one such as `welcome.team`)
reads as None; a name the schema does not know raises AttributeError.
Members the server added after this library was written are attributes as
well (clients MUST ignore what they do not know, §2, but may read it).
"""

from .schema import COMMANDS, MESSAGES


class Message:
    """One JSON object from the server; see the module's docstring."""

    kind = None

    def __init__(self, data, spec=None):
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_spec", spec if spec is not None else
                           MESSAGES.get(self.kind, {}))

    def __getattr__(self, name):
        data, spec = self._data, self._spec
        members = spec.get("members", {})
        if name in data:
            return _wrap(data[name], members.get(name))
        if name in members:
            return None
        raise AttributeError(f"{self.kind or 'message'} has no member '{name}'")

    def __setattr__(self, name, value):
        raise AttributeError("messages from the server are read-only")

    def __getitem__(self, name):
        return self._data[name]

    def __contains__(self, name):
        return name in self._data

    def get(self, name, default=None):
        return self._data.get(name, default)

    def to_dict(self):
        """The JSON object itself (do not change it)."""
        return self._data

    def __eq__(self, other):
        if isinstance(other, Message):
            return self._data == other._data
        return self._data == other

    __hash__ = None

    def __repr__(self):
        return f"{type(self).__name__}({self._data!r})"

    def __dir__(self):
        return sorted(set(self._data) | set(self._spec.get("members", {})))


def _wrap(value, spec):
    spec = spec or {}
    cls = Message
    if "message" in spec:
        cls = _CLASSES.get(spec["message"], Message)
        spec = MESSAGES[spec["message"]]
    if isinstance(value, dict):
        return cls(value, spec)
    if isinstance(value, list):
        items = spec.get("items")
        return [_wrap(v, items) for v in value]
    return value


class Welcome(Message):
    """The room's welcome (§6.1): protocol, room, mode, role, team, tick,
    tick_hz, snapshot_hz, world (width, height, edges, capacity,
    max_obstacles), limits, params (the registry), values, groups, flock,
    dilation (None unless the room's clock runs slow, §6.7)."""

    kind = "welcome"

    @property
    def script(self):
        """The room's script (§14.1): name and hash, or None (no script)."""
        return _wrap(self._data.get("script"), None)


class Roster(Message):
    """Who plays in the room (§6.4): room, mode, viewers, players (client,
    name, role, team, connected), more."""

    kind = "roster"


class Stats(Message):
    """The room's figures (§6.5): boids, paused, tick_ms_mean, tick_ms_p99,
    late_ms_p99, dilation and snapshot_hz (§6.7: 1 and the welcome's rate
    unless the room sheds load), flock (the measures, or None)."""

    kind = "stats"


class Availability(Message):
    """A relayed room became unreachable or is back (§6.6)."""

    kind = "availability"


class Dilation(Message):
    """The room's clock runs slow, or keeps time again (§6.7): room,
    factor (0 < factor <= 1; 1: it keeps its tick rate again), tick_hz and
    snapshot_hz (the rates now)."""

    kind = "dilation"


class Ack(Message):
    """A command's ack (§6.2): `tick`, the tick it was applied at, and the
    command's own members (obstacle, count, until, stats, room, role,
    client, team, rejoin, hash, per command)."""

    kind = "ack"

    def __init__(self, data, command):
        spec = {"members": dict(MESSAGES["ack"]["members"])}
        spec["members"].update(COMMANDS.get(command, {}).get("ack", {}))
        super().__init__(data, spec)
        object.__setattr__(self, "command", command)


class Squads(Message):
    """A team's squads (§13.5): tick, team, and squads, one entry per squad
    with units: squad, units, do (none, move, patrol, follow, hold, stop),
    to (the waypoints ahead), squad_of or unit (follow), formation,
    spacing, anchor, facing. `entry(n)` is squad n's entry, or None;
    flockd.squads.entry_slots(entry) places its formation's slots."""

    kind = "squads"

    def entry(self, squad):
        for e in self._data.get("squads", ()):
            if e.get("squad") == squad:
                return Message(e)
        return None


# The keys of a game state every client may show without knowing the game
# (§14.4): absent, they read as None. A game's own keys are attributes too.
GAME_STATE_KEYS = ("phase", "round", "time_left", "ready", "actions", "winner", "results",
                   "message")


class Game(Message):
    """What a room's script published (§14.4): tick, team (None: the
    room-wide state; a number: that team's, to its player and admins) and
    state, whose conventional keys (GAME_STATE_KEYS: phase, round,
    time_left, ready, actions, winner, results, message) read as None when
    the script left them out."""

    kind = "game"

    def __init__(self, data):
        super().__init__(data, {"members": {"tick": {}, "team": {}, "state": {}}})

    @property
    def state(self):
        return Message(self._data.get("state") or {},
                       {"members": {k: {} for k in GAME_STATE_KEYS}})


class ScriptStatus(Message):
    """The room's script to admins (§14.5): room, name, hash, status
    (running, reloaded, disabled) and reason (why it was disabled, or why a
    reload failed), None when absent."""

    kind = "script"

    def __init__(self, data):
        super().__init__(data, {"members": {k: {} for k in ("room", "name", "hash", "status",
                                                             "reason")}})


_CLASSES = {"welcome": Welcome, "roster": Roster, "stats": Stats, "availability": Availability,
            "dilation": Dilation,
            "squads": Squads}
