"""Small arrays are handled on the host, not by a program compiled for each shape."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["HOST_ELEMENTS", "on_host"]

HOST_ELEMENTS = 1 << 20
"""Outputs of at most this many elements are compared on the host (`tile_runner._figures`),
and inputs of at most this many are cut to shape there (`tile_runner._inputs`): 4 MB of
float32, a copy of a millisecond or so, against a program compiled, or read from the cache,
for every shape."""


def on_host(shape: Sequence[int]) -> bool:
    """Whether an array of `shape` is small enough to be handled on the host."""
    return math.prod(int(d) for d in shape) <= HOST_ELEMENTS
