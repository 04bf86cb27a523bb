// Where a formation's slots lie (proto/PROTOCOL.md §13.3): slots(shape,
// n, anchor, facing, spacing), entrySlots(entry of a `squads` message),
// and slotFit(slots, points, tolerance) for how much of a formation its
// units fill. The squads' commands (select, move, patrol, follow, hold,
// stop, formation) are the schema's, checked by validate.js. Pure: no
// I/O, no state.

export const SHAPES = Object.freeze(['none', 'line', 'column', 'wedge', 'box']);

// The largest r with r * r <= v, and the least c with c * c >= v.
function isqrt(v) {
  let r = Math.floor(Math.sqrt(v));
  while (r * r > v) r--;
  while ((r + 1) * (r + 1) <= v) r++;
  return r;
}

function ceilSqrt(v) {
  const c = isqrt(v);
  return c * c < v ? c + 1 : c;
}

/**
 * The [a, b] of slots 0..n-1 of `shape`: a across the facing (along r), b
 * back from the front row (along -f), in spacings. `line`, `box` and
 * `column` are rows of c slots (c = ceil(sqrt(4n)), ceil(sqrt(n)),
 * ceil(sqrt(ceil(n/4))), at most n); a `wedge`'s row b holds 2b + 1. A
 * row with fewer slots than its width is centred. `none` has none.
 */
export function slotOffsets(shape, n) {
  if (!SHAPES.includes(shape)) throw new RangeError(`unknown formation shape '${shape}'`);
  const out = [];
  if (shape === 'none' || n <= 0) return out;
  const rows = { line: ceilSqrt(4 * n), box: ceilSqrt(n), column: ceilSqrt(Math.floor((n + 3) / 4)) };
  const c = Math.min(Math.max(rows[shape] || 1, 1), n);
  for (let i = 0; i < n; i++) {
    const row = shape === 'wedge' ? isqrt(i) : Math.floor(i / c);
    const first = shape === 'wedge' ? row * row : row * c;
    const width = shape === 'wedge' ? 2 * row + 1 : c;
    const m = Math.min(width, n - first);
    out.push([i - first - (m - 1) / 2, row]);
  }
  return out;
}

/**
 * The n slot positions [[x, y]] of a formation whose anchor (the middle of
 * its front row) is `anchor`, facing `facing` radians, `spacing` world
 * units between neighbours (§13.3).
 */
export function slots(shape, n, anchor, facing, spacing) {
  const fx = Math.cos(facing);
  const fy = Math.sin(facing);
  const [ax, ay] = anchor;
  return slotOffsets(shape, n).map(([a, b]) => [ax - a * spacing * fy - b * spacing * fx, ay + a * spacing * fx - b * spacing * fy]);
}

/** The slots of one entry of a `squads` message (§13.5); [] for `none`. */
export function entrySlots(e) {
  if (!e || !e.formation || e.formation === 'none') return [];
  return slots(e.formation, e.units, e.anchor, e.facing, e.spacing);
}

// |d| the shorter way round an axis of `size` (0: no wrap).
function gap(d, size) {
  const a = Math.abs(d);
  if (!size) return a;
  const m = a % size;
  return Math.min(m, size - m);
}

/**
 * The share (0..1) of `slotList` that has a point of `points` within
 * `tolerance`, each point taken for one slot at most, closest pairs first.
 * 1 when there are no slots. `wrap`: [width, height] of a wrapping world,
 * whose distances are the shorter way round.
 */
export function slotFit(slotList, points, tolerance, wrap = null) {
  if (slotList.length === 0) return 1;
  const [w, h] = wrap || [0, 0];
  const pairs = [];
  const t2 = tolerance * tolerance;
  slotList.forEach(([sx, sy], si) => {
    points.forEach(([px, py], pi) => {
      const d2 = gap(sx - px, w) ** 2 + gap(sy - py, h) ** 2;
      if (d2 <= t2) pairs.push([d2, si, pi]);
    });
  });
  pairs.sort((p, q) => p[0] - q[0] || p[1] - q[1] || p[2] - q[2]);
  const slotTaken = new Set();
  const pointTaken = new Set();
  for (const [, si, pi] of pairs) {
    if (!slotTaken.has(si) && !pointTaken.has(pi)) {
      slotTaken.add(si);
      pointTaken.add(pi);
    }
  }
  return slotTaken.size / slotList.length;
}
