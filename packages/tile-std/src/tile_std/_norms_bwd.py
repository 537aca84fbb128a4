"""The backward of RMSNorm as a Pallas kernel of whole rows (the forward is in _norms.py).

With r = rsqrt(mean(x^2) + eps) per row and u = g * w, the gradients are

    dx = r * u - x * r^3 * mean(u * x)        (per row)
    dw = sum over rows of g * x * r

Each program computes dx for its rows and its rows' share of dw; the shares (one row of
float32 per program) are summed outside the kernel, so no two programs write one element.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from ._pallas import as_rows, compiler_params, interpret_mode, load, row_tiling, span, store

__all__ = ["rmsnorm_backward"]


def _rmsnorm_bwd_kernel(
    x_ref: jax.Array,
    w_ref: jax.Array,
    g_ref: jax.Array,
    dx_ref: jax.Array,
    dw_ref: jax.Array,
    *,
    n_rows: int,
    n_cols: int,
    eps: float,
) -> None:
    block_rows, block_cols = x_ref.shape
    cols = span(0, block_cols, 1, 2)
    col_mask = None if n_cols == block_cols else jnp.arange(block_cols) < n_cols
    mask = None
    if n_rows % block_rows or col_mask is not None:
        rows = span(pl.program_id(0), block_rows, 0, 2)
        mask = (rows < n_rows) & (cols < n_cols)
    # Rows and columns past the array's end load as 0: they add nothing to any sum below.
    x = load(x_ref, mask).astype(jnp.float32)
    g = load(g_ref, mask).astype(jnp.float32)
    w = load(w_ref, col_mask).astype(jnp.float32)[None, :]
    r = lax.rsqrt(jnp.sum(x * x, axis=1, keepdims=True) / n_cols + eps)
    u = g * w
    c = jnp.sum(u * x, axis=1, keepdims=True) / n_cols
    dx = r * u - x * (r * r * r) * c
    store(dx_ref, dx.astype(dx_ref.dtype), mask)
    dw_ref[...] = jnp.sum(g * x * r, axis=0)[None, :]


def rmsnorm_backward(
    x: jax.Array, weight: jax.Array, g: jax.Array, *, eps: float
) -> tuple[jax.Array, jax.Array]:
    """`(dx, dweight)` of RMSNorm at `x` for the cotangent `g`, in x's and weight's dtypes."""
    rows, g_rows = as_rows(x), as_rows(g.astype(x.dtype))
    n_rows, n_cols = rows.shape
    if rows.size == 0:
        return jnp.zeros_like(x), jnp.zeros_like(weight)
    interpret = interpret_mode()
    t = row_tiling("std/rmsnorm", n_rows, n_cols, interpret=interpret)
    grid = pl.cdiv(n_rows, t.block_rows)

    def row_block(i: jax.Array) -> tuple[jax.Array, int]:
        return i, 0

    def whole(i: jax.Array) -> tuple[int]:
        return (0,)

    x_spec = pl.BlockSpec((t.block_rows, t.block_cols), row_block)
    dx, dw_parts = pl.pallas_call(
        functools.partial(_rmsnorm_bwd_kernel, n_rows=n_rows, n_cols=n_cols, eps=eps),
        out_shape=(
            jax.ShapeDtypeStruct(rows.shape, x.dtype),
            jax.ShapeDtypeStruct((grid, t.block_cols), jnp.float32),
        ),
        grid=(grid,),
        in_specs=[x_spec, pl.BlockSpec((t.block_cols,), whole), x_spec],
        out_specs=(x_spec, pl.BlockSpec((1, t.block_cols), row_block)),
        interpret=interpret,
        compiler_params=compiler_params(t.num_warps, 1),
        name="std_rmsnorm_bwd",
    )(rows, weight, g_rows)
    dw = jnp.sum(dw_parts, axis=0)[:n_cols].astype(weight.dtype)
    return dx.reshape(x.shape), dw
