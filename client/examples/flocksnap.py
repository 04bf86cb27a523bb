"""flocksnap: decode flockd snapshots, version 1 and version 2.

The decoder now lives in the flockd Python library (client/python,
`flockd.decode`; `flockd.Decoder` decodes with numpy when it is installed).
This module keeps scripts that `import flocksnap` from beside it working:
the same names, decoding boid by boid without numpy into `array` arrays as
it always did (a Snapshot here is a flockd.decode.Frame).

    import flocksnap
    dec = flocksnap.Decoder()
    snap = dec.decode(message)            # a Snapshot, or SnapshotError
    dec.forget()                          # after a welcome: a new stream
"""

import os
import sys

try:
    import flockd.decode as _decode
except ImportError:  # the source tree, the library not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import flockd.decode as _decode

from flockd.decode import (FLAG_PAUSED, FLAG_WRAP, HISTORY, KIND_DELTA, KIND_KEY,
                           OCTANT_TURNS, SnapshotError, aspect_weights, heading_of,
                           inflate_body, state_hash)

Snapshot = _decode.Frame

__all__ = ["Decoder", "FLAG_PAUSED", "FLAG_WRAP", "HISTORY", "KIND_DELTA", "KIND_KEY",
           "OCTANT_TURNS", "Snapshot", "SnapshotError", "aspect_weights", "decode_v1",
           "heading_of", "inflate_body", "state_hash"]


class Decoder(_decode.Decoder):
    """flockd.decode.Decoder without numpy."""

    def __init__(self, max_boids=1 << 22):
        super().__init__(max_boids=max_boids, numpy=False)


def decode_v1(buf):
    """Decodes a version 1 snapshot (PROTOCOL.md 4) into a Snapshot."""
    return _decode.decode_v1(buf, use_np=False)
