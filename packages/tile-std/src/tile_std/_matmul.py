"""Matrix product: jnp reference and a tiled Pallas kernel with a K loop, f32 accumulation.

On an sm90 GPU, 2-byte inputs whose shape the tile divides go to the Mosaic GPU kernel of
_matmul_hopper.py instead (wgmma, TMA, warp roles), unless a Triton tiling is asked for."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import tile_runner as tile

from ._errors import KernelInputError
from ._matmul_hopper import HopperTiling, hopper_fits, hopper_matmul, on_hopper
from ._pallas import (
    CaseLike,
    compiler_params,
    fori_loop,
    interpret_mode,
    load,
    next_pow2,
    span,
    store,
)

__all__ = ["HOPPER_TILING", "MatmulTiling", "matmul", "matmul_bytes", "matmul_flops", "matmul_ref"]


@dataclass(frozen=True)
class MatmulTiling:
    """Tile sizes and Triton launch parameters of the matmul kernel."""

    block_m: int = 128
    block_n: int = 256
    block_k: int = 64
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3


# H200 sweep (jax 0.11.2, bf16): 128x256x64, 8 warps, 3 stages gave 710 TFLOP/s at 8192^3 and
# 699 at 4096^3 (XLA: 742 / 734); 128x128x64 with 4 warps and 4 stages gave 575 / 557.
_GPU_TILING = MatmulTiling(128, 256, 64, 8, 8, 3)
# 4-byte inputs double the shared memory per stage: 128x256x64 asks for more than the H200's
# 227 KiB, so float32 keeps the smaller tile (checked correct there, TF32 tensor cores).
_GPU_TILING_WIDE = MatmulTiling(128, 128, 64, 8, 4, 4)
# The interpreter pays per grid step and per loop step: large tiles, few steps.
_INTERPRET_TILING = MatmulTiling(256, 256, 256, 8, 4, 1)
HOPPER_TILING = HopperTiling()
"""What an sm90 GPU runs when no tiling is given and the shape fits it."""


def _tile_coords(pid: jax.Array, grid_m: int, grid_n: int, group_m: int) -> tuple[jax.Array, ...]:
    """Map a 1-D program id to (tile_m, tile_n), walking group_m rows of tiles at a time."""
    # Consecutive programs share A row-panels and B column-panels, so they hit in L2.
    per_group = group_m * grid_n
    group = pid // per_group
    first_m = group * group_m
    rows_in_group = jnp.minimum(grid_m - first_m, group_m)
    within = pid % per_group
    return first_m + within % rows_in_group, within // rows_in_group


@dataclass(frozen=True)
class _Grid:
    """What the kernel knows at trace time: the problem (M, N, K), the K block of its loop,
    and the grid of output tiles, walked `group_m` rows of tiles at a time."""

    m: int
    n: int
    k: int
    block_k: int
    grid_m: int
    grid_n: int
    group_m: int


def _matmul_kernel(a_ref: jax.Array, b_ref: jax.Array, o_ref: jax.Array, *, grid: _Grid) -> None:
    m, n, k, block_k = grid.m, grid.n, grid.k, grid.block_k
    block_m, block_n = o_ref.shape
    tile_m, tile_n = _tile_coords(pl.program_id(0), grid.grid_m, grid.grid_n, grid.group_m)
    rows = span(tile_m, block_m, 0, 2)
    cols = span(tile_n, block_n, 1, 2)
    row_mask = None if m % block_m == 0 else rows < m
    col_mask = None if n % block_n == 0 else cols < n
    ragged_k = k % block_k != 0

    def step(i: jax.Array, acc: jax.Array) -> jax.Array:
        start = pl.multiple_of(i * block_k, block_k)
        ks = pl.ds(start, block_k)
        a_mask, b_mask = row_mask, col_mask
        if ragged_k:
            # Zero-fill past K on both sides so the padding adds exactly nothing.
            a_k = span(i, block_k, 1, 2) < k
            b_k = span(i, block_k, 0, 2) < k
            a_mask = a_k if a_mask is None else a_mask & a_k
            b_mask = b_k if b_mask is None else b_mask & b_k
        a = load(a_ref.at[:, ks], a_mask)
        b = load(b_ref.at[ks, :], b_mask)
        return acc + jnp.dot(a, b, preferred_element_type=jnp.float32)

    acc = jnp.zeros((block_m, block_n), jnp.float32)
    acc = fori_loop(0, pl.cdiv(k, block_k), step, acc)
    mask = None
    if row_mask is not None or col_mask is not None:
        mask = (rows < m) & (cols < n)
    store(o_ref, acc.astype(o_ref.dtype), mask)


def _check_operands(a: jax.Array, b: jax.Array) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise KernelInputError(
            "std/matmul",
            f"cannot multiply {a.shape} by {b.shape}",
            hint="pass a of shape (M, K) and b of shape (K, N)",
        )
    if a.dtype != b.dtype:
        raise KernelInputError(
            "std/matmul",
            f"dtypes differ: {a.dtype} and {b.dtype}",
            hint="cast both operands to one dtype",
        )


@tile.recorded("std/matmul")  # its calls are `std/matmul`'s cases for `--from`
def matmul(
    a: jax.Array, b: jax.Array, *, tiling: MatmulTiling | HopperTiling | None = None
) -> jax.Array:
    """a @ b for 2-D a (M, K), b (K, N), float32 accumulation: the Hopper kernel where it
    applies (or where a HopperTiling asks for it), else Triton tiles with a K loop."""
    _check_operands(a, b)
    (m, k), n = a.shape, b.shape[1]
    interpret = interpret_mode()
    if isinstance(tiling, HopperTiling):
        reason = hopper_fits(m, n, k, a.dtype, tiling)
        if reason is not None:
            raise KernelInputError(
                "std/matmul",
                f"the Hopper kernel cannot take {reason}",
                hint="pick a HopperTiling whose program tile divides the shape, or a MatmulTiling",
            )
        return hopper_matmul(a, b, tiling, interpret=interpret)
    if tiling is None and on_hopper() and hopper_fits(m, n, k, a.dtype, HOPPER_TILING) is None:
        return hopper_matmul(a, b, HOPPER_TILING)
    if tiling is not None:
        t = tiling
    elif interpret:
        t = _INTERPRET_TILING
    else:
        t = _GPU_TILING if a.dtype.itemsize <= 2 else _GPU_TILING_WIDE
    # Tiles never exceed the (power-of-two padded) problem: small shapes get small tiles.
    block_m = min(t.block_m, max(16, next_pow2(m)))
    block_n = min(t.block_n, max(16, next_pow2(n)))
    block_k = min(t.block_k, max(16, next_pow2(k)))
    grid_m, grid_n = pl.cdiv(m, block_m), pl.cdiv(n, block_n)

    def a_map(pid: jax.Array) -> tuple[jax.Array, int]:
        return _tile_coords(pid, grid_m, grid_n, t.group_m)[0], 0

    def b_map(pid: jax.Array) -> tuple[int, jax.Array]:
        return 0, _tile_coords(pid, grid_m, grid_n, t.group_m)[1]

    def o_map(pid: jax.Array) -> tuple[jax.Array, ...]:
        return _tile_coords(pid, grid_m, grid_n, t.group_m)

    grid = _Grid(m=m, n=n, k=k, block_k=block_k, grid_m=grid_m, grid_n=grid_n, group_m=t.group_m)
    kernel = functools.partial(_matmul_kernel, grid=grid)
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(grid_m * grid_n,),
        in_specs=[pl.BlockSpec((block_m, k), a_map), pl.BlockSpec((k, block_n), b_map)],
        out_specs=pl.BlockSpec((block_m, block_n), o_map),
        interpret=interpret,
        compiler_params=compiler_params(t.num_warps, t.num_stages),
        name="std_matmul",
    )(a, b)


def matmul_ref(a: jax.Array, b: jax.Array) -> jax.Array:
    """Reference a @ b with float32 accumulation (jnp)."""
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def matmul_bytes(case: CaseLike) -> float:
    """Read A (M, K) and B (K, N) once, write C (M, N); shape is (M, N, K)."""
    m, n, k = case.shape
    return float(m * k + k * n + m * n) * case.itemsize


def matmul_flops(case: CaseLike) -> float:
    """2*M*N*K: one multiply and one add per product term."""
    m, n, k = case.shape
    return 2.0 * m * n * k
