"""One case of two fusions (an elementwise chain and a row reduction); PLANT_SLOW=1 lengthens
the elementwise chain only, a regression in one fusion of a multi-kernel case."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import tile_runner as tile

_EXTRA = 24 if os.environ.get("PLANT_SLOW") == "1" else 0


def _reference(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2 + jnp.sum(jnp.cos(x), axis=1, keepdims=True)


@tile.kernel(
    "planted/two_fusions",
    reference=_reference,
    inputs=lambda case, key: (tile.normal(key, case.shape, case.dtype),),
    bench=tile.axes(shape=[(8192, 8192)], dtype=["float32"]),
    tol={"float32": 1e-2},
)
def two_fusions(x: jax.Array) -> jax.Array:
    y = jnp.sin(x)
    for _ in range(_EXTRA):  # more arithmetic in the same elementwise fusion, same result
        y = jnp.sin(jnp.arcsin(y))
    return y * 2 + jnp.sum(jnp.cos(x), axis=1, keepdims=True)
