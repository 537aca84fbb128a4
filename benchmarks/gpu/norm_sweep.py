"""Why is std/layernorm slower than XLA on the H200? A tiling sweep, for a GPU machine.

On the H200 (session 2) `tile bench` put std/layernorm at 16384x8192 bfloat16 at 196 µs against
XLA's 158 µs, while std/rmsnorm, the same shape of kernel with one reduction instead of two, ran
at the copy ceiling. This script times, with tile's own timer, at the shapes of the bench table:

  xla         the jnp reference under jax.jit
  lib         tile_std.layernorm with its default tiling
  r{R}w{W}    tile_std.layernorm with block_rows=R, num_warps=W
  1pass w{W}  a variant that takes mean and mean of squares in one pass over the block
              (var = E[x^2] - mean^2; fewer reductions, less exact when |mean| >> std)

and prints time, GB/s and the ratio to XLA per variant. Usage: python benchmarks/gpu/norm_sweep.py
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from _sweep import jitted, row_block, whole_vector
from jax import lax
from jax.experimental import pallas as pl

import tile_runner as tile
import tile_std

# A variant of tile-std's own LayerNorm: its private block kernel, with other row math.
from tile_std._norms import LAYERNORM_EPS, _block_kernel  # pyright: ignore[reportPrivateUsage]
from tile_std._pallas import as_rows, compiler_params, row_tiling

SHAPES = [((16384, 8192), jnp.bfloat16), ((16384, 8192), jnp.float32), ((4096, 4096), jnp.bfloat16)]


def _one_pass_rows(
    x: jax.Array,
    params: Callable[[], list[jax.Array]],
    *,
    n_cols: int,
    eps: float,
    col_mask: jax.Array | None,
) -> jax.Array:
    """LayerNorm from one pass of sums: var = E[x^2] - mean^2 (padded columns load as 0)."""
    mean = jnp.sum(x, axis=1, keepdims=True) / n_cols
    mean_sq = jnp.sum(x * x, axis=1, keepdims=True) / n_cols
    var = jnp.maximum(mean_sq - mean * mean, 0.0)
    w, b = params()
    return (x - mean) * lax.rsqrt(var + eps) * w + b


def one_pass(
    x: jax.Array, w: jax.Array, b: jax.Array, *, num_warps: int, block_rows: int = 1
) -> jax.Array:
    rows = as_rows(x)
    n_rows, n_cols = rows.shape
    t = row_tiling("sweep", n_rows, n_cols, interpret=False, block_rows=block_rows)
    x_spec = pl.BlockSpec((t.block_rows, t.block_cols), row_block)
    p_spec = pl.BlockSpec((t.block_cols,), whole_vector)
    kernel = functools.partial(
        _block_kernel, rows_fn=_one_pass_rows, n_rows=n_rows, n_cols=n_cols, eps=LAYERNORM_EPS
    )
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype),
        grid=(pl.cdiv(n_rows, t.block_rows),),
        in_specs=[x_spec, p_spec, p_spec],
        out_specs=x_spec,
        compiler_params=compiler_params(num_warps, 1),
        name="sweep_layernorm_1pass",
    )(rows, w, b).reshape(x.shape)


def main() -> None:
    # jaxlib ships no types for its Device class: jax.devices() is a list of Unknown.
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")  # pyright: ignore[reportUnknownMemberType]
    for shape, dtype in SHAPES:
        keys = jax.random.split(jax.random.key(0), 3)
        x = jax.random.normal(keys[0], shape, dtype)
        w = jax.random.normal(keys[1], shape[-1:], dtype)
        b = jax.random.normal(keys[2], shape[-1:], dtype)
        nbytes = 2 * x.nbytes + 2 * w.nbytes
        variants: dict[str, Callable[..., jax.Array]] = {
            "xla": tile_std.layernorm_ref,
            "lib": tile_std.layernorm,
        }
        for r, warps in itertools.product((1, 2, 4), (4, 8, 16, 32)):
            variants[f"r{r}w{warps}"] = functools.partial(
                tile_std.layernorm, block_rows=r, num_warps=warps
            )
        for warps in (8, 16):
            variants[f"1pass w{warps}"] = functools.partial(one_pass, num_warps=warps)
        expected = tile_std.layernorm_ref(x, w, b)
        times: dict[str, float] = {}
        print(f"\n{shape} {jnp.dtype(dtype).name}")
        for name, fn in variants.items():
            try:
                got = jitted(fn)(x, w, b)
                err = float(
                    jnp.max(jnp.abs(got.astype(jnp.float32) - expected.astype(jnp.float32)))
                )
                m = tile.measure(fn, x, w, b, max_time=0.3, min_runs=20)
            except Exception as e:  # a tiling Triton refuses is a result too
                print(f"  {name:>10}  failed: {type(e).__name__}: {str(e)[:120]}")
                continue
            times[name] = m.median
            ratio = m.median / times["xla"]
            print(
                f"  {name:>10} {m.median * 1e6:8.1f} µs {nbytes / m.median / 1e9:7.0f} GB/s"
                f"  x{ratio:5.2f} of xla  max|err| {err:.3g}  ({m.timer})",
                flush=True,
            )


if __name__ == "__main__":
    main()
