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
    RowTiling,
    as_rows,
    compiler_params,
    fori_loop,
    interpret_mode,
    load,
    row_tiling,
    sm_count,
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


Params = Callable[[], list[jax.Array]]
"""The parameter vectors of a row function, each (1, cols) float32, asked for once the row
statistics are computed: loaded then (`late_params`), or handed over as loaded before."""


def _held(values: list[jax.Array]) -> Params:
    """Parameter vectors loaded already, handed to a row function."""
    return lambda: values


def _rms_rows(
    x: jax.Array, params: Params, *, n_cols: int, eps: float, col_mask: jax.Array | None = None
) -> jax.Array:
    """RMSNorm of float32 rows (weight from `params`). Padded columns hold 0 and add nothing."""
    mean_sq = jnp.sum(x * x, axis=1, keepdims=True) / n_cols
    (w,) = params()
    return x * lax.rsqrt(mean_sq + eps) * w


def _ln_rows(
    x: jax.Array, params: Params, *, n_cols: int, eps: float, col_mask: jax.Array | None = None
) -> jax.Array:
    """LayerNorm of float32 rows (weight and bias from `params`); col_mask marks the real
    columns."""
    mean = jnp.sum(x, axis=1, keepdims=True) / n_cols
    centered = x - mean
    if col_mask is not None:
        # Padded columns would contribute mean**2 each to the variance.
        centered = jnp.where(col_mask[None, :], centered, 0.0)
    var = jnp.sum(centered * centered, axis=1, keepdims=True) / n_cols
    w, b = params()
    return centered * lax.rsqrt(var + eps) * w + b


def _block_kernel(
    x_ref: jax.Array,
    *refs: jax.Array,
    rows_fn: Callable[..., jax.Array],
    n_rows: int,
    n_cols: int,
    eps: float,
    late_params: bool = False,
) -> None:
    """One block of whole rows per program; the parameter vectors are loaded per program,
    right after the rows or, `late_params`, after the row statistics (then they are not live
    across the reductions: one row of 8192 bfloat16 and 8 warps a program, 146 against
    168 µs on the H200, 2026-12-07; at two rows the early reads were faster)."""
    *p_refs, o_ref = refs
    block_rows, block_cols = x_ref.shape
    mask, col_mask = _masks(block_rows, block_cols, n_rows, n_cols)
    x = load(x_ref, mask).astype(jnp.float32)

    def params() -> list[jax.Array]:
        return [load(r, col_mask).astype(jnp.float32)[None, :] for r in p_refs]

    given = params if late_params else _held(params())
    y = rows_fn(x, given, n_cols=n_cols, eps=eps, col_mask=col_mask)
    store(o_ref, y.astype(o_ref.dtype), mask)


def _persistent_kernel(
    x_ref: jax.Array,
    *refs: jax.Array,
    rows_fn: Callable[..., jax.Array],
    block_rows: int,
    programs: int,
    eps: float,
) -> None:
    """A fixed grid of programs, each walking every `programs`-th block of rows in a loop.

    The parameter vectors are loaded once per program and stay in registers, where the block
    grid reloads them for every block (64 KiB per row of 8192 float32 weights and biases).
    """
    *p_refs, o_ref = refs
    n_rows, n_cols = x_ref.shape
    blocks = n_rows // block_rows
    pid = pl.program_id(0)
    params = [r[...].astype(jnp.float32)[None, :] for r in p_refs]

    def body(i: jax.Array, carry: int) -> int:
        rows = pl.ds(pl.multiple_of((pid + i * programs) * block_rows, block_rows), block_rows)
        y = rows_fn(x_ref[rows, :].astype(jnp.float32), _held(params), n_cols=n_cols, eps=eps)
        o_ref[rows, :] = y.astype(o_ref.dtype)
        return carry

    fori_loop(0, (blocks - pid + programs - 1) // programs, body, 0)


def _check_params(kernel: str, x: jax.Array, *params: jax.Array) -> None:
    for p in params:
        if p.shape != (x.shape[-1],):
            raise KernelInputError(
                kernel,
                f"parameter of shape {p.shape} does not match hidden size {x.shape[-1]}",
                hint="weight and bias are 1-D with the size of x's last axis",
            )


def persistent_fits(n_rows: int, n_cols: int, t: RowTiling) -> bool:
    """The persistent loop walks whole blocks without masks: rows divide into blocks of
    `t.block_rows`, and the columns need no padding."""
    return n_rows % t.block_rows == 0 and n_cols == t.block_cols


# The values a call may give for its launch: block_rows, num_warps, programs_per_sm.
_LaunchValues = tuple[int | None, int | None, int | None]


def _row_call(
    name: str,
    rows_fn: Callable[..., jax.Array],
    x: jax.Array,
    params: tuple[jax.Array, ...],
    *,
    eps: float,
    given: _LaunchValues,
    auto: Callable[[int, int], _LaunchValues | None] | None = None,
    late_params: bool = False,
) -> jax.Array:
    """Normalise x's rows with `rows_fn`, launched as `given`; with nothing given on a GPU,
    as `auto(n_cols, itemsize)` chooses, else by the shared row tiling. `late_params`: the
    block grid's programs load the parameter vectors after the row statistics (a persistent
    grid loads them once per program, before its loop)."""
    rows = as_rows(x)
    n_rows, n_cols = rows.shape
    if rows.size == 0:
        return jnp.empty_like(x)
    interpret = interpret_mode()
    if given == (None, None, None) and not interpret and auto is not None:
        given = auto(n_cols, x.dtype.itemsize) or given
    block_rows, num_warps, programs_per_sm = given
    t = row_tiling(
        f"std/{name}", n_rows, n_cols, interpret=interpret, block_rows=block_rows,
        num_warps=num_warps,
    )  # fmt: skip
    if programs_per_sm is not None and persistent_fits(n_rows, n_cols, t):
        out = _persistent_call(
            name, rows_fn, rows, params, t=t, programs_per_sm=programs_per_sm, eps=eps
        )
        return out.reshape(x.shape)

    def row_block(i: jax.Array) -> tuple[jax.Array, int]:
        return i, 0

    def whole(i: jax.Array) -> tuple[int]:
        return (0,)

    x_spec = pl.BlockSpec((t.block_rows, t.block_cols), row_block)
    p_spec = pl.BlockSpec((t.block_cols,), whole)
    kernel = functools.partial(
        _block_kernel, rows_fn=rows_fn, n_rows=n_rows, n_cols=n_cols, eps=eps,
        late_params=late_params,
    )  # fmt: skip
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype),
        grid=(pl.cdiv(n_rows, t.block_rows),),
        in_specs=[x_spec] + [p_spec] * len(params),
        out_specs=x_spec,
        interpret=interpret,
        compiler_params=compiler_params(t.num_warps, 1),
        name=f"std_{name}",
    )(rows, *params)
    return out.reshape(x.shape)


def _persistent_call(
    name: str,
    rows_fn: Callable[..., jax.Array],
    rows: jax.Array,
    params: tuple[jax.Array, ...],
    *,
    t: RowTiling,
    programs_per_sm: int,
    eps: float,
) -> jax.Array:
    """`rows` normalised by `programs_per_sm` programs per SM, each looping over its blocks."""
    programs = min(rows.shape[0] // t.block_rows, programs_per_sm * sm_count())
    kernel = functools.partial(
        _persistent_kernel, rows_fn=rows_fn, block_rows=t.block_rows, programs=programs, eps=eps
    )
    # Three stages, as measured (one stage timed the same at four programs per SM).
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype),
        grid=(programs,),
        interpret=interpret_mode(),
        compiler_params=compiler_params(t.num_warps, 3),
        name=f"std_{name}",
    )(rows, *params)


def _layernorm_auto(n_cols: int, itemsize: int) -> _LaunchValues | None:
    """LayerNorm's own choices on a GPU where the shared row tiling measured slower.

    16-bit rows of up to 8192: two rows and 8 warps per program (benchmarks/gpu/norm_sweep.py,
    H200: 154 µs at 16384x8192 bfloat16 against 196 µs for the shared tiling and 161 µs for
    XLA; 20.1 against 21.9 µs at 4096x4096). float32 rows of 8192: a persistent grid of two
    programs per SM, one row and 8 warps (benchmarks/gpu/row_variants.py, H100: 366 µs at
    16384x8192 against 392 µs for the block grid and 377 µs for XLA; at 4096 columns no
    schedule tried beat the block grid).
    """
    if itemsize == 2 and n_cols <= 8192:
        return 2, 8, None
    if itemsize == 4 and 4096 < n_cols <= 8192:
        return 1, 8, 2
    return None


@tile.recorded("std/rmsnorm")  # its calls are `std/rmsnorm`'s cases for `--from`
def rmsnorm(
    x: jax.Array,
    weight: jax.Array,
    *,
    eps: float = RMSNORM_EPS,
    block_rows: int | None = None,
    num_warps: int | None = None,
    programs_per_sm: int | None = None,
) -> jax.Array:
    """x * rsqrt(mean(x^2) + eps) * weight over the last axis; block_rows whole rows per program.

    `programs_per_sm` launches that many programs per SM, each looping over blocks of rows,
    instead of one program per block.
    """
    _check_params("std/rmsnorm", x, weight)
    given = (block_rows, num_warps, programs_per_sm)
    return _row_call("rmsnorm", _rms_rows, x, (weight,), eps=eps, given=given)


@tile.recorded("std/layernorm")  # its calls are `std/layernorm`'s cases for `--from`
def layernorm(
    x: jax.Array,
    weight: jax.Array,
    bias: jax.Array,
    *,
    eps: float = LAYERNORM_EPS,
    block_rows: int | None = None,
    num_warps: int | None = None,
    programs_per_sm: int | None = None,
    late_params: bool = False,
) -> jax.Array:
    """(x - mean) * rsqrt(var + eps) * weight + bias over the last axis; whole rows per program.

    `programs_per_sm` as for `rmsnorm`; without any launch value a GPU call takes
    `_layernorm_auto`'s measured choice. `late_params`: each program reads weight and bias
    after the row's mean and variance, not before (the faster order at one row per program
    on the H200; tuned per shape as `param_reads`).
    """
    _check_params("std/layernorm", x, weight, bias)
    given = (block_rows, num_warps, programs_per_sm)
    return _row_call(
        "layernorm", _ln_rows, x, (weight, bias), eps=eps, given=given, auto=_layernorm_auto,
        late_params=late_params,
    )  # fmt: skip


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
