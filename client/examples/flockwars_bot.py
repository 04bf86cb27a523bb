#!/usr/bin/python3
"""Play the flockwars sample game (server/scripts/flockwars.lua, PROTOCOL.md §14).

An example of the flockd Python library (client/python): it joins an rts
room that runs the script flockwars as a player (the join creates the room
if it is missing, with --teams and --units), sends the action "ready" in
the lobby and, once the phase is "playing", plays with the squad commands
of §13: its units (read from its version 3 frames) go into squads by id;
squad 1 stays home (`stop`: it stays and pursues what comes near), the
others, in a box, are sent every --retarget seconds at the enemy's largest
cluster it sees (the fog shows enemies within its units' sight; none in
sight: the world's centre, which the bases face). Units it captures join
the attack. It prints each phase change, the units per team every
--every seconds (the script's `units`, a list by team) and the winner.
With --until-end it leaves once the match ended; else it asks for a
rematch and plays again, until --seconds (0: until interrupted).
Run it twice (or with a human in the viewer) for two teams.

    /usr/bin/python3 client/examples/flockwars_bot.py --room w1 --teams 2 --until-end &
    /usr/bin/python3 client/examples/flockwars_bot.py --room w1 --until-end

--units N: a room it creates gets N units per team in the join and, since
the sample spawns its own count (200) unless an admin sets it, the bot
also sends {"action":"units","n":N} in the lobby from an admin connection
(--token, or loopback to a flockd without an admin token); --time-limit S
sends {"action":"time_limit","seconds":S} the same way. Refused, it goes
on.

Exit status: 0 done (the match ended, with --until-end; or --seconds
passed), 1 failed (a refusal, the connection lost for good), 2 bad
arguments, 3 cannot connect.

Lines it prints (a test reads them):

    team 2 in room w1 (script flockwars 9b9114032e7b01a1)
    phase lobby
    phase playing
    squads: home 1 (66 units), attack 2, 3 (134 units)
    units tick 1200: team 1 180, team 2 220
    winner: team 2
"""

import argparse
import math
import os
import sys
import time

try:
    import flockd
except ImportError:  # run from the source tree, not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flockd

SELECT_MAX = 256  # ids one select may name (§13.1)
CELL = 80.0  # world units of the grid the enemy's clusters are counted on


def units_of(snap, keep):
    """[(id, x, y, group)] of the snapshot's boids whose group keep() takes."""
    return [(int(snap.ids[i]), float(snap.x[i]), float(snap.y[i]), int(snap.group[i]))
            for i in range(snap.count) if keep(int(snap.group[i]))]


def largest_cluster(enemies):
    """The centre of the densest 3 x 3 block of CELL-sized cells of
    enemy units [(id, x, y, group)], or None without any."""
    cells = {}
    for _, x, y, _ in enemies:
        cells.setdefault((int(x // CELL), int(y // CELL)), []).append((x, y))
    best, most = None, 0
    for cx, cy in cells:
        block = [p for dx in (-1, 0, 1) for dy in (-1, 0, 1) for p in cells.get((cx + dx, cy + dy), ())]
        if len(block) > most:
            best, most = block, len(block)
    if not best:
        return None
    return [sum(p[0] for p in best) / len(best), sum(p[1] for p in best) / len(best)]


def units_line(state, tick):
    """'units tick T: team 1 180, team 2 220' from the script's units (a
    list by team - 1, or an object by team)."""
    units = state.get("units") or {}
    pairs = enumerate(units, 1) if isinstance(units, list) else \
        sorted((int(k), v) for k, v in units.items())
    return f"units tick {tick}: " + ", ".join(f"team {t} {n}" for t, n in pairs)


def winner_line(state):
    w = state.winner
    if isinstance(w, int):
        return f"winner: team {w}"
    return f"winner: {w}" if w else "winner: none"


class Bot:
    """One player of flockwars: its squads and what they were told."""

    def __init__(self, c, opt):
        self.c, self.opt = c, opt
        self.members = {}  # squad -> ids put into it
        self.known = set()  # every id of ours put into a squad
        self.next_target = self.next_units = 0.0

    def select(self, ids, squad):
        for at in range(0, len(ids), SELECT_MAX):
            part = ids[at:at + SELECT_MAX]
            try:
                self.c.select(ids=part, squad=squad)
            except (flockd.NotFound, flockd.Forbidden) as e:  # captured or gone since the frame
                print(f"squad {squad}: {e.message}; {len(part)} units left as they are",
                      flush=True)
        self.members.setdefault(squad, []).extend(ids)
        self.known.update(ids)

    def ours(self):
        snap = self.c.wait_for(lambda s: s.ids is not None and
                               any(int(g) == self.c.team for g in s.group), timeout=15)
        return units_of(snap, lambda g: g == self.c.team)

    def make_squads(self):
        """Squad 1 home (--home of the units, by id), the others to attack."""
        self.members, self.known = {}, set()
        ids = sorted(u[0] for u in self.ours())
        home = ids[:max(1, int(len(ids) * self.opt.home))]
        self.select(home, 1)
        self.c.stop(squad=1)
        rest = ids[len(home):]
        k = self.opt.attackers
        size = math.ceil(len(rest) / k) if rest else 0
        attack = []
        for n in range(2, 2 + k):
            part = rest[(n - 2) * size:(n - 1) * size]
            if part:
                self.select(part, n)
                self.c.formation(squad=n, shape="box")
                attack.append(n)
        print(f"squads: home 1 ({len(home)} units), attack "
              f"{', '.join(map(str, attack))} ({len(rest)} units)", flush=True)
        self.next_target = 0.0

    def attackers(self):
        return [n for n in self.members if n != 1 and self.c.squad(n) is not None]

    def play_tick(self):
        """Every --retarget seconds: captured units into the attack, and the
        attack sent at the enemy's largest cluster (or the centre)."""
        now = time.monotonic()
        if now < self.next_target or self.c.snapshot is None or self.c.snapshot.ids is None:
            return
        self.next_target = now + self.opt.retarget
        snap, team = self.c.snapshot, self.c.team
        new = sorted(u[0] for u in units_of(snap, lambda g: g == team) if u[0] not in self.known)
        squads = self.attackers()
        if new:
            self.select(new, squads[0] if squads else 2)
            squads = squads or [2]
        world = self.c.welcome.world
        target = largest_cluster(units_of(snap, lambda g: g not in (0, team))) or \
            [world.width / 2, world.height / 2]
        for n in squads:
            try:
                self.c.move(squad=n, to=[target])
            except flockd.NotFound:  # captured to the last unit
                self.members.pop(n, None)


def admin_settings(opt):
    """The sample's units per team and time limit, set in the lobby from an
    admin connection; refused: said."""
    settings = [(f"units per team: {opt.units}", {"action": "units", "n": opt.units}),
                (f"time limit: {opt.time_limit} s",
                 {"action": "time_limit", "seconds": opt.time_limit})]
    settings = [s for s in settings if None not in s[1].values()]
    if not settings:
        return
    try:
        with flockd.connect(opt.url, room=opt.room, role="admin", token=opt.token,
                            insecure=opt.insecure, reconnect=False) as admin:
            for said, members in settings:
                admin.send_game(members)
                print(said, flush=True)
    except (flockd.CommandError, flockd.ConnectError) as e:
        print(f"settings not made: {e}", flush=True)


def on_phase(c, bot, opt, phase):
    """What a new phase asks of the bot."""
    if phase == "lobby":
        c.game(action="ready")
    elif phase == "playing":
        bot.make_squads()
    elif phase == "ended":
        state = c.room_game.state
        print(units_line(state, c.room_game.tick), flush=True)
        print(winner_line(state), flush=True)
        if opt.until_end:
            return True
        c.game(action="rematch")
    return False


def play(c, opt):
    if c.team is None or c.room_script is None:
        raise flockd.FlockdError(f"room {opt.room} has no team for us or runs no script")
    print(f"team {c.team} in room {opt.room} (script {c.room_script.name} "
          f"{c.room_script.hash})", flush=True)
    if c.game_phase in (None, "lobby"):
        admin_settings(opt)
    bot, phase = Bot(c, opt), None
    end = time.monotonic() + opt.seconds if opt.seconds else math.inf
    while time.monotonic() < end:
        game = c.wait_game(lambda g: g.state.phase is not None, timeout=30)
        if game.state.phase != phase:
            phase = game.state.phase
            print(f"phase {phase}", flush=True)
            if on_phase(c, bot, opt, phase):
                return
        if phase == "playing":
            bot.play_tick()
            if time.monotonic() >= bot.next_units:
                bot.next_units = time.monotonic() + opt.every
                if game.state.get("units") is not None:
                    print(units_line(game.state, game.tick), flush=True)
        time.sleep(0.1)


def main(opt):
    try:
        c = flockd.connect(opt.url, protocol=3, insecure=opt.insecure, connect_timeout=10)
    except flockd.ConnectError as e:
        print(f"flockwars_bot.py: {e}", file=sys.stderr)
        return 3
    with c:
        try:
            c.join(opt.room, "player", mode="rts", script=opt.script, teams=opt.teams,
                   units=opt.units, name=opt.name)
            play(c, opt)
            return 0
        except flockd.FlockdError as e:
            print(f"flockwars_bot.py: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("flockwars_bot.py: interrupted", file=sys.stderr)
            return 130


def parse_args():
    p = argparse.ArgumentParser(description="Play the flockwars sample game with squads.")
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws",
                   help="flockd WebSocket endpoint, ws:// or wss://")
    p.add_argument("--insecure", action="store_true",
                   help="wss://: accept a certificate that does not verify (self-signed)")
    p.add_argument("--room", default="flockwars", help="the rts room to join (made if missing)")
    p.add_argument("--script", default="flockwars", help="the script of the room (default flockwars)")
    p.add_argument("--teams", type=int, default=None,
                   help="teams of a room the join creates, 2..255 (default: the server's)")
    p.add_argument("--units", type=int, default=None,
                   help="units per team, 1..5000 (a room the join creates; the sample's, "
                        "set by an admin)")
    p.add_argument("--time-limit", type=int, default=None,
                   help="seconds a match lasts at most, 1..3600 (the sample's, set by an admin)")
    p.add_argument("--token", default=os.environ.get("FLOCKD_ADMIN_TOKEN"),
                   help="admin token to set --units and --time-limit with "
                        "(default: $FLOCKD_ADMIN_TOKEN)")
    p.add_argument("--name", default="flockwars_bot.py", help="the name the room's roster shows")
    p.add_argument("--home", type=float, default=0.33,
                   help="share of the units that stays home, 0..0.9 (default 0.33)")
    p.add_argument("--attackers", type=int, default=2, help="attack squads, 1..8 (default 2)")
    p.add_argument("--retarget", type=float, default=2.0,
                   help="seconds between the attack's orders (default 2)")
    p.add_argument("--every", type=float, default=5.0,
                   help="seconds between the lines of units per team (default 5)")
    p.add_argument("--until-end", action="store_true",
                   help="leave once the match ended (exit 0) rather than play a rematch")
    p.add_argument("--seconds", type=float, default=0,
                   help="leave after this many seconds, 0: never (default 0)")
    opt = p.parse_args()
    if not 0 <= opt.home <= 0.9 or not 1 <= opt.attackers <= 8 or opt.retarget < 0.5 or \
            opt.every <= 0 or opt.seconds < 0 or \
            (opt.units is not None and not 1 <= opt.units <= 5000) or \
            (opt.time_limit is not None and not 1 <= opt.time_limit <= 3600) or \
            (opt.teams is not None and not 2 <= opt.teams <= 255):
        p.error("need --home 0..0.9, --attackers 1..8, --retarget >= 0.5, --every > 0, "
                "--seconds >= 0, --units 1..5000, --time-limit 1..3600, --teams 2..255")
    return opt


if __name__ == "__main__":
    sys.exit(main(parse_args()))
