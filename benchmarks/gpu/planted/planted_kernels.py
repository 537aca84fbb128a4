"""One case of two kernels (a gemm, then a softmax fusion of its rows); PLANT_SLOW=1 puts more
arithmetic into the softmax fusion only: a regression in one kernel of a multi-kernel case."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import tile_runner as tile

_EXTRA = 4 if os.environ.get("PLANT_SLOW") == "1" else 0


def _reference(a: jax.Array, b: jax.Array) -> jax.Array:
    # Logits of about unit scale (K = 4096 sums of products of unit normals, over 64): a
    # softmax of them is not so sharp that the gemm's bf16 rounding decides the output.
    return jax.nn.softmax((a @ b).astype(jnp.float32) / 64.0, axis=-1)


@tile.kernel(
    "planted/gemm_softmax",
    reference=_reference,
    inputs=lambda case, key: (
        tile.normal(key, case.shape, case.dtype),
        tile.normal(jax.random.fold_in(key, 1), case.shape, case.dtype),
    ),
    bench=tile.axes(shape=[(4096, 4096)], dtype=["bfloat16"]),
    tol={"float32": 2e-2},  # the output's dtype: the softmax is taken in float32
)
def gemm_softmax(a: jax.Array, b: jax.Array) -> jax.Array:
    logits = (a @ b).astype(jnp.float32) / 64.0
    for _ in range(_EXTRA):  # more arithmetic in the softmax's fusion, the same values
        logits = jnp.arcsin(jnp.sin(logits / 4.0)) * 4.0
    return jax.nn.softmax(logits, axis=-1)
