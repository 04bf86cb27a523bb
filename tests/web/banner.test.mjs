// The banner over the view: the connection first, then a room of a cluster
// that cannot be reached (PROTOCOL.md §6.6), from the messages that say so.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { availabilityOf, bannerText } from '../../client/web/js/banner.js';

const OPEN = { status: 'open', everConnected: true, attempt: 0, retryAt: 0 };

test('a welcome without "available" says the room is available', () => {
  assert.deepEqual(availabilityOf({ type: 'welcome', room: 'arena' }), { available: true, reason: '' });
});

test('a welcome with "available": false carries its reason', () => {
  const w = { type: 'welcome', room: 'arena', available: false, reason: 'NATS lost' };
  assert.deepEqual(availabilityOf(w), { available: false, reason: 'NATS lost' });
});

test('an availability message counts only for the room the page is in', () => {
  const down = { type: 'availability', room: 'arena', available: false, reason: 'no frame for 2 s' };
  assert.deepEqual(availabilityOf(down, 'arena'), { available: false, reason: 'no frame for 2 s' });
  assert.equal(availabilityOf(down, 'other'), undefined);
  assert.deepEqual(availabilityOf({ type: 'availability', room: 'arena', available: true }, 'arena'),
    { available: true, reason: '' });
});

test('other messages say nothing of availability', () => {
  for (const m of [{ type: 'roster', room: 'arena' }, { type: 'ack', id: 1 }, null, 'text']) {
    assert.equal(availabilityOf(m, 'arena'), undefined);
  }
});

test('an open connection to an available room shows no banner', () => {
  assert.equal(bannerText(OPEN, null, 0), null);
});

test('an open connection to an unavailable room shows the reason', () => {
  const text = bannerText(OPEN, 'no frame from the room\'s node n2 for 2 s', 0);
  assert.match(text, /^Room unavailable: no frame from the room's node n2 for 2 s/);
});

test('a lost connection is shown before the room', () => {
  const waiting = { status: 'waiting', everConnected: true, attempt: 2, retryAt: 1500 };
  assert.match(bannerText(waiting, 'NATS lost', 500), /Connection to flockd lost — reconnecting in 1\.0 s \(attempt 2\)/);
  assert.equal(bannerText({ status: 'connecting', everConnected: false, attempt: 0 }, 'x', 0), 'Connecting to flockd…');
});
