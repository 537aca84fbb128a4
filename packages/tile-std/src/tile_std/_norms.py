"""RMSNorm and LayerNorm over the last axis: jnp references and Pallas kernels of whole rows."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

import tile_runner as tile

from ._errors import KernelInputError
from ._pallas import (
    CaseLike,
    as_rows,
    compiler_params,
    interpret_mode,
    load,
    row_tiling,
    span,
    store,
)

__all__ = [
    "LAYERNORM_EPS",
    "RMSNORM_EPS",
    "layernorm",
    "layernorm_bytes",
    "layernorm_flops",
    "layernorm_jnp",
    "layernorm_ref",
    "rmsnorm",
    "rmsnorm_bytes",
    "rmsnorm_flops",
    "rmsnorm_ref",
]

RMSNORM_EPS = 1e-6
LAYERNORM_EPS = 1e-5


def _masks(
    block_rows: int, block_cols: int, n_rows: int, n_cols: int
) -> tuple[jax.Array | None, jax.Array | None]:
    """(block mask, 1-D column mask), each None when that edge never crosses the array's end."""
    cols = span(0, block_cols, 1, 2)
    col_mask = None if n_cols == block_cols else jnp.arange(block_cols) < n_cols
    if n_rows % block_rows == 0 and col_mask is None:
        return None, None
    rows = span(pl.program_id(0), block_rows, 0, 2)
    return (rows < n_rows) & (cols < n_cols), col_mask


def _rmsnorm_kernel(
    x_ref: jax.Array, w_ref: jax.Array, o_ref: jax.Array, *, n_rows: int, n_cols: int, eps: float
) -> None:
    block_rows, block_cols = x_ref.shape
    mask, col_mask = _masks(block_rows, block_cols, n_rows, n_cols)
    x = load(x_ref, mask).astype(jnp.float32)
    w = load(w_ref, col_mask).astype(jnp.float32)[None, :]
    # Padded columns load as 0, so they add nothing to the sum; divide by the true width.
    mean_sq = jnp.sum(x * x, axis=1, keepdims=True) / n_cols
    y = x * lax.rsqrt(mean_sq + eps) * w
    store(o_ref, y.astype(o_ref.dtype), mask)


def _layernorm_kernel(
    x_ref: jax.Array,
    w_ref: jax.Array,
    b_ref: jax.Array,
    o_ref: jax.Array,
    *,
    n_rows: int,
    n_cols: int,
    eps: float,
) -> None:
    block_rows, block_cols = x_ref.shape
    mask, col_mask = _masks(block_rows, block_cols, n_rows, n_cols)
    x = load(x_ref, mask).astype(jnp.float32)
    w = load(w_ref, col_mask).astype(jnp.float32)[None, :]
    b = load(b_ref, col_mask).astype(jnp.float32)[None, :]
    mean = jnp.sum(x, axis=1, keepdims=True) / n_cols
    centered = x - mean
    if col_mask is not None:
        # Padded columns would contribute mean**2 each to the variance.
        centered = jnp.where(col_mask[None, :], centered, 0.0)
    var = jnp.sum(centered * centered, axis=1, keepdims=True) / n_cols
    y = centered * lax.rsqrt(var + eps) * w + b
    store(o_ref, y.astype(o_ref.dtype), mask)


def _check_params(kernel: str, x: jax.Array, *params: jax.Array) -> None:
    for p in params:
        if p.shape != (x.shape[-1],):
            raise KernelInputError(
                kernel,
                f"parameter of shape {p.shape} does not match hidden size {x.shape[-1]}",
                hint="weight and bias are 1-D with the size of x's last axis",
            )


def _row_call(
    name: str,
    kernel: Callable[..., None],
    x: jax.Array,
    params: tuple[jax.Array, ...],
    *,
    block_rows: int | None,
    num_warps: int | None,
    eps: float,
) -> jax.Array:
    rows = as_rows(x)
    n_rows, n_cols = rows.shape
    if rows.size == 0:
        return jnp.empty_like(x)
    interpret = interpret_mode()
    t = row_tiling(
        f"std/{name}",
        n_rows,
        n_cols,
        interpret=interpret,
        block_rows=block_rows,
        num_warps=num_warps,
    )

    def row_block(i: jax.Array) -> tuple[jax.Array, int]:
        return i, 0

    def whole(i: jax.Array) -> tuple[int]:
        return (0,)

    x_spec = pl.BlockSpec((t.block_rows, t.block_cols), row_block)
    p_spec = pl.BlockSpec((t.block_cols,), whole)
    out = pl.pallas_call(
        functools.partial(kernel, n_rows=n_rows, n_cols=n_cols, eps=eps),
        out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype),
        grid=(pl.cdiv(n_rows, t.block_rows),),
        in_specs=[x_spec] + [p_spec] * len(params),
        out_specs=x_spec,
        interpret=interpret,
        compiler_params=compiler_params(t.num_warps, 1),
        name=f"std_{name}",
    )(rows, *params)
    return out.reshape(x.shape)


def _two_rows_eight_warps(x: jax.Array) -> bool:
    """LayerNorm's tiling for 16-bit rows of up to 8192 on a GPU, measured on the H200.

    benchmarks/gpu/norm_sweep.py: at 16384x8192 bfloat16 two rows and 8 warps per program
    took 154 µs against 196 µs for the shared row tiling (one row, 16 warps) and 161 µs for
    XLA; at 4096x4096, 20.1 µs against 21.9 µs. For float32 the shared tiling was within 2% of
    the best, so it stays.
    """
    return not interpret_mode() and x.dtype.itemsize == 2 and x.shape[-1] <= 8192


@tile.recorded("std/rmsnorm")  # its calls are `std/rmsnorm`'s cases for `--from`
def rmsnorm(
    x: jax.Array,
    weight: jax.Array,
    *,
    eps: float = RMSNORM_EPS,
    block_rows: int | None = None,
    num_warps: int | None = None,
) -> jax.Array:
    """x * rsqrt(mean(x^2) + eps) * weight over the last axis; block_rows whole rows per program."""
    _check_params("std/rmsnorm", x, weight)
    return _row_call(
        "rmsnorm",
        _rmsnorm_kernel,
        x,
        (weight,),
        block_rows=block_rows,
        num_warps=num_warps,
        eps=eps,
    )


@tile.recorded("std/layernorm")  # its calls are `std/layernorm`'s cases for `--from`
def layernorm(
    x: jax.Array,
    weight: jax.Array,
    bias: jax.Array,
    *,
    eps: float = LAYERNORM_EPS,
    block_rows: int | None = None,
    num_warps: int | None = None,
) -> jax.Array:
    """(x - mean) * rsqrt(var + eps) * weight + bias over the last axis; whole rows per program."""
    _check_params("std/layernorm", x, weight, bias)
    if block_rows is None and num_warps is None and _two_rows_eight_warps(x):
        block_rows, num_warps = 2, 8
    params = (weight, bias)
    return _row_call(
        "layernorm",
        _layernorm_kernel,
        x,
        params,
        block_rows=block_rows,
        num_warps=num_warps,
        eps=eps,
    )


def rmsnorm_ref(x: jax.Array, weight: jax.Array, *, eps: float = RMSNORM_EPS) -> jax.Array:
    """Reference RMSNorm in float32 (jnp)."""
    xf = x.astype(jnp.float32)
    y = xf * lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (y * weight.astype(jnp.float32)).astype(x.dtype)


def layernorm_ref(
    x: jax.Array, weight: jax.Array, bias: jax.Array, *, eps: float = LAYERNORM_EPS
) -> jax.Array:
    """Reference LayerNorm in float32 (jnp)."""
    xf = x.astype(jnp.float32)
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    y = (xf - mean) * lax.rsqrt(var + eps)
    return (y * weight.astype(jnp.float32) + bias.astype(jnp.float32)).astype(x.dtype)


def layernorm_jnp(x: jax.Array, weight: jax.Array, bias: jax.Array) -> jax.Array:
    """LayerNorm in jnp as XLA fuses it: op `layernorm`'s baseline implementation, which the
    Pallas kernel (`std/layernorm`) is timed against."""
    return layernorm_ref(x, weight, bias)


def rmsnorm_bytes(case: CaseLike) -> float:
    """Read x and the weight, write y."""
    return (2.0 * case.size + case.shape[-1]) * case.itemsize


def rmsnorm_flops(case: CaseLike) -> float:
    """Per element: square, sum, scale by the row's rsqrt, multiply by the weight."""
    return 4.0 * case.size


def layernorm_bytes(case: CaseLike) -> float:
    """Read x, the weight and the bias, write y."""
    return (2.0 * case.size + 2.0 * case.shape[-1]) * case.itemsize


def layernorm_flops(case: CaseLike) -> float:
    """Per element: sum, subtract the mean, square, sum, scale, multiply by weight, add bias."""
    return 7.0 * case.size
