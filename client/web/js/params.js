// Parameter sliders built from the welcome's registry (PROTOCOL.md §6.1:
// name, min, max, default, unit, integer, help). Each row has a range
// slider and a number box; a change calls onChange(name, value), at most
// every SEND_EVERY_MS while a slider is dragged and once more when it is
// released. Rows can be disabled as a whole. Knows nothing about the
// connection.

const SEND_EVERY_MS = 120;

/** A slider step of about a thousandth of the range, rounded to a power of ten. */
export function sliderStep(p) {
  if (p.integer) return 1;
  const range = p.max - p.min;
  if (!(range > 0)) return 'any';
  return 10 ** Math.floor(Math.log10(range / 1000));
}

function clamp(p, v) {
  const x = Math.min(p.max, Math.max(p.min, v));
  return p.integer ? Math.round(x) : x;
}

function format(v) {
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
}

export class ParamPanel {
  constructor(container, onChange) {
    this.container = container;
    this.onChange = onChange;
    this.rows = new Map(); // name -> {p, range, box, timer, lastSent}
    this.disabled = false;
  }

  /** Disables (or enables) every row, now and when rebuilt: for roles that may not send params. */
  setDisabled(disabled) {
    this.disabled = disabled;
    for (const r of this.rows.values()) {
      r.range.disabled = disabled;
      r.box.disabled = disabled;
    }
  }

  /** Rebuilds the rows for `params` (the registry) showing `values`. */
  build(params, values) {
    this.container.replaceChildren();
    this.rows.clear();
    for (const p of params) this.addRow(p);
    this.show(values);
  }

  addRow(p) {
    const row = document.createElement('div');
    row.className = 'param';
    row.title = p.help || '';
    const head = document.createElement('label');
    head.className = 'param-head';
    const name = document.createElement('span');
    name.textContent = p.unit ? `${p.name} (${p.unit})` : p.name;
    const box = document.createElement('input');
    box.type = 'number';
    box.min = p.min;
    box.max = p.max;
    box.step = p.integer ? 1 : 'any';
    box.name = p.name;
    head.append(name, box);
    const range = document.createElement('input');
    range.type = 'range';
    range.min = p.min;
    range.max = p.max;
    range.step = sliderStep(p);
    range.dataset.param = p.name;
    range.setAttribute('aria-label', p.name);
    range.disabled = this.disabled;
    box.disabled = this.disabled;
    row.append(head, range);
    this.container.append(row);
    const r = { p, range, box, timer: null, lastSent: 0 };
    this.rows.set(p.name, r);
    range.addEventListener('input', () => {
      const v = clamp(p, Number(range.value));
      box.value = format(v);
      this.throttled(r, v);
    });
    range.addEventListener('change', () => this.send(r, clamp(p, Number(range.value))));
    box.addEventListener('change', () => {
      const v = Number(box.value);
      if (!Number.isFinite(v) || box.value === '') return;
      const c = clamp(p, v);
      box.value = format(c);
      range.value = c;
      this.send(r, c);
    });
  }

  throttled(r, v) {
    const now = performance.now();
    clearTimeout(r.timer);
    if (now - r.lastSent >= SEND_EVERY_MS) this.send(r, v);
    else r.timer = setTimeout(() => this.send(r, v), SEND_EVERY_MS - (now - r.lastSent));
  }

  send(r, v) {
    clearTimeout(r.timer);
    r.timer = null;
    r.lastSent = performance.now();
    if (r.sentValue === v) return;
    r.sentValue = v;
    this.onChange(r.p.name, v);
  }

  /** Shows `values` ({name: value}) without sending anything. */
  show(values) {
    for (const [name, r] of this.rows) {
      if (!(name in values)) continue;
      const v = values[name];
      r.range.value = v;
      r.box.value = format(v);
      r.sentValue = v;
    }
  }
}
