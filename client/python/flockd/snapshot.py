"""A room's state at one tick, in world units, as a script uses it.

A Snapshot is made from a decoded Frame (decode.py) and the one before it
on the same connection. Its per-boid arrays are numpy arrays when numpy is
installed (float64, except `group`: uint8), lists otherwise:

- `x`, `y`: positions, world units, the centre of each quantum (§4.4);
- `heading`: direction of flight, radians in [0, 2 pi);
- `group`: each boid's group;
- `vx`, `vy`: velocities in units per second, ESTIMATED from this snapshot
  and the previous one of the same connection: displacement over (tick -
  previous tick) / tick_hz, the shorter way around on a wrapping world, of
  the same boid (version 3: the same id; versions 1 and 2: the same index
  within an epoch, the same boids in the same order). A paused room's
  snapshots repeat a tick: they keep the last estimate. NaN where unknown:
  the first snapshot of a connection or of a room after a join, a boid the
  previous snapshot did not hold (version 3), every boid of a new epoch (a
  spawn, a despawn or a reset renumbered them; versions 1 and 2).
  Positions are quantized to 1/65536 of the world, so at 20 snapshots a
  second an estimate is within about 0.5 units/s on a 1600-unit world;
- `ids`: each boid's id (version 3, §12.2), kept for its life in the room;
  None in versions 1 and 2, which do not carry them.

A version 3 snapshot also says what it holds (PROTOCOL.md §12): `fogged`
(a team's view: enemies out of sight left out), `delayed` (a spectator's:
the room `delay_s` ago), `shift`, `sample`, `rect` (the super-tiles:
column, row, columns, rows), `room_boids` (in the whole room), `parts`
(decode_v3.Part per super-tile: which slice of the arrays it holds) and
`field`: at a sample above 0, one decode_v3.Field per part (boids per cell
of every sample, their mean velocity), else None.

Obstacles are `Obstacle(id, x, y, r)`, targets `Target(group, x, y)`.
"""

import math
from collections import namedtuple

from .decode import np

Obstacle = namedtuple("Obstacle", "id x y r")
Target = namedtuple("Target", "group x y")


class Snapshot:
    """One state of the room; see the module's docstring. Also: tick, time
    (the server's clock when it was encoded, seconds since the Unix epoch),
    sim_time (tick / tick_hz, simulated seconds since the room's last
    reset), epoch, paused, wrap, width, height, count, version (1, 2 or 3),
    kind ('key' or 'delta'; 'view' in version 3), seq (versions 2 and 3),
    the version 3 members above and frame (the decoded Frame: quantized qx,
    qy, heading bytes)."""

    def __init__(self, frame, tick_hz, previous=None):
        self.frame = frame
        self.tick, self.epoch = frame.tick, frame.epoch
        self.server_time_us = frame.server_time_us
        self.time = frame.server_time_us / 1e6
        self.tick_hz = tick_hz
        self.sim_time = frame.tick / tick_hz if tick_hz else math.nan
        self.paused, self.wrap = frame.paused, frame.wrap
        self.width, self.height = frame.width, frame.height
        self.version, self.kind = frame.version, frame.kind
        self.seq = getattr(frame, "seq", None)
        self.obstacles = [Obstacle(o["id"], o["x"], o["y"], o["r"]) for o in frame.obstacles]
        self.targets = [Target(t["group"], t["x"], t["y"]) for t in frame.targets]
        self.ids = getattr(frame, "ids", None)
        self.group = frame.group
        v3 = frame.version == 3
        self.fogged = frame.fogged if v3 else False
        self.delayed = frame.delayed if v3 else False
        self.shift, self.sample = (frame.shift, frame.sample) if v3 else (0, 0)
        self.rect = frame.rect if v3 else None
        self.room_boids = frame.room_boids if v3 else len(frame.group)
        self.parts = frame.parts if v3 else None
        self.field = [p.field for p in frame.parts if p.field is not None] \
            if v3 and frame.sample else None
        if np is not None and isinstance(frame.qx, np.ndarray):
            self._arrays_np(frame)
        else:
            self._arrays_py(frame)
        self._estimate(previous)

    @property
    def count(self):
        return len(self.group)

    def __len__(self):
        return len(self.group)

    def __repr__(self):
        return (f"<Snapshot tick {self.tick} epoch {self.epoch}: {self.count} boids, "
                f"{self.width:g} x {self.height:g}{', paused' if self.paused else ''}>")

    def _arrays_np(self, f):
        # (q + 0.5) * S / 65536 in that order: the binary64 values of §4.4.
        self.x = (f.qx + 0.5) * f.width / 65536
        self.y = (f.qy + 0.5) * f.height / 65536
        self.heading = f.heading * math.pi / 128

    def _arrays_py(self, f):
        w, h = f.width, f.height
        self.x = [(q + 0.5) * w / 65536 for q in f.qx]
        self.y = [(q + 0.5) * h / 65536 for q in f.qy]
        self.heading = [q * math.pi / 128 for q in f.heading]

    def _estimate(self, prev):
        if self.ids is not None:
            self._estimate_by_id(prev)
            return
        same = (prev is not None and prev.epoch == self.epoch and prev.count == self.count
                and prev.width == self.width and prev.height == self.height
                and prev.ids is None)
        if same and prev.tick == self.tick:
            self.vx, self.vy = prev.vx, prev.vy
            return
        if not same or prev.tick > self.tick or not self.tick_hz:
            n = self.count
            if isinstance(self.x, list):
                self.vx, self.vy = [math.nan] * n, [math.nan] * n
            else:
                self.vx, self.vy = np.full(n, np.nan), np.full(n, np.nan)
            return
        dt = (self.tick - prev.tick) / self.tick_hz
        self.vx = self._rate(self.x, prev.x, self.width, dt)
        self.vy = self._rate(self.y, prev.y, self.height, dt)

    def _estimate_by_id(self, prev):
        """Version 3: each boid against the same id in prev."""
        n, lists = self.count, isinstance(self.x, list)
        nan = [math.nan] * n if lists else np.full(n, np.nan)
        if prev is None or prev.ids is None or (prev.width, prev.height) != (
                self.width, self.height) or prev.tick > self.tick or not self.tick_hz:
            self.vx, self.vy = nan, list(nan) if lists else nan.copy()
            return
        same_tick = prev.tick == self.tick
        dt = (self.tick - prev.tick) / self.tick_hz
        if lists:
            where = {i: k for k, i in enumerate(prev.ids)}
            self.vx, self.vy = list(nan), list(nan)
            for k, i in enumerate(self.ids):
                j = where.get(i)
                if j is None:
                    continue
                if same_tick:
                    self.vx[k], self.vy[k] = prev.vx[j], prev.vy[j]
                else:
                    self.vx[k] = self._rate([self.x[k]], [prev.x[j]], self.width, dt)[0]
                    self.vy[k] = self._rate([self.y[k]], [prev.y[j]], self.height, dt)[0]
            return
        order = np.argsort(prev.ids, kind="stable")
        sorted_ids = prev.ids[order]
        at = np.minimum(np.searchsorted(sorted_ids, self.ids), max(len(order) - 1, 0))
        hit = sorted_ids[at] == self.ids if len(order) else np.zeros(n, dtype=bool)
        j = order[at[hit]]
        self.vx, self.vy = nan, nan.copy()
        if same_tick:
            self.vx[hit], self.vy[hit] = prev.vx[j], prev.vy[j]
        else:
            self.vx[hit] = self._rate(self.x[hit], prev.x[j], self.width, dt)
            self.vy[hit] = self._rate(self.y[hit], prev.y[j], self.height, dt)

    def _rate(self, now, before, size, dt):
        if isinstance(now, list):
            out = []
            for a, b in zip(now, before):
                d = a - b
                if self.wrap:
                    d -= size * round(d / size)
                out.append(d / dt)
            return out
        d = now - before
        if self.wrap:
            d -= size * np.round(d / size)
        return d / dt

    # ---- helpers for scripts -------------------------------------------------------

    def mask(self, group):
        """Which boids belong to `group` (numpy: a bool array; else a list)."""
        if isinstance(self.x, list):
            return [g == group for g in self.group]
        return self.group == group

    def _select(self, values, group):
        """The values of the boids of `group` (all of them for None)."""
        if group is None:
            return values
        if isinstance(values, list):
            return [v for v, g in zip(values, self.group) if g == group]
        return values[self.group == group]

    def polarization(self, group=None):
        """|mean unit heading| of the boids (of `group`), 0..1: 1 when all
        fly one way (the flock measure global_polarization of §6.5). NaN
        when there are no such boids."""
        hs = self._select(self.heading, group)
        if len(hs) == 0:
            return math.nan
        if isinstance(hs, list):
            c, s = sum(map(math.cos, hs)) / len(hs), sum(map(math.sin, hs)) / len(hs)
            return math.hypot(c, s)
        return float(np.hypot(np.cos(hs).mean(), np.sin(hs).mean()))

    def centroid(self, group=None):
        """(x, y) of the boids' (of `group`) centre, or None without boids;
        on a wrapping world the circular mean of each axis."""
        xs, ys = self._select(self.x, group), self._select(self.y, group)
        if len(xs) == 0:
            return None
        return _axis_mean(xs, self.width, self.wrap), _axis_mean(ys, self.height, self.wrap)

    def distance(self, a, b):
        """Distance between points a and b, the shorter way around on a
        wrapping world."""
        dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
        if self.wrap:
            dx, dy = min(dx, self.width - dx), min(dy, self.height - dy)
        return math.hypot(dx, dy)


def _axis_mean(values, size, wrap):
    if isinstance(values, list):
        if not wrap:
            return sum(values) / len(values)
        sx = sum(math.cos(2 * math.pi * v / size) for v in values)
        sy = sum(math.sin(2 * math.pi * v / size) for v in values)
    else:
        if not wrap:
            return float(values.mean())
        a = 2 * math.pi * values / size
        sx, sy = float(np.cos(a).sum()), float(np.sin(a).sum())
    return (math.atan2(sy, sx) / (2 * math.pi) * size) % size
