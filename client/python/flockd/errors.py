"""Every error the flockd library raises.

FlockdError is the base of them all. A command refused, by the server or by
the library before it was sent (it checks each command against the schema
as the server would, proto/PROTOCOL.md §5), raises a CommandError subclass
named after the wire's error code (PROTOCOL.md §7.1): `code` is that code,
`message` the server's text (or the library's, worded like it), `command`
the command's name and `client_side` whether it was refused before it was
sent. An error code this library does not know raises CommandError itself,
as §2 asks of clients.
"""


class FlockdError(Exception):
    """The base of every error of this library."""


class ConnectError(FlockdError):
    """The server could not be reached, refused the WebSocket handshake, or
    did not send its welcome in time."""


class ConnectionLost(FlockdError):
    """The connection closed while a command waited for its reply (it may or
    may not have been applied), or closed for good (no reconnecting)."""


class Timeout(FlockdError, TimeoutError):
    """No reply, or no snapshot, within the time allowed."""


class SnapshotError(FlockdError, ValueError):
    """A refused snapshot frame; `code` is the decoder status name of
    PROTOCOL.md §4.6 and §11.7 (truncated, bad_value, no_base, ...)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


class CommandError(FlockdError):
    """A command refused. Subclasses stand for the wire's error codes."""

    code = None

    def __init__(self, message, command=None, code=None, client_side=False):
        self.code = code or type(self).code or "unknown"
        self.message = message
        self.command = command
        self.client_side = client_side
        where = "refused before sending" if client_side else "refused"
        super().__init__(f"{command or 'command'} {where} ({self.code}): {message}")


class BadJson(CommandError):
    code = "bad_json"


class TooLarge(CommandError):
    code = "too_large"


class UnknownCommand(CommandError):
    code = "unknown_cmd"


class BadArgument(CommandError):
    code = "bad_arg"


class OutOfRange(CommandError):
    code = "out_of_range"


class Capacity(CommandError):
    code = "capacity"


class NotFound(CommandError):
    code = "not_found"


class QueueFull(CommandError):
    code = "queue_full"


class RateLimited(CommandError):
    code = "rate_limited"


class Forbidden(CommandError):
    code = "forbidden"


class NotJoined(CommandError):
    code = "not_joined"


class BadRoom(CommandError):
    code = "bad_room"


class InternalError(CommandError):
    code = "internal"


class Refused(CommandError):
    """The room's script refused a `game` command (or is disabled): the
    message is the script's reason (PROTOCOL.md §14.2)."""

    code = "refused"


class Unavailable(CommandError):
    """A cluster room could not make the command durable (its command log
    could not store it, or its owner was lost before it answered): it did
    not take effect, and may be sent again (PROTOCOL.md §7.1)."""

    code = "unavailable"


BY_CODE = {cls.code: cls for cls in (
    BadJson, TooLarge, UnknownCommand, BadArgument, OutOfRange, Capacity, NotFound, QueueFull,
    RateLimited, Forbidden, NotJoined, BadRoom, InternalError, Refused, Unavailable)}


def command_error(code, message, command=None, client_side=False):
    """The CommandError of `code` (CommandError itself for a code this
    library does not know)."""
    cls = BY_CODE.get(code, CommandError)
    return cls(message, command=command, code=code, client_side=client_side)
