"""Issue #37: tile-std's Triton-backend matmul against XLA's, over tile shapes, stages and grouping.

tile-std's matmul ran at 0.95x (4096^3) and 0.96x (8192^3) of XLA's time on the H200 with
128x256x64 tiles, 8 warps and 3 stages. This script times, with tile's own timer, bf16 at both
bench shapes, XLA (cuBLAS) first and then each tiling as `bm x bn x bk g{group_m} w{warps}
s{stages}`, with its ratio to XLA's time (above 1: slower than XLA).

`--hopper` times the Mosaic GPU kernel (tile_std._matmul_hopper, wgmma and TMA with warp roles)
instead, one line per HopperTiling: `{block_m}x{block_n}x{block_k} s{stages} {split}{walk}
b{band}`, where the two compute warpgroups' tiles sit side by side along `split` (m or n) and
the grid is walked in bands of `band` tiles along `walk`.

Usage: python benchmarks/gpu/matmul_sweep.py [--max-time 0.3] [--hopper]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from _sweep import jitted

import tile_runner as tile
import tile_std
from tile_std._matmul import MatmulTiling
from tile_std._matmul_hopper import HopperTiling, hopper_matmul

TILINGS = [
    MatmulTiling(128, 256, 64, 8, 8, 3),  # shipped
    MatmulTiling(128, 256, 64, 8, 8, 4),
    MatmulTiling(256, 128, 64, 8, 8, 3),
    MatmulTiling(256, 128, 64, 8, 8, 4),
    MatmulTiling(128, 256, 64, 16, 8, 3),
    MatmulTiling(128, 256, 64, 4, 8, 3),
    MatmulTiling(128, 128, 128, 8, 8, 3),
    MatmulTiling(128, 256, 128, 8, 8, 2),
    MatmulTiling(256, 256, 64, 8, 8, 2),
    MatmulTiling(128, 128, 64, 8, 4, 4),
]

HOPPER = [
    HopperTiling(128, 128, 64, 4, "n", "n", 8),
    HopperTiling(128, 128, 64, 3, "n", "n", 8),
    HopperTiling(128, 128, 64, 4, "m", "n", 8),
    HopperTiling(128, 128, 64, 4, "n", "m", 8),
    HopperTiling(128, 128, 64, 4, "n", "n", 4),
    HopperTiling(128, 128, 64, 4, "n", "n", 16),
    HopperTiling(64, 256, 64, 4, "m", "n", 8),
    HopperTiling(64, 256, 64, 4, "m", "m", 8),
    HopperTiling(128, 128, 128, 2, "n", "n", 8),
    HopperTiling(128, 64, 64, 5, "n", "n", 8),
    HopperTiling(128, 64, 64, 5, "m", "n", 8),
    HopperTiling(64, 128, 64, 6, "m", "n", 8),
]


def _name(t: MatmulTiling | HopperTiling) -> str:
    if isinstance(t, HopperTiling):
        return f"{t.block_m}x{t.block_n}x{t.block_k} s{t.stages} {t.split}{t.walk} b{t.band}"
    return f"{t.block_m}x{t.block_n}x{t.block_k} g{t.group_m} w{t.num_warps} s{t.num_stages}"


def _call(t: MatmulTiling | HopperTiling) -> Callable[[jax.Array, jax.Array], jax.Array]:
    if isinstance(t, HopperTiling):
        return functools.partial(hopper_matmul, t=t)
    return functools.partial(tile_std.matmul, tiling=t)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-time", type=float, default=0.3)
    parser.add_argument("--hopper", action="store_true", help="the Mosaic GPU kernel's tilings")
    args = parser.parse_args()
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")  # pyright: ignore[reportUnknownMemberType]
    for n in (4096, 8192):
        ka, kb = jax.random.split(jax.random.key(0))
        a = jax.random.normal(ka, (n, n), jnp.bfloat16)
        b = jax.random.normal(kb, (n, n), jnp.bfloat16)
        flops = 2.0 * n**3
        expected = jitted(tile_std.matmul_ref)(a, b).astype(jnp.float32)
        xla = tile.measure(tile_std.matmul_ref, a, b, max_time=args.max_time).median
        print(
            f"\n{n}^3 bfloat16\n  {'xla':>24} {xla * 1e6:8.1f} µs {flops / xla / 1e12:5.0f} TFLOP/s"
        )
        tilings: list[MatmulTiling | HopperTiling] = [*(HOPPER if args.hopper else TILINGS)]
        for t in tilings:
            name, fn = _name(t), _call(t)
            try:
                got = jitted(fn)(a, b).astype(jnp.float32)
                err = float(jnp.max(jnp.abs(got - expected)) / jnp.max(jnp.abs(expected)))
                m = tile.measure(fn, a, b, max_time=args.max_time)
            except Exception as e:  # a tiling Triton refuses (shared memory) is a result too
                print(f"  {name:>24}  failed: {type(e).__name__}: {str(e)[:140]}", flush=True)
                continue
            print(
                f"  {name:>24} {m.median * 1e6:8.1f} µs {flops / m.median / 1e12:5.0f} TFLOP/s"
                f"  x{m.median / xla:5.3f} of xla  rel err {err:.2g}",
                flush=True,
            )


if __name__ == "__main__":
    main()
