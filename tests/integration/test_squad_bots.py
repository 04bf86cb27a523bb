#!/usr/bin/python3
"""Integration tests: squads, orders and formations (PROTOCOL.md §13) through
the Python library (client/python) against a real flockd.

Usage: test_squad_bots.py FLOCKD_BINARY [TEST_NAME...]

- The library's select, move, patrol, follow, hold, stop and formation get
  the server's acks (the squad and its units), its refusals raise the
  library's errors as they come (an empty selection, another team's unit,
  an id of no boid, a squad with no units), and the team's `squads`
  message says what was ordered; an admin names the team and gets every
  team's squads, another team's player none.
- Two bots of client/examples/squads.py play one rts room: each splits its
  team into three squads (line, wedge, box) by id and orders them about.
  An admin connection watches the room (version 3 frames with ids, every
  team's squads): each bot's squads must end up in the formation ordered,
  at least 80 % of their slots (§13.3, flockd.squads.slot_fit) with one
  of the squad's units within half a separation radius — squad 1 once it
  has arrived, squad 3 (following squad 1) once both have stopped, squad 2
  (patrolling) at some time along its round.
The last line is "N passed, N failed".
"""

import asyncio
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flockd_harness import Flockd, Suite, arg  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
import flockd  # noqa: E402
from flockd.squads import entry_slots, slot_fit  # noqa: E402

FLOCKD = arg(0, "build/server/flockd")
EXAMPLE = ["/usr/bin/python3", os.path.join(ROOT, "client", "examples", "squads.py")]
SUITE = Suite(timeout=240)
test = SUITE.test
FULL = 0.8  # the share of a formation's slots that must be filled
BOT_SECONDS = 30
SQUAD_LINE = re.compile(r"^squad (\d+): (\d+) units, formation (\w+), ids ([\d,]+)$", re.M)
TEAM_LINE = re.compile(r"^team (\d+): (\d+) units$", re.M)


def own_units(snap, team):
    return [(int(snap.ids[i]), float(snap.x[i]), float(snap.y[i]))
            for i in range(snap.count) if int(snap.group[i]) == team]


async def refused(coro, kind):
    try:
        await coro
    except kind as e:
        assert not e.client_side, f"the library refused it, not the server: {e}"
        return e
    raise AssertionError(f"not refused: expected {kind.__name__}")


@test
async def the_library_commands_squads_and_sees_their_message():
    with Flockd(FLOCKD, "--team-units", "40") as d:
        a = await flockd.connect_async(d.url, room="drill", role="player", mode="rts",
                                       protocol=3)
        b = await flockd.connect_async(d.url, room="drill", role="player", mode="rts",
                                       protocol=3)
        admin = await flockd.connect_async(d.url, room="drill", role="admin", protocol=3)
        try:
            snap = await a.wait_for(lambda s: len(own_units(s, a.team)) == 40, timeout=10)
            mine = own_units(snap, a.team)
            ack = await a.select(all=True)
            assert ack.squad == 1 and ack.units == 40, ack
            # Half of them by id into squad 2: squad 1 keeps the rest.
            ids = sorted(u[0] for u in mine)[:20]
            ack = await a.select(ids=ids, squad=2)
            assert (ack.squad, ack.units) == (2, 20), ack
            xs = sorted(u[1] for u in mine)
            # (A margin for the units' flight since the snapshot: a slow build's commands
            # come some ticks later.)
            left = max(0.0, xs[0] - 100)
            ack = await a.select(rect=[left, 0, xs[-1] + 100 - left, a.welcome.world.height],
                                 squad=3)
            assert (ack.squad, ack.units) == (3, 40), f"the rect holds every unit: {ack}"
            ack = await a.select(squads=[3], squad=4)
            assert (ack.squad, ack.units) == (4, 40), ack
            await a.formation(squad=4, shape="wedge", spacing=30)
            w, h = a.welcome.world.width, a.welcome.world.height
            await a.move(squad=4, to=[(w / 2, h / 2)])
            await a.move(squad=4, to=[(w / 2 + 50, h / 2)], queue=True)
            msg = await a.wait_squads(lambda m: (e := m.entry(4)) is not None and
                                      e["do"] == "move" and e.formation == "wedge", timeout=5)
            e = msg.entry(4)
            assert [q["squad"] for q in msg.squads] == [4], f"the others ended: {msg!r}"
            assert e.units == 40 and e.spacing == 30 and 1 <= len(e.to) <= 2, e
            assert len(entry_slots(e)) == 40
            assert a.squad(4)["do"] == "move" and a.squad(1) is None
            # The admin sees the team's squads too; the other player never.
            seen = await admin.wait_squads(lambda m: m.entry(4) is not None, timeout=5,
                                           team=a.team)
            assert seen.team == a.team
            assert a.team not in b.squads, "another team's squads reached a player"
            await a.hold(squad=4)
            await a.stop(squad=4)
            theirs = own_units(await b.wait_for(lambda s: own_units(s, b.team), timeout=10),
                               b.team)
            await a.follow(squad=4, unit=theirs[0][0])  # a unit of any team
            # Refusals come from the server as they are.
            await refused(a.select(ids=[theirs[0][0]]), flockd.Forbidden)
            await refused(a.select(ids=[10 ** 6]), flockd.NotFound)
            await refused(a.select(rect=[0, 0, 1, 1]), flockd.BadArgument)
            await refused(a.stop(squad=9), flockd.NotFound)
            await refused(a.formation(squad=9, shape="line"), flockd.NotFound)
            # An admin names the team.
            ack = await admin.select(all=True, squad=5, team=b.team)
            assert (ack.squad, ack.units) == (5, 40), ack
            await b.wait_squads(lambda m: m.entry(5) is not None, timeout=5)
        finally:
            for c in (a, b, admin):
                await c.close()


async def run_bot(url, room, name):
    p = await asyncio.create_subprocess_exec(
        *EXAMPLE, "--url", url, "--room", room, "--name", name, "--seconds", str(BOT_SECONDS),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(p.communicate(), BOT_SECONDS + 60)
    return p.returncode, out.decode(), err.decode()


class Watch:
    """What an admin connection saw of each bot's squads: per (team,
    squad), the best slot fit at all, and since the squad (and the one it
    follows) last had no waypoint ahead."""

    def __init__(self):
        self.best, self.settled = {}, {}

    def look(self, admin, teams, members, tolerance):
        snap = admin.snapshot
        if snap is None or snap.ids is None:
            return
        where = {int(snap.ids[i]): (float(snap.x[i]), float(snap.y[i]))
                 for i in range(snap.count)}
        wrap = (snap.width, snap.height) if snap.wrap else None
        for team in teams:
            msg = admin.squads.get(team)
            if msg is None:
                continue
            for n, ids in members.get(team, {}).items():
                e = msg.entry(n)
                if e is None or e.formation == "none":
                    continue
                fit = slot_fit(entry_slots(e), [where[i] for i in ids if i in where], tolerance,
                               wrap)
                key = (team, n)
                self.best[key] = max(self.best.get(key, 0.0), fit)
                lead = msg.entry(1)
                still = not e.get("to") and (e["do"] != "follow" or (lead and not lead.get("to")))
                if still and e["do"] in ("move", "follow", "stop", "none", "hold"):
                    self.settled[key] = max(self.settled.get(key, 0.0), fit)


@test
async def two_bots_put_their_squads_in_formation():
    with Flockd(FLOCKD, "--team-units", "30") as d:
        room = "war"
        admin = await flockd.connect_async(d.url, room=room, role="admin", mode="rts",
                                           protocol=3)
        try:
            bots = [asyncio.ensure_future(run_bot(d.url, room, f"bot{k}")) for k in (1, 2)]
            sep = admin.welcome.values.separation_radius
            watch, members, teams = Watch(), {}, set()
            # The bots' squads and ids come from their output once it ends;
            # meanwhile the admin's frames and squads messages are kept.
            frames = []
            t_end = time.monotonic() + BOT_SECONDS + 50
            while not all(b.done() for b in bots) and time.monotonic() < t_end:
                await asyncio.sleep(0.25)
                if admin.snapshot is not None:
                    frames.append((admin.snapshot, {t: m for t, m in admin.squads.items()}))
            results = [await b for b in bots]
            for rc, out, err in results:
                assert rc == 0, f"a bot failed ({rc}):\n{out}\n{err}"
                team = int(TEAM_LINE.search(out).group(1))
                teams.add(team)
                found = SQUAD_LINE.findall(out)
                assert [int(s[0]) for s in found] == [1, 2, 3], out
                assert [s[2] for s in found] == ["line", "wedge", "box"], out
                members[team] = {int(n): [int(i) for i in ids.split(",")]
                                 for n, _, _, ids in found}
                assert sum(len(v) for v in members[team].values()) == 30, members[team]
                assert "squads tick" in out, f"no squads message printed:\n{out}"
            assert len(teams) == 2, f"two teams: {teams}"
            for snap, squads in frames:
                view = _Frozen(snap, squads)
                watch.look(view, teams, members, 0.5 * sep)
            for team in teams:
                settled = {n: round(watch.settled.get((team, n), 0.0), 2) for n in (1, 3)}
                best = round(watch.best.get((team, 2), 0.0), 2)
                print(f"  team {team}: settled fit {settled}, patrol's best {best}", flush=True)
                for n, fit in settled.items():
                    assert fit >= FULL, f"team {team} squad {n} not in formation: {fit}"
                assert best >= FULL, f"team {team}'s patrol never in formation: {best}"
        finally:
            await admin.close()


class _Frozen:
    """A snapshot and the squads messages of its time, as Watch reads a client."""

    def __init__(self, snapshot, squads):
        self.snapshot, self.squads = snapshot, squads


if __name__ == "__main__":
    SUITE.main(skip_args=1)
