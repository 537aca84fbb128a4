"""Issue #37: tile-std's attention forward against jax's own Pallas attention kernels.

At tile-std's bench shapes (batch x heads x seq x head_dim, bfloat16, causal and not) this
times, with tile's own timer, tile-std's `attention` (its shipped default), jax's
`jax.experimental.pallas.ops.gpu.attention.mha` (the Triton-lowered flash attention, at its
default blocks and at 64x64 and 128x64) and, where it imports and runs, jax's Mosaic GPU
`attention_mgpu.attention` (for Hopper; 64-row query blocks, 128 or 64 keys), each on the same inputs in the layout it takes
(transposed outside the timed call), with its ratio to tile-std's time and its largest
difference from tile-std's output.

Usage: python benchmarks/gpu/attention_anchor.py [--max-time 0.3]
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from _sweep import jitted

import tile_runner as tile
import tile_std

SHAPES = [(4, 32, 1024, 128), (4, 32, 4096, 128)]


def _mha(block_q: int | None, block_k: int | None, causal: bool) -> Callable[..., jax.Array]:
    from jax.experimental.pallas.ops.gpu import attention as jax_attention

    sizes: Any = jax_attention.BlockSizes  # jax's own dataclass, left untyped by its stubs
    # jax's defaults, as mha's signature gives them, when no block sizes are asked for.
    blocks = sizes(block_q=block_q or 128, block_k=block_k or 128)

    def call(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        scale = 1.0 / math.sqrt(q.shape[-1])
        return jax_attention.mha(q, k, v, None, sm_scale=scale, causal=causal, block_sizes=blocks)

    return call


def _mgpu(block_kv: int, causal: bool) -> Callable[..., jax.Array] | None:
    """jax's Mosaic GPU attention (Hopper) with 64-row query blocks, as its own sweep uses."""
    try:
        from jax.experimental.pallas.ops.gpu import attention_mgpu
    except Exception as e:  # an anchor, not a requirement
        print(f"  (attention_mgpu not importable: {type(e).__name__}: {e})")
        return None
    mod: Any = attention_mgpu
    config = mod.TuningConfig(block_q=64, block_kv=block_kv, max_concurrent_steps=2, causal=causal)

    def call(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return mod.attention(q, k, v, config)

    return call


def _one(shape: tuple[int, int, int, int], causal: bool, max_time: float) -> None:
    keys = jax.random.split(jax.random.key(0), 3)
    q, k, v = (jax.random.normal(key, shape, jnp.bfloat16) for key in keys)
    # jax's kernels take (batch, seq, heads, head_dim): transposed here, outside the timing.
    qt, kt, vt = (jnp.swapaxes(t, 1, 2) for t in (q, k, v))
    ours = tile.measure(functools.partial(tile_std.attention, causal=causal), q, k, v,
                        max_time=max_time)  # fmt: skip
    expected = jitted(functools.partial(tile_std.attention, causal=causal))(q, k, v)
    print(f"\n{'x'.join(map(str, shape))} bfloat16 causal={causal}")
    print(f"  {'tile-std':>18} {ours.median * 1e6:9.1f} µs")
    anchors: dict[str, Callable[..., jax.Array] | None] = {
        "mha default": _mha(None, None, causal),
        "mha 64x64": _mha(64, 64, causal),
        "mha 128x64": _mha(128, 64, causal),
        "mgpu 64x128": _mgpu(128, causal),
        "mgpu 64x64": _mgpu(64, causal),
    }
    for name, fn in anchors.items():
        if fn is None:
            continue
        try:
            got = jnp.swapaxes(jitted(fn)(qt, kt, vt), 1, 2).astype(jnp.float32)
            err = float(jnp.max(jnp.abs(got - expected.astype(jnp.float32))))
            m = tile.measure(fn, qt, kt, vt, max_time=max_time)
        except Exception as e:  # a kernel this jax or device refuses is a result too
            print(f"  {name:>18}  failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
            continue
        print(f"  {name:>18} {m.median * 1e6:9.1f} µs  tile-std x{ours.median / m.median:5.3f}"
              f" of its time  max|diff| {err:.3g}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-time", type=float, default=0.3)
    args = parser.parse_args()
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")  # pyright: ignore[reportUnknownMemberType]
    for shape in SHAPES:
        for causal in (False, True):
            _one(shape, causal, args.max_time)


if __name__ == "__main__":
    main()
