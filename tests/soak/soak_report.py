"""The soak's figures (tests/soak/soak.py): the samples as CSV, what the
measured part says about the heap, RSS, descriptors and threads, the
verdict on them, and a plot of the samples as a hand-written SVG.

A sample is a dict: time (seconds since flockd started), rss_kib,
heap_kib (what malloc has handed out and not had back: /metrics'
flockd_heap_in_use_bytes, 0 where malloc is not glibc's), fds, threads,
clients, rooms. A quiet reading is one taken with no client connected and
only the default room left (soak.py drains the load at the end of the
warm-up and at the end): the same state of flockd at both ends of the
measured part, so its descriptors and threads must be the same, and so
must, within the bound, the memory it has in use.
"""

COLUMNS = ("time", "rss_kib", "heap_kib", "fds", "threads", "clients", "rooms")


def csv_text(samples):
    """The samples as CSV, a header line first."""
    lines = [",".join(COLUMNS)]
    for s in samples:
        lines.append(",".join(f"{s[c]:.1f}" if c == "time" else str(s[c]) for c in COLUMNS))
    return "\n".join(lines) + "\n"


def slope(points):
    """The least-squares slope of (x, y) points; 0 for fewer than two xs."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def figures(samples, start, end, loaded):
    """What the measured part says: from quiet reading `start` to quiet
    reading `end`, its load at its level from loaded[0] to loaded[1] s.

    Heap growth is what malloc has in use at the end's quiet reading more
    than at the start's: the same state of flockd, so a leak of any size
    shows whole, and what the heaps keep free does not count.

    RSS drift is the growth a least-squares line through the samples taken
    under load gives it from its first second to its last (KiB): a leak
    shows as a steady slope, while the rise and fall of memory with the
    load (buffers of slow clients, rooms coming and going) averages out, as
    max - min does not (printed too). RSS also follows what glibc's heaps
    keep after the highest load they saw, which they meet again and again
    in the first minutes of a run: in the 3-minute run the line has been
    +0.1 to +2.4 MiB with the heap at +0.1 to +0.3 (soak_judges())."""
    part = [s for s in samples if loaded[0] <= s["time"] <= loaded[1]]
    rss = [s["rss_kib"] for s in part] or [start["rss_kib"]]
    k = slope([(s["time"], s["rss_kib"]) for s in part])
    return {
        "seconds": end["time"] - start["time"],
        "samples": len(part),
        "rss_min": min(rss),
        "rss_max": max(rss),
        "rss_spread": max(rss) - min(rss),
        "kib_per_hour": k * 3600,
        "drift_kib": k * (loaded[1] - loaded[0]),
        "quiet_growth_kib": end["rss_kib"] - start["rss_kib"],
        "heap_growth_kib": end["heap_kib"] - start["heap_kib"],
    }


RSS_JUDGED_FROM_S = 600


def soak_judges(seconds, sanitizer):
    """The memory figures a run of `seconds` judges ({"heap", "rss"} or
    fewer) and, for each of the others, why not. `sanitizer`: 'asan',
    'tsan' or None. A sanitizer's allocator is not glibc's, and ASan's
    quarantine holds freed memory: neither is judged there (LeakSanitizer
    finds leaks at exit). RSS drift is judged in runs of 10 minutes or
    more: in a shorter one the line meets the heaps' own warm-up (figures())."""
    if sanitizer:
        why = f"{sanitizer} build: its allocator keeps freed memory"
        return set(), {"heap": why, "rss": why}
    if seconds < RSS_JUDGED_FROM_S:
        return {"heap"}, {"rss": f"a run under {RSS_JUDGED_FROM_S // 60} minutes: what the "
                          "heaps keep is still growing to the load's peaks"}
    return {"heap", "rss"}, {}


def verdict(f, start, end, bound_kib, judges):
    """The reasons the figures fail the soak (empty: they pass). judges:
    the memory figures judged, a subset of {"heap", "rss"}."""
    why = []
    if "heap" in judges and f["heap_growth_kib"] > bound_kib:
        why.append(f"heap in use grew {f['heap_growth_kib']} KiB between the quiet readings, "
                   f"bound {bound_kib} KiB")
    if "rss" in judges and f["drift_kib"] > bound_kib:
        why.append(f"RSS drift {f['drift_kib']:.0f} KiB over the measured part, bound "
                   f"{bound_kib} KiB")
    for what in ("fds", "threads"):
        if end[what] > start[what]:
            why.append(f"{what} grew from {start[what]} to {end[what]} (quiet readings)")
    return why


def summary(f, start, end, bound_kib, judges, unjudged):
    """Lines of text saying the figures and the bounds; unjudged: what a
    figure of those not judged gets instead of its bound (why not)."""
    def bound(what):
        return f"bound {bound_kib} KiB" if what in judges else f"not judged ({unjudged[what]})"
    return [
        f"measured part: {start['time']:.0f} s to {end['time']:.0f} s ({f['seconds']:.0f} s, "
        f"{f['samples']} samples under load)",
        f"heap in use: {start['heap_kib']} KiB at the warm-up's end (quiet), {end['heap_kib']} KiB "
        f"at the end (quiet): {f['heap_growth_kib']:+d} KiB; {bound('heap')}",
        f"rss: {start['rss_kib']} KiB at the warm-up's end (quiet), {end['rss_kib']} KiB at "
        f"the end (quiet): {f['quiet_growth_kib']:+d} KiB (not judged)",
        f"rss under load: {f['rss_min']}..{f['rss_max']} KiB (max - min {f['rss_spread']} KiB)",
        f"rss drift (least-squares line over the measured part): {f['drift_kib']:+.0f} KiB "
        f"({f['kib_per_hour']:+.0f} KiB/h); {bound('rss')}",
        f"fds: {start['fds']} -> {end['fds']}; threads: {start['threads']} -> "
        f"{end['threads']} (quiet readings; must not grow)",
    ]


def _polyline(samples, key, scale_x, scale_y, color):
    pts = " ".join(f"{scale_x(s['time']):.1f},{scale_y(s[key]):.1f}" for s in samples)
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>'


def _panel(samples, top, series, label, warm_end, width=860, height=170, left=60):
    """One plot: the series [(key, color, name)] of the samples against time."""
    t1 = max(s["time"] for s in samples) or 1
    values = [s[k] for s in samples for k, _, _ in series]
    lo, hi = min(values), max(values)
    hi = hi if hi > lo else lo + 1
    sx = lambda t: left + t / t1 * (width - left - 10)  # noqa: E731
    sy = lambda v: top + height - (v - lo) / (hi - lo) * height  # noqa: E731
    out = [f'<rect x="{left}" y="{top}" width="{sx(warm_end) - left:.1f}" height="{height}" '
           f'fill="#eee"/>',
           f'<rect x="{left}" y="{top}" width="{width - left - 10}" height="{height}" '
           f'fill="none" stroke="#888"/>',
           f'<text x="{left}" y="{top - 6}" font-size="12">{label}</text>',
           f'<text x="{left - 4}" y="{top + 10}" font-size="10" text-anchor="end">{hi}</text>',
           f'<text x="{left - 4}" y="{top + height}" font-size="10" text-anchor="end">{lo}</text>']
    for i, (key, color, name) in enumerate(series):
        out.append(_polyline(samples, key, sx, sy, color))
        out.append(f'<text x="{width - 10 - 90 * (len(series) - i)}" y="{top - 6}" '
                   f'font-size="11" fill="{color}">{name}</text>')
    out.append(f'<text x="{width - 10}" y="{top + height + 14}" font-size="10" '
               f'text-anchor="end">{t1:.0f} s</text>')
    return out


def svg(samples, warm_end):
    """RSS above, descriptors, threads and clients below, against time; the
    warm-up shaded."""
    body = _panel(samples, 30, [("rss_kib", "#c33", "rss KiB")], "flockd RSS (KiB)", warm_end)
    # The heap in use is not plotted: under load it counts each room's
    # reserved arrays (mmapped, mostly untouched), several MiB a room.
    body += _panel(samples, 250, [("fds", "#36c", "fds"), ("threads", "#393", "threads"),
                                  ("clients", "#999", "clients")],
                   "open descriptors, threads, clients", warm_end)
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="880" height="450" '
            'font-family="sans-serif">\n<rect width="880" height="450" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")
