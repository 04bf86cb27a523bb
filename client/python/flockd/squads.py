"""Where a formation's slots lie (PROTOCOL.md §13.3), and how much of a
formation a squad's units fill.

`slots(shape, n, anchor, facing, spacing)` is §13.3's layout: the n slot
positions of a formation; `entry_slots(entry)` those of one squad of a
`squads` message (§13.5). `slot_fit(slots, points, tolerance)` says how
much of a formation is filled: the share of its slots with a unit of
`points` (each unit counted for one slot) within `tolerance`. The
commands themselves (select, move, patrol, follow, hold, stop,
formation) are the schema's, checked by schema.py.

Pure: no I/O, no state; safe from any thread.
"""

import math

SHAPES = ("none", "line", "column", "wedge", "box")


def _ceil_sqrt(v):
    """The least c with c * c >= v."""
    c = math.isqrt(v)
    return c + (c * c < v)


# ---- §13.3: where the slots are -------------------------------------------------------

def slot_offsets(shape, n):
    """The (a, b) of slots 0..n-1 of `shape` (§13.3): a across the facing
    (along r), b back from the front row (along -f), both in spacings.
    `line`, `box` and `column` are rows of c slots (c = ceil(sqrt(4n)),
    ceil(sqrt(n)), ceil(sqrt(ceil(n/4))), at most n); a `wedge`'s row b
    holds 2b + 1. A row with fewer slots than its width is centred.
    `none` has no slots (an empty list)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown formation shape {shape!r}")
    if shape == "none" or n <= 0:
        return []
    if shape != "wedge":
        c = {"line": _ceil_sqrt(4 * n), "box": _ceil_sqrt(n),
             "column": _ceil_sqrt((n + 3) // 4)}[shape]
        c = min(max(c, 1), n)
    out = []
    for i in range(n):
        if shape == "wedge":
            row = math.isqrt(i)
            first, width = row * row, 2 * row + 1
        else:
            row = i // c
            first, width = row * c, c
        m = min(width, n - first)
        out.append((i - first - (m - 1) / 2, float(row)))
    return out


def slots(shape, n, anchor, facing, spacing):
    """The n slot positions [(x, y)] of a formation with its anchor (the
    middle of its front row) at `anchor`, facing angle `facing` (radians)
    and `spacing` world units between neighbours (§13.3)."""
    fx, fy = math.cos(facing), math.sin(facing)
    rx, ry = -fy, fx
    ax, ay = anchor
    return [(ax + a * spacing * rx - b * spacing * fx, ay + a * spacing * ry - b * spacing * fy)
            for a, b in slot_offsets(shape, n)]


def entry_slots(entry):
    """The slots of one squad of a `squads` message (a dict or Message with
    formation, units, anchor, facing, spacing); [] for `none`."""
    get = entry.get
    if get("formation", "none") == "none":
        return []
    return slots(get("formation"), get("units"), get("anchor"), get("facing"), get("spacing"))


def _gap(d, size):
    """|d| the shorter way round an axis of `size` (None: no wrap)."""
    d = abs(d)
    return d if size is None else min(d % size, size - d % size)


def slot_fit(slot_list, points, tolerance, wrap=None):
    """The share (0..1) of the slots that have a unit of `points` within
    `tolerance` of them, each unit taken for one slot at most (the closest
    pairs first). 1.0 for no slots. `wrap`: (width, height) of a wrapping
    world, whose distances are the shorter way round."""
    if not slot_list:
        return 1.0
    w, h = wrap if wrap else (None, None)
    pairs = []
    t2 = tolerance * tolerance
    for si, (sx, sy) in enumerate(slot_list):
        for pi, (px, py) in enumerate(points):
            d2 = _gap(sx - px, w) ** 2 + _gap(sy - py, h) ** 2
            if d2 <= t2:
                pairs.append((d2, si, pi))
    pairs.sort()
    slot_taken, unit_taken = set(), set()
    for _, si, pi in pairs:
        if si not in slot_taken and pi not in unit_taken:
            slot_taken.add(si)
            unit_taken.add(pi)
    return len(slot_taken) / len(slot_list)


__all__ = ["SHAPES", "slot_offsets", "slots", "entry_slots", "slot_fit"]
