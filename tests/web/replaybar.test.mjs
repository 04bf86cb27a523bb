// The recording's bar (client/web/js/replaybar.js): where goto goes, the
// bar shown only for a recording, following the playback, and the goto it
// sends, on fake elements.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ReplayBar, gotoTick } from '../../client/web/js/replaybar.js';

const REPLAY = { first_tick: 100, last_tick: 4000 };

function fakeElement() {
  const handlers = {};
  return {
    hidden: false, value: '', min: '', max: '', textContent: '',
    addEventListener(type, fn) { handlers[type] = fn; },
    fire(type, e = {}) { handlers[type](e); },
  };
}

function bar() {
  globalThis.document = { activeElement: null };
  const els = { section: fakeElement(), slider: fakeElement(), tick: fakeElement(), go: fakeElement(),
    range: fakeElement() };
  const sent = [];
  return { els, sent, bar: new ReplayBar(els, (cmd, args) => sent.push([cmd, args])) };
}

test('goto should go to a whole tick inside the recording', () => {
  assert.equal(gotoTick('250.4', REPLAY), 250);
  assert.equal(gotoTick(5, REPLAY), 100);
  assert.equal(gotoTick(1e9, REPLAY), 4000);
  assert.equal(gotoTick('nonsense', REPLAY), 100);
});

test('the bar should show only for a recording, with its ticks', () => {
  const { els, bar: b } = bar();
  b.show(null);
  assert.equal(els.section.hidden, true);
  b.show(REPLAY);
  assert.equal(els.section.hidden, false);
  assert.equal(els.slider.min, 100);
  assert.equal(els.slider.max, 4000);
  assert.match(els.range.textContent, /100.*4000/);
  b.show({ first_tick: 'x' });
  assert.equal(els.section.hidden, true);
});

test('the bar should follow the playback but not while the slider is held', () => {
  const { els, bar: b } = bar();
  b.show(REPLAY);
  b.update(700);
  assert.equal(els.slider.value, 700);
  assert.equal(els.tick.value, 700);
  els.slider.value = '900';
  els.slider.fire('input');
  b.update(710);
  assert.equal(els.slider.value, '900');
});

test('a typed tick should survive the playback until it is sent, focus or not', () => {
  const { els, sent, bar: b } = bar();
  b.show(REPLAY);
  b.update(700);
  els.tick.value = '2000';
  els.tick.fire('input');
  document.activeElement = els.go; // pressing Go takes the focus before the click
  b.update(701);
  assert.equal(els.tick.value, '2000');
  assert.equal(els.slider.value, 701);
  els.go.fire('click');
  assert.deepEqual(sent, [['goto', { tick: 2000 }]]);
  b.update(2000);
  b.update(2001);
  assert.equal(els.tick.value, 2001); // sent: it follows again
});

test('releasing the slider, the go button and Enter should send goto', () => {
  const { els, sent, bar: b } = bar();
  b.show(REPLAY);
  els.slider.value = '1234';
  els.slider.fire('input');
  els.slider.fire('change');
  els.tick.value = '99999';
  els.go.fire('click');
  els.tick.value = '300';
  els.tick.fire('keydown', { key: 'Enter' });
  assert.deepEqual(sent, [['goto', { tick: 1234 }], ['goto', { tick: 4000 }], ['goto', { tick: 300 }]]);
});
