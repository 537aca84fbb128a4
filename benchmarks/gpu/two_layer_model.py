"""A two-layer model of tile-std kernels at a real size, for `run_h200.sh` step `from` (issue
34, real shapes): `tile tune --from two_layer_model:example` captures its kernel calls, tunes
and benches them in one command; `tile bench --cases` benches them again with the winners.

Each layer: RMSNorm, causal self-attention (16 heads of 128), the output projection (matmul),
then LayerNorm of the residual, in bfloat16 over 2048 tokens of width 2048.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

import tile_std

SEQ, HEADS, HEAD_DIM = 2048, 16, 128
HIDDEN = HEADS * HEAD_DIM


def _layer(x: jax.Array, params: tuple[jax.Array, ...]) -> jax.Array:
    w_norm, w_out, bias = params
    h = tile_std.rmsnorm(x, w_norm)
    heads = h.reshape(1, SEQ, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)
    a = tile_std.attention(heads, heads, heads, True)
    a = a.transpose(0, 2, 1, 3).reshape(SEQ, HIDDEN)
    return tile_std.layernorm(x + tile_std.matmul(a, w_out), w_norm, bias)


@jax.jit  # pyright: ignore[reportUnknownMemberType]
def model(x: jax.Array, layers: list[tuple[jax.Array, ...]]) -> jax.Array:
    for params in layers:
        x = _layer(x, params)
    return x


def example() -> tuple[Any, ...]:
    """The program and its inputs as shapes: tracing it allocates nothing."""
    bf16 = jnp.bfloat16
    vector = jax.ShapeDtypeStruct((HIDDEN,), bf16)
    matrix = jax.ShapeDtypeStruct((HIDDEN, HIDDEN), bf16)
    layers = [(vector, matrix, vector), (vector, matrix, vector)]
    return model, (jax.ShapeDtypeStruct((SEQ, HIDDEN), bf16), layers)
