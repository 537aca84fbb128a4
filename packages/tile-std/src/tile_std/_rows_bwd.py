"""Backward kernels of softmax, RMSNorm and LayerNorm over the last axis (forwards: _softmax.py,
_norms.py), each a Pallas kernel of whole rows.

Per row, with n the row's width, u = g * w (g the cotangent, w the weight) and means over the row:

    softmax    y = softmax(x)                    dx = y * (g - sum(g * y))
    RMSNorm    r = rsqrt(mean(x^2) + eps)        dx = r * u - x * r^3 * mean(u * x)
    LayerNorm  xh = (x - mean(x)) * r,           dx = r * (u - mean(u) - xh * mean(u * xh))
               r = rsqrt(var(x) + eps)

and over all rows dw = sum(g * x * r) (RMSNorm), dw = sum(g * xh) and db = sum(g) (LayerNorm).
The forward's statistics are recomputed from x: that costs a few flops per element but no
memory traffic, and the residuals stay the inputs.

The weight's gradient is a sum over every row. Each program loops over a contiguous run of
row blocks, keeps its share of the sums in registers and writes it as one float32 row; the
shares (a few hundred rows, not one per row block) are summed outside the kernel, so no two
programs write one element and the extra traffic stays small beside x's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from ._pallas import (
    as_rows,
    compiler_params,
    fori_loop,
    interpret_mode,
    load,
    row_tiling,
    span,
    store,
)

__all__ = ["layernorm_backward", "rmsnorm_backward", "softmax_backward"]

# Programs of the backward grid on a GPU (the H100 and H200 have 132 SMs). Each program writes
# one float32 row per parameter gradient, summed afterwards, so the norms take one program per
# SM; softmax has no parameters and takes 4 per SM. Swept by benchmarks/gpu/grad_sweep.py on an
# H100 (2026-12-05): 132 programs cut the norms' backward by 1-16% against 528 at 4096x4096
# and 16384x8192, while softmax ran 10-31% slower with 132 than with 528.
_GPU_PROGRAMS = 132
_GPU_PROGRAMS_NO_PARAMS = 4 * 132
# Interpreted: few programs, so the CPU suite still loops over several row blocks per program.
_INTERPRET_PROGRAMS = 4


@dataclass(frozen=True)
class _Row:
    """One block of rows as the math sees it: x and g in float32, the parameters as (1, cols),
    the column mask (None when the block has no padded columns) and the true row width."""

    x: jax.Array
    g: jax.Array
    params: tuple[jax.Array, ...]
    col_mask: jax.Array | None
    n_cols: int
    eps: float


Body = Callable[[_Row], tuple[jax.Array, tuple[jax.Array, ...]]]
"""dx of a block of rows and its shares of the parameter gradients (each a (cols,) sum)."""


def _softmax_body(r: _Row) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    x = r.x if r.col_mask is None else jnp.where(r.col_mask[None, :], r.x, -jnp.inf)
    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    y = e / jnp.sum(e, axis=1, keepdims=True)
    return y * (r.g - jnp.sum(r.g * y, axis=1, keepdims=True)), ()


def _rmsnorm_body(r: _Row) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    (w,) = r.params
    # Padded columns load as 0: they add nothing to either sum.
    rs = lax.rsqrt(jnp.sum(r.x * r.x, axis=1, keepdims=True) / r.n_cols + r.eps)
    u = r.g * w
    c = jnp.sum(u * r.x, axis=1, keepdims=True) / r.n_cols
    dx = rs * u - r.x * (rs * rs * rs) * c
    return dx, (jnp.sum(r.g * r.x * rs, axis=0),)


def _layernorm_body(r: _Row) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    (w,) = r.params
    centered = r.x - jnp.sum(r.x, axis=1, keepdims=True) / r.n_cols
    if r.col_mask is not None:
        centered = jnp.where(r.col_mask[None, :], centered, 0.0)
    rs = lax.rsqrt(jnp.sum(centered * centered, axis=1, keepdims=True) / r.n_cols + r.eps)
    xh = centered * rs
    u = r.g * w
    mean_u = jnp.sum(u, axis=1, keepdims=True) / r.n_cols
    mean_uxh = jnp.sum(u * xh, axis=1, keepdims=True) / r.n_cols
    dx = rs * (u - mean_u - xh * mean_uxh)
    return dx, (jnp.sum(r.g * xh, axis=0), jnp.sum(r.g, axis=0))


@dataclass(frozen=True)
class _Plan:
    """What every program knows at trace time: the sizes and its run of row blocks."""

    n_rows: int
    n_cols: int
    block_rows: int
    blocks_per_program: int
    n_params: int
    eps: float


def _bwd_kernel(*refs: jax.Array, body: Body, plan: _Plan) -> None:
    x_ref, g_ref = refs[0], refs[1]
    param_refs = refs[2 : 2 + plan.n_params]
    dx_ref, share_refs = refs[2 + plan.n_params], refs[3 + plan.n_params :]
    block_cols = x_ref.shape[1]
    cols = span(0, block_cols, 1, 2)
    col_mask = None if plan.n_cols == block_cols else jnp.arange(block_cols) < plan.n_cols
    params = tuple(load(p, col_mask).astype(jnp.float32)[None, :] for p in param_refs)
    first = pl.program_id(0) * plan.blocks_per_program

    def step(i: jax.Array, shares: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        block = first + i
        rs = pl.ds(pl.multiple_of(block * plan.block_rows, plan.block_rows), plan.block_rows)
        # Rows past the array's end (the last programs' runs) load as 0 and add nothing.
        mask = (span(block, plan.block_rows, 0, 2) < plan.n_rows) & (cols < plan.n_cols)
        x = load(x_ref.at[rs, :], mask).astype(jnp.float32)
        g = load(g_ref.at[rs, :], mask).astype(jnp.float32)
        dx, mine = body(_Row(x, g, params, col_mask, plan.n_cols, plan.eps))
        store(dx_ref.at[rs, :], dx.astype(dx_ref.dtype), mask)
        return tuple(s + m for s, m in zip(shares, mine, strict=True))

    init = tuple(jnp.zeros((block_cols,), jnp.float32) for _ in share_refs)
    shares = fori_loop(0, plan.blocks_per_program, step, init)
    for ref, share in zip(share_refs, shares, strict=True):
        ref[...] = share[None, :]


@dataclass(frozen=True)
class RowBackward:
    """A row backward to run: its name, its math and its epsilon."""

    name: str
    body: Body
    eps: float = 0.0


def _row_backward(
    op: RowBackward,
    x: jax.Array,
    g: jax.Array,
    params: tuple[jax.Array, ...],
    grads_like: tuple[jax.Array, ...],
    *,
    block_rows: int | None = None,
    num_warps: int | None = None,
    programs: int | None = None,
) -> tuple[jax.Array, ...]:
    """`(dx, *parameter gradients)`: dx in x's dtype, each parameter gradient shaped and typed as
    its entry of `grads_like` (the kernel reads only `params`)."""
    rows, g_rows = as_rows(x), as_rows(g.astype(x.dtype))
    n_rows, n_cols = rows.shape
    if rows.size == 0:
        return (jnp.zeros_like(x), *(jnp.zeros_like(p) for p in grads_like))
    interpret = interpret_mode()
    sizes = {"block_rows": block_rows, "num_warps": num_warps}
    t = row_tiling(f"std/{op.name}", n_rows, n_cols, interpret=interpret, **sizes)
    n_blocks = pl.cdiv(n_rows, t.block_rows)
    on_gpu = _GPU_PROGRAMS if params else _GPU_PROGRAMS_NO_PARAMS
    wanted = programs or (_INTERPRET_PROGRAMS if interpret else on_gpu)
    per_program = pl.cdiv(n_blocks, min(wanted, n_blocks))
    grid = pl.cdiv(n_blocks, per_program)
    plan = _Plan(n_rows, n_cols, t.block_rows, per_program, len(params), op.eps)

    def whole(i: jax.Array) -> tuple[int, ...]:
        return 0, 0

    def vector(i: jax.Array) -> tuple[int]:
        return (0,)

    def share_row(i: jax.Array) -> tuple[jax.Array, int]:
        return i, 0

    # Every program sees all rows (padded to whole runs) and slices its own run of blocks.
    x_spec = pl.BlockSpec((grid * per_program * t.block_rows, t.block_cols), whole)
    outs = pl.pallas_call(
        functools.partial(_bwd_kernel, body=op.body, plan=plan),
        out_shape=(
            jax.ShapeDtypeStruct(rows.shape, x.dtype),
            *[jax.ShapeDtypeStruct((grid, t.block_cols), jnp.float32)] * len(grads_like),
        ),
        grid=(grid,),
        in_specs=[x_spec, x_spec, *[pl.BlockSpec((t.block_cols,), vector)] * len(params)],
        out_specs=(x_spec, *[pl.BlockSpec((1, t.block_cols), share_row)] * len(grads_like)),
        interpret=interpret,
        compiler_params=compiler_params(t.num_warps, 1),
        name=f"std_{op.name}_bwd",
    )(rows, g_rows, *params)
    dx, shares = outs[0], outs[1:]
    grads = (
        jnp.sum(s, axis=0)[:n_cols].astype(p.dtype) for s, p in zip(shares, grads_like, strict=True)
    )
    return (dx.reshape(x.shape), *grads)


def softmax_backward(x: jax.Array, g: jax.Array, **tiling: int | None) -> jax.Array:
    """dx of softmax over the last axis at `x` for the cotangent `g`, in x's dtype."""
    (dx,) = _row_backward(RowBackward("softmax", _softmax_body), x, g, (), (), **tiling)
    return dx


def rmsnorm_backward(
    x: jax.Array, weight: jax.Array, g: jax.Array, *, eps: float, **tiling: int | None
) -> tuple[jax.Array, jax.Array]:
    """`(dx, dweight)` of RMSNorm at `x` for the cotangent `g`, in x's and weight's dtypes."""
    op = RowBackward("rmsnorm", _rmsnorm_body, eps)
    dx, dw = _row_backward(op, x, g, (weight,), (weight,), **tiling)
    return dx, dw


def layernorm_backward(
    x: jax.Array,
    weight: jax.Array,
    bias: jax.Array,
    g: jax.Array,
    *,
    eps: float,
    **tiling: int | None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`(dx, dweight, dbias)` of LayerNorm at `x` for the cotangent `g`, in the inputs' dtypes."""
    op = RowBackward("layernorm", _layernorm_body, eps)
    # The bias does not enter dx: the kernel reads the weight only.
    dx, dw, db = _row_backward(op, x, g, (weight,), (weight, bias), **tiling)
    return dx, dw, db
