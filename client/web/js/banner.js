// What the banner over the view says: the connection to flockd when it is
// not open (connecting, or lost and waiting to retry), else the room when
// its node in a cluster cannot be reached (`availability`, PROTOCOL.md
// §6.6, or a welcome with "available": false). Pure: the page shows it.

/**
 * The availability a server message states, or undefined if it states
 * none: {available, reason}. A welcome without "available" states that the
 * room is available; an `availability` message counts only for `room`.
 */
export function availabilityOf(msg, room) {
  if (!msg || typeof msg !== 'object') return undefined;
  if (msg.type === 'welcome') return { available: msg.available !== false, reason: msg.reason || '' };
  if (msg.type === 'availability' && msg.room === room) {
    return { available: msg.available !== false, reason: msg.reason || '' };
  }
  return undefined;
}

/**
 * The banner's text, or null to hide it. `st` is the connection's state
 * ({status, everConnected, attempt, retryAt}), `unavailable` the reason the
 * room cannot be reached or null, `now` performance.now().
 */
export function bannerText(st, unavailable, now) {
  if (st.status === 'open') {
    return unavailable ? `Room unavailable: ${unavailable}. It comes back by itself.` : null;
  }
  if (st.status === 'waiting') {
    const secs = Math.max(0, (st.retryAt - now) / 1000);
    return `Connection to flockd lost — reconnecting in ${secs.toFixed(1)} s (attempt ${st.attempt})`;
  }
  return st.everConnected || st.attempt ? `Reconnecting to flockd… (attempt ${st.attempt + 1})` : 'Connecting to flockd…';
}
