"""What the GPU sweep scripts share: jax.jit typed, and the block maps of a row kernel."""

from __future__ import annotations

from collections.abc import Callable

import jax


def jitted(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """jax.jit(fn), typed (jax.jit's signature names jaxlib's Device, which has no types)."""
    return jax.jit(fn)  # pyright: ignore[reportUnknownMemberType]


def row_block(i: jax.Array) -> tuple[jax.Array, int]:
    """Block i of whole rows."""
    return i, 0


def whole_vector(i: jax.Array) -> tuple[int]:
    """The whole parameter vector, for every block."""
    return (0,)
