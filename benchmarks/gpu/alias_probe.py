"""Does tile's `cupti` timer see the copy XLA adds for an output that aliases an input?

A Pallas call with `input_output_aliases={0: 0}` writes its output over its input. When that
input is a parameter of the jitted function and not donated, XLA keeps the caller's array
intact by copying it first. If XLA runs that copy as a device-to-device memcpy rather than a
kernel, a timer that sums kernel activities (CUPTI's, as jaxlib's session records them) does not
see it, and the case reads faster than the device work it does. tokamax's norms alias by
default, so this decides whether their figures in issue #37 are comparable with tile-std's.

For each function this prints tile's `cupti` and `batched` medians (the latter is wall time of
back-to-back calls, so it includes every copy and launch gap), the kernels CUPTI saw, and the
optimized HLO's top-level copies. Usage: python benchmarks/gpu/alias_probe.py
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from _sweep import row_block
from jax.experimental import pallas as pl

import tile_runner as tile
import tile_std
from tile_std._norms import LAYERNORM_EPS
from tile_std._pallas import compiler_params

SHAPE = (4096, 4096)


def _double(alias: bool) -> Callable[[jax.Array], jax.Array]:
    def kernel(x_ref: jax.Array, o_ref: jax.Array) -> None:
        o_ref[...] = x_ref[...] * 2

    spec = pl.BlockSpec((8, SHAPE[1]), row_block)

    def call(x: jax.Array) -> jax.Array:
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[spec],
            out_specs=spec,
            input_output_aliases={0: 0} if alias else {},
            compiler_params=compiler_params(4, 1),
        )(x)

    return call


def _tokamax(alias: bool) -> Callable[..., jax.Array] | None:
    # tokamax is optional and unresolved here, so its module, op and results are Unknown.
    try:
        from tokamax._src.ops.normalization import (  # pyright: ignore[reportMissingImports]
            pallas_triton,  # pyright: ignore[reportUnknownVariableType]
        )
    except Exception as e:
        print(f"(tokamax not importable: {type(e).__name__}: {e})")
        return None
    op = pallas_triton.PallasTritonNormalization(input_output_alias=alias)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

    def call(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
        return op(  # pyright: ignore[reportUnknownVariableType]
            x=x,
            scale=w,
            offset=b,
            axis=-1,
            epsilon=LAYERNORM_EPS,
            scale_offset=0.0,
            subtract_mean=True,
        )

    return call


def _copies(fn: Callable[..., jax.Array], *args: jax.Array) -> list[str]:
    hlo = jax.jit(fn).lower(*args).compile().as_text() or ""  # pyright: ignore[reportUnknownMemberType]
    entry = hlo[hlo.find("ENTRY") :]
    return [
        line.strip()[:110]
        for line in entry.splitlines()
        if " copy(" in line or "copy-start" in line
    ]


def main() -> None:
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")  # pyright: ignore[reportUnknownMemberType]
    keys = jax.random.split(jax.random.key(0), 3)
    for dtype in (jnp.bfloat16, jnp.float32):
        x = jax.random.normal(keys[0], SHAPE, dtype)
        w = jax.random.normal(keys[1], SHAPE[-1:], dtype)
        b = jax.random.normal(keys[2], SHAPE[-1:], dtype)
        cases: dict[str, tuple[Callable[..., jax.Array], tuple[jax.Array, ...]]] = {
            "x*2 pallas": (_double(False), (x,)),
            "x*2 pallas, aliased": (_double(True), (x,)),
            "tile-std layernorm": (tile_std.layernorm, (x, w, b)),
        }
        for alias in (False, True):
            fn = _tokamax(alias)
            if fn is not None:
                cases[f"tokamax layernorm{', aliased' if alias else ''}"] = (fn, (x, w, b))
        print(f"\n{SHAPE} {jnp.dtype(dtype).name}")
        for name, (fn, args) in cases.items():
            try:
                cupti = tile.measure(fn, *args, timer="cupti", max_time=0.3)
                batched = tile.measure(fn, *args, timer="batched", max_time=0.3)
                copies = _copies(fn, *args)
            except Exception as e:
                print(f"  {name:>28}  failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
                continue
            kernels = ", ".join(k.name[:32] for k in cupti.kernels or [])
            print(
                f"  {name:>28}  cupti {cupti.median * 1e6:7.1f} µs  batched "
                f"{batched.median * 1e6:7.1f} µs  kernels: {kernels}",
                flush=True,
            )
            for line in copies:
                print(f"  {'':>28}  HLO: {line}")


if __name__ == "__main__":
    main()
