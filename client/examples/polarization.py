#!/usr/bin/python3
"""How a flock lines up when its alignment weight changes: a notebook-style
example of the flockd Python library (client/python).

It joins a room as admin, gives one group its own parameters (flocking only
with itself, alignment weight --before) and spawns --boids boids into it,
records their positions and headings for --seconds of simulated time,
raises the alignment weight to --after half way, and computes the group's
polarization over time (|mean unit heading|: 0 for headings all over the
place, 1 for a flock flying one way). With matplotlib it plots that curve to
--out (PNG); without, it writes the curve as CSV and says so. The positions
go to --positions (.npz, with numpy). What it spawned and changed is undone
at the end, also on a failure or Ctrl-C.

    /usr/bin/python3 client/examples/polarization.py --url ws://127.0.0.1:8080/ws
"""

import argparse
import csv
import os
import sys

try:
    import flockd
except ImportError:  # run from the source tree, not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flockd

try:
    import numpy as np
except ImportError:
    np = None


def record(c, opt):
    """(times, polarizations, alignment weights, positions) over the run."""
    times, pols, weights, positions = [], [], [], []
    weight, t0 = opt.before, None
    for snap in c.snapshots(seconds=opt.seconds):
        t0 = snap.sim_time if t0 is None else t0
        mine = snap.mask(opt.group)
        if np is not None:
            positions.append(np.stack([snap.x[mine], snap.y[mine]], axis=1))
        times.append(snap.sim_time - t0)
        pols.append(snap.polarization(opt.group))
        weights.append(weight)
        if weight == opt.before and times[-1] >= opt.seconds / 2:
            c.params(group=opt.group, w_alignment=opt.after)
            weight = opt.after
            print(f"t = {times[-1]:.1f} s: w_alignment {opt.before:g} -> {opt.after:g}", flush=True)
    return times, pols, weights, positions


def report(opt, times, pols, weights):
    before = [p for p, w in zip(pols, weights) if w == opt.before]
    after = [p for p, w in zip(pols, weights) if w == opt.after]
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    print(f"{len(pols)} snapshots; polarization {pols[0]:.2f} at the start, mean "
          f"{mean(before):.2f} with w_alignment {opt.before:g}, {mean(after):.2f} with "
          f"{opt.after:g}, {pols[-1]:.2f} at the end", flush=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        out = os.path.splitext(opt.out)[0] + ".csv"
        with open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seconds", "polarization", "w_alignment"])
            w.writerows(zip(times, pols, weights))
        print(f"matplotlib is not installed: wrote the curve as CSV to {out}", flush=True)
        return
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(times, pols)
    ax.axvline(opt.seconds / 2, linestyle="--", color="grey")
    ax.set(xlabel="simulated seconds", ylabel="polarization", ylim=(0, 1.02),
           title=f"group {opt.group}: w_alignment {opt.before:g} then {opt.after:g}")
    fig.savefig(opt.out, dpi=100, bbox_inches="tight")
    print(f"plotted the curve to {opt.out}", flush=True)


def main(opt):
    try:
        c = flockd.connect(opt.url, room=opt.room, role="admin", token=opt.token,
                           insecure=opt.insecure)
    except flockd.FlockdError as e:
        print(f"polarization.py: {e}", file=sys.stderr)
        return 3
    values = dict(c.welcome.values.to_dict(), **(c.welcome.groups or {}).get(str(opt.group), {}))
    restore = {k: values[k] for k in ("w_alignment", "own_group_only")}
    spawned = 0
    with c:
        try:
            c.params(group=opt.group, w_alignment=opt.before, own_group_only=1)
            w = c.welcome.world
            spawned = c.spawn(n=opt.boids, group=opt.group, x=w.width / 2, y=w.height / 2,
                              spread=min(w.width, w.height) / 4).count
            print(f"room {c.welcome.room}: spawned {spawned} boids in group {opt.group}",
                  flush=True)
            times, pols, weights, positions = record(c, opt)
            if positions and opt.positions:
                same = len({p.shape for p in positions}) == 1  # else someone despawned
                xy = np.stack(positions) if same else np.array(positions, dtype=object)
                np.savez(opt.positions, t=np.array(times), xy=xy)
                print(f"positions of {len(positions)} snapshots in {opt.positions}", flush=True)
            report(opt, times, pols, weights)
            return 0
        except flockd.FlockdError as e:
            print(f"polarization.py: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("polarization.py: interrupted", file=sys.stderr)
            return 130
        finally:
            if spawned:
                c.despawn(n=spawned, group=opt.group)
            c.params(group=opt.group, **restore)
            print(f"despawned {spawned} boids, group {opt.group}'s parameters restored",
                  flush=True)


def parse_args():
    p = argparse.ArgumentParser(description="Polarization of a flock as its alignment changes.")
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws", help="flockd WebSocket endpoint")
    p.add_argument("--insecure", action="store_true", help="wss://: accept any certificate")
    p.add_argument("--room", default="default", help="room to join as admin (created if new)")
    p.add_argument("--token", help="the server's admin token, if it has one")
    p.add_argument("--group", type=int, default=7, help="group to spawn, 0..255")
    p.add_argument("--boids", type=int, default=200, help="boids to spawn")
    p.add_argument("--seconds", type=float, default=20, help="simulated seconds to record")
    p.add_argument("--before", type=float, default=0.0, help="w_alignment for the first half")
    p.add_argument("--after", type=float, default=3.0, help="w_alignment for the second half")
    p.add_argument("--out", default="polarization.png", help="the plot (or .csv without "
                   "matplotlib)")
    p.add_argument("--positions", default="", help="save the positions here (.npz, numpy)")
    opt = p.parse_args()
    if not 0 <= opt.group <= 255 or opt.boids < 1 or opt.seconds <= 0 or opt.before == opt.after:
        p.error("need --group 0..255, --boids >= 1, --seconds > 0, --before != --after")
    return opt


if __name__ == "__main__":
    sys.exit(main(parse_args()))
