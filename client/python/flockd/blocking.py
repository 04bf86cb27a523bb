"""A blocking client for plain scripts and notebooks.

    with flockd.connect("ws://127.0.0.1:8080/ws", room="lab", role="admin") as c:
        c.spawn(n=100, group=1, x=800, y=500)
        for snap in c.snapshots(seconds=5):
            ...

`connect()` starts an asyncio Client (client.py) on an event loop in a
thread of its own and returns a BlockingClient whose methods wait for the
coroutines they run there: every command, `join`, `send_game()`,
`snapshots()` (a plain iterator), `next_snapshot()`, `wait_for()`,
`squad()`, `wait_squads()`, `wait_game()`. Attributes (welcome, roster,
squads, room_game, team_games, room_script, snapshot, counters,
connected) are the client's. The loop keeps reading
while the script does something else, so snapshots are decoded and the
connection kept (and reconnected) in the background. Ctrl-C stops the call
it interrupts and nothing else: a `finally:` that cleans up can still send
commands. Callbacks given to `on()` run in the loop's thread.
"""

import asyncio
import threading

from .client import Client, add_command_methods


class BlockingClient:
    """A Client driven from ordinary code; see the module's docstring."""

    def __init__(self, url, **kwargs):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="flockd",
                                        daemon=True)
        self._thread.start()
        try:
            self._client = self._call(self._make(url, kwargs))
        except BaseException:
            self._stop_loop()
            raise

    async def _make(self, url, kwargs):
        return await Client(url, **kwargs).start()

    def _call(self, coro):
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result()
        except BaseException:  # Ctrl-C, say: stop what it was waiting for
            fut.cancel()
            raise

    def _stop_loop(self):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __getattr__(self, name):
        # Attributes and properties of the client: welcome, snapshot, frames...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._client, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the connection and stops the loop's thread."""
        if self._loop.is_closed():
            return
        if self._loop.is_running():
            self._call(self._client.close())
        self._stop_loop()

    def command(self, cmd, timeout=None, **args):
        """As Client.command: the Ack, or the CommandError raised."""
        return self._call(self._client.command(cmd, timeout=timeout, **args))

    def join(self, room, role, *, mode=None, name=None, token=None, password=None,
             rejoin=None, boids=None, width=None, height=None, edges=None, teams=None,
             units=None, script=None, timeout=None):
        """As Client.join: moves to `room` with `role` and waits for its
        welcome; the client rejoins it after a reconnect."""
        return self._call(self._client.join(room, role, mode=mode, name=name, token=token,
                                            password=password, rejoin=rejoin, boids=boids,
                                            width=width, height=height, edges=edges,
                                            teams=teams, units=units, script=script,
                                            timeout=timeout))

    def squad(self, n, team=None):
        """As Client.squad."""
        return self._client.squad(n, team)

    def wait_squads(self, predicate, timeout=30.0, team=None):
        """As Client.wait_squads; predicate runs in the loop's thread."""
        return self._call(self._client.wait_squads(predicate, timeout=timeout, team=team))

    def send_game(self, members, timeout=None):
        """As Client.send_game: the Ack, or the CommandError raised."""
        return self._call(self._client.send_game(members, timeout=timeout))

    def wait_game(self, predicate, timeout=30.0, team=None):
        """As Client.wait_game; predicate runs in the loop's thread."""
        return self._call(self._client.wait_game(predicate, timeout=timeout, team=team))

    def on(self, kind, callback):
        """As Client.on; the callback runs in the loop's thread."""
        return self._client.on(kind, callback)

    def snapshots(self, seconds=None, count=None, timeout=None, fresh=True, maxlen=256):
        """As Client.snapshots, as a plain iterator (a generator: leaving
        the loop early stops it)."""
        it = self._call(self._iterator(seconds, count, timeout, fresh, maxlen))
        try:
            while True:
                try:
                    yield self._call(it.next())
                except StopAsyncIteration:
                    return
        finally:
            if not self._loop.is_closed():
                self._loop.call_soon_threadsafe(it.close)

    async def _iterator(self, *args):
        return self._client.snapshots(*args)

    def next_snapshot(self, timeout=None, fresh=True):
        """As Client.next_snapshot."""
        return self._call(self._client.next_snapshot(timeout=timeout, fresh=fresh))

    def wait_for(self, predicate, timeout=30.0, fresh=True):
        """As Client.wait_for; predicate runs in the loop's thread."""
        return self._call(self._client.wait_for(predicate, timeout=timeout, fresh=fresh))


add_command_methods(BlockingClient, blocking=True)


def connect(url, **kwargs):
    """A connected BlockingClient (usable in `with`); keyword arguments as
    Client's: room, role, mode, token, password, name, boids, protocol (3,
    2 or 1), insecure, ssl, reconnect, backoff, timeout, connect_timeout,
    numpy, view. Raises ConnectError, or the CommandError of a refused join
    or view."""
    return BlockingClient(url, **kwargs)
