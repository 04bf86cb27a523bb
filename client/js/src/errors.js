// The errors the client library throws. Every one is a FlockdError with a
// stable `code`: a CommandError carries the server's error code (or the
// one the server would give, when the library refused the command before
// sending it: `local` is then true); a ConnectionError says why there was
// no reply ('closed', 'disconnected', 'timeout', 'connect_failed', or
// 'closed_by_server': closed with 1008, kicked or too slow). No I/O.

export class FlockdError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'FlockdError';
    this.code = code;
  }
}

/**
 * A command refused: `code` is a wire error code (proto/PROTOCOL.md §7.1),
 * `message` names the command and field, `command` the command's name,
 * `local` whether the library refused it before sending (the server never
 * saw it) rather than the server.
 */
export class CommandError extends FlockdError {
  constructor(code, message, { command = null, local = false } = {}) {
    super(code, message);
    this.name = 'CommandError';
    this.command = command;
    this.local = local;
  }
}

/** No reply can come: the client was closed, the connection dropped or was closed by the server, or a reply took too long. */
export class ConnectionError extends FlockdError {
  constructor(code, message) {
    super(code, message);
    this.name = 'ConnectionError';
  }
}
