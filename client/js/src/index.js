// flockd-client: the JavaScript client library of flockd, one ES module
// for browsers and node. connect() and the Client (client.js), the errors
// it throws (errors.js), typed snapshots (snapshot.js), the schema's
// validator (validate.js), the reconnecting connection the viewer runs on
// (connection.js), the snapshot decoders of every protocol version
// (decoder.js, decoder_v2.js, decode_v3.js, inflate.js) and the squads'
// formation slots (squads.js).

export {
  connect, Client, CLIENT_BACKOFF, methodName, socketUrl, webSocketClass,
} from './client.js';
export { FlockdError, CommandError, ConnectionError } from './errors.js';
export { Snapshot } from './snapshot.js';
export {
  validateCommand, boundValue, COMMANDS, OPEN_ARGS_MAX, schema,
} from './validate.js';
export {
  Connection, OFFER, VIEWER_BACKOFF, backoffDelay, versionOf, offerFor,
} from './connection.js';
export {
  decodeSnapshot, decodeAnySnapshot, SnapshotError, SUBPROTOCOL, PROTOCOL_VERSION,
} from './decoder.js';
export {
  FrameDecoderV2, SUBPROTOCOL_V2, PROTOCOL_VERSION_V2, parseFrameV2, stateHashV2,
} from './decoder_v2.js';
export {
  FrameDecoderV3, SUBPROTOCOL_V3, PROTOCOL_VERSION_V3, FLAG_FOGGED, FLAG_DELAYED, mix, inSample, gridAt, tileHash,
} from './decode_v3.js';
export { inflateBody } from './inflate.js';
export {
  slots, slotOffsets, entrySlots, slotFit, SHAPES,
} from './squads.js';
