#!/usr/bin/python3
"""Play an rts room with squads and formations (PROTOCOL.md §13).

An example of the flockd Python library (client/python): it joins an rts
room as a player (run it twice for two teams), reads its team's units and
their ids from the version 3 frames, splits them across the line towards
the world's centre (where the other teams' bases lie across) into
--squads squads by id, gives each a formation (--shapes) and then orders:
squad 1 moves towards the centre, squad 2 patrols across the team's front,
squad 3 (if any) follows squad 1. It prints each squad it made with its
ids, every `squads` message of its team, and once a second how full each
formation is (the share of its slots with one of its units within half a
separation radius, flockd.squads.slot_fit). After --seconds it stops its
squads and leaves. Exit status: 0 done, 1 failed (a refusal, the
connection lost for good), 2 bad arguments, 3 cannot connect.

    /usr/bin/python3 client/examples/squads.py --url ws://127.0.0.1:8080/ws --room war --seconds 60

Lines it prints (a test reads them):

    team 2: 30 units
    squad 1: 10 units, formation line, ids 1,2,3,...
    squads tick 812: #1 move line 10 units [812.0, 430.5] to 1 | #2 patrol ...
    fit tick 830: #1 0.90 #2 0.70 #3 0.80
"""

import argparse
import math
import os
import sys
import threading
import time

try:
    import flockd
except ImportError:  # run from the source tree, not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flockd

from flockd.squads import entry_slots, slot_fit

_printing = threading.Lock()


def say(line):
    """Prints one whole line: the client's events (its `squads` messages)
    come on the client's own thread, and print() writes a line and its end
    apart."""
    with _printing:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def team_units(snap, team):
    """[(id, x, y)] of the team's units in a version 3 snapshot."""
    return [(int(snap.ids[i]), float(snap.x[i]), float(snap.y[i]))
            for i in range(snap.count) if int(snap.group[i]) == team]


def split(units, k, towards):
    """The units cut into k squads across the direction `towards` (a unit
    vector): sorted by their offset along its normal, in k runs of ids."""
    nx, ny = -towards[1], towards[0]
    ordered = sorted(units, key=lambda u: u[1] * nx + u[2] * ny)
    size = math.ceil(len(ordered) / k)
    return [[u[0] for u in ordered[i * size:(i + 1) * size]] for i in range(k)
            if ordered[i * size:(i + 1) * size]]


def clamp(p, w, h, margin=40):
    return [min(w - margin, max(margin, p[0])), min(h - margin, max(margin, p[1]))]


def squads_line(msg):
    parts = []
    for e in msg.squads:
        ahead = len(e.get("to") or [])
        anchor = e.get("anchor") or [math.nan, math.nan]
        parts.append(f"#{e.squad} {e['do']} {e.formation} {e.units} units "
                     f"[{anchor[0]:.1f}, {anchor[1]:.1f}] to {ahead}")
    return f"squads tick {msg.tick}: " + (" | ".join(parts) or "none")


def fits(c, members, tolerance):
    """{squad: slot fit} of the squads with a formation, from the newest frame."""
    snap, out = c.snapshot, {}
    if snap is None or snap.ids is None:
        return out
    where = {int(snap.ids[i]): (float(snap.x[i]), float(snap.y[i])) for i in range(snap.count)}
    wrap = (snap.width, snap.height) if snap.wrap else None
    for n, ids in members.items():
        e = c.squad(n)
        if e is None or e.formation == "none":
            continue
        points = [where[i] for i in ids if i in where]
        out[n] = slot_fit(entry_slots(e), points, tolerance, wrap)
    return out


def make_squads(c, opt):
    """Splits the team into squads by id; returns {squad: ids}."""
    team, world = c.team, c.welcome.world
    snap = c.wait_for(lambda s: s.ids is not None and team_units(s, team), timeout=10)
    units = team_units(snap, team)
    say(f"team {team}: {len(units)} units")
    cx = sum(u[1] for u in units) / len(units)
    cy = sum(u[2] for u in units) / len(units)
    dx, dy = world.width / 2 - cx, world.height / 2 - cy
    norm = math.hypot(dx, dy) or 1.0
    towards = (dx / norm, dy / norm)
    members = {}
    for n, ids in enumerate(split(units, opt.squads, towards), start=1):
        for at in range(0, len(ids), 256):  # at most 256 ids a select
            ack = c.select(ids=ids[at:at + 256], squad=n)
        shape = opt.shapes[(n - 1) % len(opt.shapes)]
        c.formation(squad=n, shape=shape, spacing=opt.spacing)
        members[n] = ids
        say(f"squad {n}: {ack.units} units, formation {shape}, ids "
            f"{','.join(map(str, ids))}")
    return members, (cx, cy), towards, norm


def give_orders(c, opt, base, towards, norm):
    w, h = c.welcome.world.width, c.welcome.world.height
    reach = min(opt.advance * norm, norm)
    goal = clamp([base[0] + towards[0] * reach, base[1] + towards[1] * reach], w, h)
    c.move(squad=1, to=[goal])
    say(f"squad 1: move to [{goal[0]:.0f}, {goal[1]:.0f}]")
    if opt.squads >= 2:
        side = (-towards[1] * 150, towards[0] * 150)
        front = [base[0] + towards[0] * reach * 0.6, base[1] + towards[1] * reach * 0.6]
        a = clamp([front[0] + side[0], front[1] + side[1]], w, h)
        b = clamp([front[0] - side[0], front[1] - side[1]], w, h)
        c.patrol(squad=2, to=[a, b])
        say(f"squad 2: patrol [{a[0]:.0f}, {a[1]:.0f}] [{b[0]:.0f}, {b[1]:.0f}]")
    if opt.squads >= 3:
        c.follow(squad=3, squad_of=1)
        say("squad 3: follow squad 1")


def play(c, opt):
    if c.welcome.mode != "rts" or c.team is None:
        raise flockd.FlockdError(f"room {c.welcome.room} is not an rts room with a team for us")
    def show(event):
        if event.message.team == c.team:
            say(squads_line(event.message))
    c.on("squads", show)
    members, base, towards, norm = make_squads(c, opt)
    give_orders(c, opt, base, towards, norm)
    sep = c.welcome.values.separation_radius
    sep = (c.welcome.groups or {}).get(str(c.team), {}).get("separation_radius", sep)
    end = time.monotonic() + opt.seconds
    while time.monotonic() < end:
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        f = fits(c, members, 0.5 * sep)
        tick = c.snapshot.tick if c.snapshot else -1
        say(f"fit tick {tick}: " + " ".join(f"#{n} {v:.2f}" for n, v in sorted(f.items())))
    for n in members:
        c.stop(squad=n)


def main(opt):
    try:
        c = flockd.connect(opt.url, room=opt.room, role="player", mode="rts", name=opt.name,
                           protocol=3, insecure=opt.insecure, connect_timeout=10)
    except flockd.ConnectError as e:
        print(f"squads.py: {e}", file=sys.stderr)
        return 3
    except flockd.CommandError as e:
        print(f"squads.py: join refused: {e}", file=sys.stderr)
        return 1
    with c:
        try:
            play(c, opt)
            return 0
        except flockd.FlockdError as e:
            print(f"squads.py: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("squads.py: interrupted", file=sys.stderr)
            return 130


def parse_args():
    p = argparse.ArgumentParser(description="Play an rts room with squads and formations.")
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws",
                   help="flockd WebSocket endpoint, ws:// or wss://")
    p.add_argument("--insecure", action="store_true",
                   help="wss://: accept a certificate that does not verify (self-signed)")
    p.add_argument("--room", default="squads", help="the rts room to join (made if missing)")
    p.add_argument("--name", default="squads.py", help="the name the room's roster shows")
    p.add_argument("--squads", type=int, default=3, help="squads to make, 1..3 (default 3)")
    p.add_argument("--shapes", default="line,wedge,box",
                   help="formations of squads 1, 2, 3 (line, column, wedge, box, none)")
    p.add_argument("--spacing", type=float, default=None,
                   help="slot spacing, 1..200 (default: the server's, 1.25 x separation_radius)")
    p.add_argument("--advance", type=float, default=0.4,
                   help="how far squad 1 moves towards the centre, 0..1 of the way (default 0.4)")
    p.add_argument("--seconds", type=float, default=60, help="seconds to play (default 60)")
    opt = p.parse_args()
    opt.shapes = opt.shapes.split(",")
    if not 1 <= opt.squads <= 3 or not 0 < opt.advance <= 1 or opt.seconds <= 0 or \
            any(s not in flockd.squads.SHAPES for s in opt.shapes):
        p.error("need --squads 1..3, --advance in (0, 1], --seconds > 0 and known --shapes")
    return opt


if __name__ == "__main__":
    sys.exit(main(parse_args()))
