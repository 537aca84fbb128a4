"""Issue #37: can a differently shaped row kernel reach the anchors? For a GPU machine.

tile-std's row kernels (LayerNorm, RMSNorm, softmax) load a block of whole rows per program,
reduce, and store. At the bench shapes they sit at 68-84% of the copy ceiling on the H200, and
`tile tune` over rows-per-program and warps cannot move them further. This script times, with
tile's own timer, the shapes that change the schedule rather than the block:

  xla          the jnp reference under jax.jit
  lib          tile-std's kernel as shipped (its tuning for this device, if any)
  tokamax      tokamax's Pallas-Triton layer_norm (norms only, when it imports)
  r{R}w{W}     the shipped kernel's body with R rows and W warps per program
  ...e         the same, loads marked evict_first (x is read once)
  ...s3        the same, Triton's num_stages 3 (jax's default, tokamax's) instead of 1
  L{R}w{W}s{S} (norms) the parameter vectors read after the row statistics, not before
  p{K}s{S}     persistent: K programs per SM walk the row blocks in a loop, so Triton can
               prefetch the next block (S stages) while this one is reduced
  c{C}         chunked (norms): two passes over C-column chunks, the second re-reading the
               row from L2, so a program holds C columns instead of the row

  tokamax-noalias  the same with its output in a buffer of its own (as every other row here)

Usage: python benchmarks/gpu/row_variants.py [--ops layernorm,rmsnorm,softmax] [--quick]
       [--anchors] (xla, tile-std and tokamax only) [--shapes 16384x8192] [--dtypes bfloat16]
       [--only lib,tokamax-noalias,r2w4s3]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from _sweep import jitted, row_block, whole_vector
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

import tile_runner as tile
import tile_std
from tile_std._norms import LAYERNORM_EPS, RMSNORM_EPS
from tile_std._pallas import as_rows, compiler_params, fori_loop

Math = Callable[[jax.Array, jax.Array, jax.Array, int], jax.Array]
SHAPES = [(4096, 4096), (16384, 8192)]
# On a CPU (to check the variants agree with XLA) Pallas interprets.
INTERPRET = jax.default_backend() != "gpu"
DTYPES = [jnp.bfloat16, jnp.float32]


def _ln(x: jax.Array, w: jax.Array, b: jax.Array, n: int) -> jax.Array:
    mean = jnp.sum(x, axis=1, keepdims=True) / n
    c = x - mean
    var = jnp.sum(c * c, axis=1, keepdims=True) / n
    return c * lax.rsqrt(var + LAYERNORM_EPS) * w + b


def _rms(x: jax.Array, w: jax.Array, b: jax.Array, n: int) -> jax.Array:
    return x * lax.rsqrt(jnp.sum(x * x, axis=1, keepdims=True) / n + RMSNORM_EPS) * w


def _softmax(x: jax.Array, w: jax.Array, b: jax.Array, n: int) -> jax.Array:
    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    return e / jnp.sum(e, axis=1, keepdims=True)


MATH: dict[str, Math] = {"layernorm": _ln, "rmsnorm": _rms, "softmax": _softmax}


def _read(ref: jax.Array, evict: bool) -> jax.Array:
    if evict:
        # Kernel refs are annotated jax.Array here; jax annotates plgpu.load as taking its Ref type.
        return plgpu.load(ref, eviction_policy="evict_first")  # pyright: ignore[reportArgumentType]
    return ref[...]


def _row_block_3d(i: jax.Array) -> tuple[jax.Array, int, int]:
    return i, 0, 0


def _column(i: jax.Array) -> tuple[int, int]:
    return 0, 0


def blocked(  # noqa: PLR0913 (each keyword is one schedule knob the variants vary)
    math: Math,
    x: jax.Array,
    w: jax.Array,
    b: jax.Array,
    *,
    r: int,
    warps: int,
    evict: bool = False,
    trailing_one: bool = False,
    stages: int = 1,
) -> jax.Array:
    """tile-std's schedule: one block of r whole rows per program (rows divide evenly here).

    `trailing_one`: tokamax's layout instead, the rows as (M, N, 1) in blocks of (r, N, 1),
    summed over axis 1 (its LayerNorm read 146.7 µs at 16384x8192 bfloat16 on the H200 against
    154-158 µs for (r, N) blocks at its r=2, 4 warps; (r, N, 1) read the same as (r, N)).
    `stages`: Triton's num_stages; tokamax leaves it to jax's default, 3, where tile-std's
    row kernels pass 1. No loop to pipeline, and no difference: H100, LayerNorm and RMSNorm
    bf16 16384x8192, each s3 row within 0.1 µs of its s1 row (2026-12-06).
    """
    rows = as_rows(x)
    n = rows.shape[1]

    def kernel(x_ref: jax.Array, w_ref: jax.Array, b_ref: jax.Array, o_ref: jax.Array) -> None:
        xv = _read(x_ref, evict).astype(jnp.float32)
        y = math(xv, w_ref[...].astype(jnp.float32)[None], b_ref[...].astype(jnp.float32)[None], n)
        o_ref[...] = y.astype(o_ref.dtype)

    if trailing_one:
        spec, vec = pl.BlockSpec((r, n, 1), _row_block_3d), pl.BlockSpec((n, 1), _column)
        rows, w, b = rows[:, :, None], w[:, None], b[:, None]
    else:
        spec, vec = pl.BlockSpec((r, n), row_block), pl.BlockSpec((n,), whole_vector)
    call = _block_grid(kernel, rows, (spec, vec), warps=warps, stages=stages, name="blocked")
    return call(rows, w, b).reshape(x.shape)


def _block_grid(
    kernel: Callable[..., None],
    rows: jax.Array,
    specs: tuple[Any, Any],
    *,
    warps: int,
    stages: int,
    name: str,
) -> Callable[..., jax.Array]:
    """A pallas_call of `kernel(x, w, b, out)` over blocks of `rows`: (block, vector) specs."""
    spec, vec = specs
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype),
        grid=(rows.shape[0] // spec.block_shape[0],),
        in_specs=[spec, vec, vec],
        out_specs=spec,
        compiler_params=compiler_params(warps, stages),
        name=f"variant_{name}",
        interpret=INTERPRET,
    )


def late(
    op: str, x: jax.Array, w: jax.Array, b: jax.Array, *, r: int, warps: int, stages: int = 1
) -> jax.Array:
    """The blocked schedule (norms), with the parameter vectors read only after the row
    statistics, as tokamax's kernel orders its reads; tile-std's kernel reads them first by
    default, so they are live (2 x 8192 float32 a program) across both reductions. At two
    rows a program, slower: H100, LayerNorm bf16 16384x8192 at 8 warps 196.9 µs against 189.4
    for reading them first; RMSNorm 184.9 against 181.7 (2026-12-06). At one row, faster:
    H200, LayerNorm bf16 16384x8192 `L1w8s1` 145.8 µs against 167.5 (`r1w8`), 155.8 (`r2w8`)
    and tokamax's 149.7 (2026-12-07); tile-std's LayerNorm has it as `param_reads="late"`."""
    rows = as_rows(x)
    n = rows.shape[1]
    centre = op == "layernorm"
    eps = LAYERNORM_EPS if centre else RMSNORM_EPS

    def kernel(x_ref: jax.Array, w_ref: jax.Array, b_ref: jax.Array, o_ref: jax.Array) -> None:
        c = x_ref[...].astype(jnp.float32)
        if centre:
            c = c - jnp.sum(c, axis=1, keepdims=True) / n
        y = c * lax.rsqrt(jnp.sum(c * c, axis=1, keepdims=True) / n + eps)
        y = y * w_ref[...].astype(jnp.float32)[None]
        if centre:
            y = y + b_ref[...].astype(jnp.float32)[None]
        o_ref[...] = y.astype(o_ref.dtype)

    specs = (pl.BlockSpec((r, n), row_block), pl.BlockSpec((n,), whole_vector))
    call = _block_grid(kernel, rows, specs, warps=warps, stages=stages, name="late")
    return call(rows, w, b).reshape(x.shape)


def persistent(
    math: Math,
    x: jax.Array,
    w: jax.Array,
    b: jax.Array,
    *,
    r: int,
    warps: int,
    per_sm: int,
    stages: int,
) -> jax.Array:
    """A fixed grid of per_sm programs per SM, each looping over every P-th block of r rows."""
    rows = as_rows(x)
    n_rows, n = rows.shape
    blocks = n_rows // r
    # jaxlib ships no types for its Device class: jax.devices() is a list of Unknown.
    sms: int = getattr(jax.devices()[0], "core_count", 2)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    programs = min(blocks, per_sm * sms)

    def kernel(x_ref: jax.Array, w_ref: jax.Array, b_ref: jax.Array, o_ref: jax.Array) -> None:
        pid = pl.program_id(0)
        wv = w_ref[...].astype(jnp.float32)[None]
        bv = b_ref[...].astype(jnp.float32)[None]

        def body(i: jax.Array, carry: int) -> int:
            start = pl.multiple_of((pid + i * programs) * r, r)
            xv = x_ref[pl.ds(start, r), :].astype(jnp.float32)
            o_ref[pl.ds(start, r), :] = math(xv, wv, bv, n).astype(o_ref.dtype)
            return carry

        fori_loop(0, (blocks - pid + programs - 1) // programs, body, 0)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype),
        grid=(programs,),
        compiler_params=compiler_params(warps, stages),
        name="variant_persistent",
        interpret=INTERPRET,
    )(rows, w, b).reshape(x.shape)


def chunked(
    op: str,
    x: jax.Array,
    w: jax.Array,
    b: jax.Array,
    *,
    r: int,
    warps: int,
    chunk: int,
    stages: int,
) -> jax.Array:
    """Norms in two passes over column chunks: sums first, then normalise re-reading x."""
    rows = as_rows(x)
    n_rows, n = rows.shape
    steps = n // chunk
    centre = op == "layernorm"

    def kernel(x_ref: jax.Array, w_ref: jax.Array, b_ref: jax.Array, o_ref: jax.Array) -> None:
        r0 = pl.multiple_of(pl.program_id(0) * r, r)

        def cols(j: jax.Array) -> slice | pl.Slice:
            return pl.ds(pl.multiple_of(j * chunk, chunk), chunk)

        def sums(j: jax.Array, acc: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            xv = x_ref[pl.ds(r0, r), cols(j)].astype(jnp.float32)
            return acc[0] + xv, acc[1] + xv * xv

        zero = jnp.zeros((r, chunk), jnp.float32)
        s1, s2 = fori_loop(0, steps, sums, (zero, zero))
        mean = jnp.sum(s1, axis=1, keepdims=True) / n if centre else 0.0
        var = jnp.sum(s2, axis=1, keepdims=True) / n - mean * mean
        eps = LAYERNORM_EPS if centre else RMSNORM_EPS
        rstd = lax.rsqrt(jnp.maximum(var, 0.0) + eps)

        def write(j: jax.Array, carry: int) -> int:
            xv = x_ref[pl.ds(r0, r), cols(j)].astype(jnp.float32)
            y = (xv - mean) * rstd * w_ref[cols(j)].astype(jnp.float32)[None]
            if centre:
                y = y + b_ref[cols(j)].astype(jnp.float32)[None]
            o_ref[pl.ds(r0, r), cols(j)] = y.astype(o_ref.dtype)
            return carry

        fori_loop(0, steps, write, 0)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype),
        grid=(n_rows // r,),
        compiler_params=compiler_params(warps, stages),
        name="variant_chunked",
        interpret=INTERPRET,
    )(rows, w, b).reshape(x.shape)


def _rmsnorm(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    return tile_std.rmsnorm(x, w)


def _rmsnorm_ref(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    return tile_std.rmsnorm_ref(x, w)


def _softmax_lib(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    return tile_std.softmax(x)


def _softmax_ref(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    return tile_std.softmax_ref(x)


def _library(op: str) -> tuple[Callable[..., jax.Array], Callable[..., jax.Array]]:
    """(tile-std's kernel, its reference), both taking (x, w, b)."""
    if op == "layernorm":
        return tile_std.layernorm, tile_std.layernorm_ref
    if op == "rmsnorm":
        return _rmsnorm, _rmsnorm_ref
    return _softmax_lib, _softmax_ref


def _tokamax(op: str, alias: bool) -> Callable[..., jax.Array] | None:
    """tokamax's Pallas-Triton norm; `alias`: its default, the output written over x (which
    makes XLA copy an undonated x first, a copy the cupti timer does not see)."""
    if op == "softmax":
        return None
    try:
        module = importlib.import_module("tokamax._src.ops.normalization.pallas_triton")
    except Exception as e:  # an anchor, not a requirement
        print(f"  (tokamax not importable: {type(e).__name__}: {e})")
        return None
    norm: Any = module.PallasTritonNormalization(input_output_alias=alias)
    centre = op == "layernorm"
    eps = LAYERNORM_EPS if centre else RMSNORM_EPS

    def call(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
        offset = b if centre else None
        return norm(x=x, scale=w, offset=offset, axis=-1, epsilon=eps, scale_offset=0.0,
                    subtract_mean=centre)  # fmt: skip

    return call


def variants(op: str, quick: bool, anchors: bool = False) -> dict[str, Callable[..., jax.Array]]:
    lib, ref = _library(op)
    math = MATH[op]
    out: dict[str, Callable[..., jax.Array]] = {"xla": ref, "lib": lib}
    for name, alias in (("tokamax", True), ("tokamax-noalias", False)):
        anchor = _tokamax(op, alias)
        if anchor is not None:
            out[name] = anchor
    if anchors:
        return out
    for r, warps in [(1, 4), (2, 4), (4, 4), (2, 8), (1, 8)]:
        out[f"r{r}w{warps}"] = functools.partial(blocked, math, r=r, warps=warps)
    for r, warps in [(2, 4), (1, 4), (2, 8)]:
        out[f"t{r}w{warps}"] = functools.partial(blocked, math, r=r, warps=warps, trailing_one=True)
    for r, warps in [(2, 4), (2, 8), (1, 8)]:
        out[f"r{r}w{warps}s3"] = functools.partial(blocked, math, r=r, warps=warps, stages=3)
    out["t2w4s3"] = functools.partial(blocked, math, r=2, warps=4, trailing_one=True, stages=3)
    for r, warps in [(2, 4), (2, 8)]:
        out[f"r{r}w{warps}e"] = functools.partial(blocked, math, r=r, warps=warps, evict=True)
    for r, warps, per_sm, stages in [
        (1, 4, 4, 1),
        (1, 4, 4, 3),
        (2, 4, 4, 3),
        (1, 8, 2, 3),
        (2, 8, 2, 3),
        (1, 4, 8, 2),
    ][: 3 if quick else None]:
        out[f"p{per_sm}s{stages}r{r}w{warps}"] = functools.partial(
            persistent, math, r=r, warps=warps, per_sm=per_sm, stages=stages
        )
    if op != "softmax":
        for r, warps, stages in [(2, 4, 1), (2, 8, 1), (1, 8, 1), (2, 4, 3), (2, 8, 3)]:
            out[f"L{r}w{warps}s{stages}"] = functools.partial(
                late, op, r=r, warps=warps, stages=stages
            )
        for r, warps, chunk, stages in [
            (1, 4, 1024, 2),
            (2, 4, 1024, 2),
            (4, 4, 512, 2),
            (1, 2, 512, 3),
        ]:
            out[f"c{chunk}r{r}w{warps}s{stages}"] = functools.partial(
                chunked, op, r=r, warps=warps, chunk=chunk, stages=stages
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default="layernorm,rmsnorm,softmax")
    parser.add_argument("--quick", action="store_true", help="fewer persistent variants")
    parser.add_argument("--anchors", action="store_true", help="xla, lib and tokamax only")
    parser.add_argument("--max-time", type=float, default=0.2)
    parser.add_argument(
        "--shapes", default="", help="comma-separated, e.g. 16384x8192 (default: both)"
    )
    parser.add_argument(
        "--dtypes", default="", help="comma-separated, e.g. bfloat16 (default: both)"
    )
    parser.add_argument("--only", default="", help="variant names to time, comma-separated")
    args = parser.parse_args()
    # tokamax reads absl flags from sys.argv at its first call, and refuses this script's own.
    sys.argv = sys.argv[:1]
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")  # pyright: ignore[reportUnknownMemberType]
    shapes = [s for s in SHAPES if _chosen("x".join(map(str, s)), args.shapes)]
    dtypes = [d for d in DTYPES if _chosen(jnp.dtype(d).name, args.dtypes)]
    only = _names(args.only)
    known: set[str] = set()
    for op in args.ops.split(","):
        known.update(variants(op, args.quick, args.anchors))
    if only - known:
        # A misspelt or absent variant was skipped without a word before (2026-12-07).
        parser.error(
            f"--only names no variant here: {', '.join(sorted(only - known))} "
            f"(known: {', '.join(sorted(known))}; tokamax rows need tokamax importable)"
        )
    for op in args.ops.split(","):
        for shape in shapes:
            for dtype in dtypes:
                _one(op, shape, dtype, (args.quick, args.anchors), args.max_time, only=only)


def _names(given: str) -> set[str]:
    """The names of a comma-separated option."""
    return {name for name in given.split(",") if name}


def _chosen(name: str, given: str) -> bool:
    """Whether a comma-separated option (empty: all) names `name`."""
    return not given or name in _names(given)


def _one(
    op: str,
    shape: tuple[int, int],
    dtype: jnp.dtype,
    which: tuple[bool, bool],
    max_time: float,
    *,
    only: set[str],
) -> None:
    keys = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(keys[0], shape, dtype) + 0.5
    w = jax.random.normal(keys[1], shape[-1:], dtype)
    b = jax.random.normal(keys[2], shape[-1:], dtype)
    nbytes = 2 * x.nbytes
    found = variants(op, *which)
    if only:  # xla stays: every row is read against it
        found = {k: v for k, v in found.items() if k == "xla" or k in only}
    expected = jitted(found["xla"])(x, w, b).astype(jnp.float32)
    print(f"\n{op} {shape} {jnp.dtype(dtype).name}", flush=True)
    xla = None
    for name, fn in found.items():
        try:
            got = jitted(fn)(x, w, b).astype(jnp.float32)
            err = float(jnp.max(jnp.abs(got - expected)))
            m = tile.measure(fn, x, w, b, max_time=max_time, min_runs=20)
        except Exception as e:  # a schedule Triton refuses is a result too
            print(f"  {name:>16}  failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
            continue
        xla = xla or m.median
        kernels = ""
        if name == "tokamax" and m.kernels:
            kernels = "  kernels: " + ", ".join(k.name[:40] for k in m.kernels)
        print(
            f"  {name:>16} {m.median * 1e6:8.1f} µs {nbytes / m.median / 1e9:6.0f} GB/s"
            f"  x{m.median / xla:5.3f} of xla  err {err:.3g}{kernels}",
            flush=True,
        )


if __name__ == "__main__":
    main()
