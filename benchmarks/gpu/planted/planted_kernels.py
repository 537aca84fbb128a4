"""One case of two kernels (a gemm, then a softmax fusion of its rows); PLANT_SLOW=1 puts more
arithmetic into the softmax fusion only: a regression in one kernel of a multi-kernel case."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import tile_runner as tile

_EXTRA = 4 if os.environ.get("PLANT_SLOW") == "1" else 0


def _reference(a: jax.Array, b: jax.Array) -> jax.Array:
    return jax.nn.softmax((a @ b).astype(jnp.float32), axis=-1)


@tile.kernel(
    "planted/gemm_softmax",
    reference=_reference,
    inputs=lambda case, key: (
        tile.normal(key, case.shape, case.dtype),
        tile.normal(jax.random.fold_in(key, 1), case.shape, case.dtype),
    ),
    bench=tile.axes(shape=[(4096, 4096)], dtype=["bfloat16"]),
    tol={"bfloat16": 2e-2},
)
def gemm_softmax(a: jax.Array, b: jax.Array) -> jax.Array:
    logits = (a @ b).astype(jnp.float32) / 64.0
    for _ in range(_EXTRA):  # more arithmetic in the softmax's fusion, same values
        logits = jnp.arcsin(jnp.sin(logits / 64.0)) * 64.0
    return jax.nn.softmax(logits * 64.0, axis=-1)
