"""flockd: the Python client library of the flockd flocking server.

    import flockd
    with flockd.connect("ws://127.0.0.1:8080/ws", room="lab", role="admin") as c:
        c.spawn(n=200, group=1, x=800, y=500)
        for snap in c.snapshots(seconds=10):
            print(snap.tick, snap.polarization(group=1))

`connect()` gives a blocking client (blocking.py), `connect_async()` the
asyncio one (client.py); both have one method per command of the protocol
(proto/PROTOCOL.md §5, generated from schema.json), check every command
before sending it, decode snapshots of every version (decode.py,
decode_v3.py) into
Snapshot objects (snapshot.py) and reconnect by themselves. README.md
beside this package is the guide.
"""

from . import decode_v3, squads
from .blocking import BlockingClient, connect
from .client import Backoff, Client, Event, Snapshots, connect_async
from .decode import Decoder, Frame
from .errors import (BadArgument, BadJson, BadRoom, Capacity, CommandError, ConnectError,
                     ConnectionLost, FlockdError, Forbidden, InternalError, NotFound, NotJoined,
                     OutOfRange, QueueFull, RateLimited, Refused, SnapshotError, Timeout,
                     TooLarge, Unavailable, UnknownCommand)
from .messages import (Ack, Availability, Dilation, Game, Message, Roster, ScriptStatus, Squads,
                       Stats, Welcome)
from .snapshot import Obstacle, Snapshot, Target

__version__ = "0.1.0"

__all__ = [
    "Ack", "Availability", "Backoff", "BadArgument", "BadJson", "BadRoom", "BlockingClient",
    "Capacity", "Client", "CommandError", "ConnectError", "ConnectionLost", "Decoder", "Dilation",
    "Event",
    "FlockdError", "Forbidden", "Frame", "Game", "InternalError", "Message", "NotFound",
    "NotJoined", "Obstacle", "OutOfRange", "QueueFull", "RateLimited", "Refused", "Roster",
    "ScriptStatus", "Snapshot", "SnapshotError", "Snapshots", "Squads", "Stats", "Target",
    "Timeout", "TooLarge", "Unavailable", "UnknownCommand", "Welcome",
    "connect", "connect_async", "decode_v3", "squads",
]
