"""Issue #37: tile-std's Triton-backend matmul against XLA's, over tile shapes, stages and grouping.

tile-std's matmul ran at 0.95x (4096^3) and 0.96x (8192^3) of XLA's time on the H200 with
128x256x64 tiles, 8 warps and 3 stages. This script times, with tile's own timer, bf16 at both
bench shapes, XLA (cuBLAS) first and then each tiling as `bm x bn x bk g{group_m} w{warps}
s{stages}`, with its ratio to XLA's time (above 1: slower than XLA).

Usage: python benchmarks/gpu/matmul_sweep.py [--max-time 0.3]
"""

from __future__ import annotations

import argparse
import functools

import jax
import jax.numpy as jnp
from _sweep import jitted

import tile_runner as tile
import tile_std
from tile_std._matmul import MatmulTiling

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-time", type=float, default=0.3)
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
        for t in TILINGS:
            name = (
                f"{t.block_m}x{t.block_n}x{t.block_k} g{t.group_m} w{t.num_warps} s{t.num_stages}"
            )
            fn = functools.partial(tile_std.matmul, tiling=t)
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
