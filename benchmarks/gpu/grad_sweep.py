"""Block sizes of tile-std's Pallas backwards on the GPU, each beside XLA's autodiff (issue #35).

For each case: XLA's VJP of the jnp reference applied to residuals made beforehand (what
`tile bench --mode bwd` times as the reference), then the Pallas backward with each tiling
(attention: `AttentionBwdTiling`; rows: rows per block, warps, programs), all timed by a
direct CUPTI measurement (median of one batch of calls). Prints µs and XLA's time over the
kernel's (above 1: the kernel is faster); the best tiling of each case is marked.

Usage: python benchmarks/gpu/grad_sweep.py [attention] [rows] [--seq 4096] [--iterations 30]
"""

from __future__ import annotations

import argparse
import functools
import statistics
from collections.abc import Callable
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

import tile_std
from tile_std._attention import attention_with_lse
from tile_std._attention_bwd import AttentionBwdTiling, attention_backward
from tile_std._norms import LAYERNORM_EPS, RMSNORM_EPS
from tile_std._rows_bwd import layernorm_backward, rmsnorm_backward, softmax_backward

ATTENTION_TILINGS = [
    AttentionBwdTiling(),
    AttentionBwdTiling(16, 128, 128, 16, 8, 4),
    AttentionBwdTiling(32, 128, 128, 32, 8, 2),
    AttentionBwdTiling(64, 128, 128, 64, 8, 2),
    AttentionBwdTiling(32, 64, 64, 32, 4, 3),
    AttentionBwdTiling(64, 64, 64, 64, 4, 2),
    AttentionBwdTiling(64, 64, 64, 64, 8, 3),
]
ROW_TILINGS: list[dict[str, int | None]] = [
    {},
    {"block_rows": 1, "num_warps": 4},
    {"block_rows": 1, "num_warps": 8},
    {"block_rows": 1, "num_warps": 16},
    {"block_rows": 2, "num_warps": 8},
    {"block_rows": 4, "num_warps": 8},
    {"programs": 132},
    {"programs": 264},
    {"programs": 528},
    {"programs": 1056},
    {"block_rows": 1, "num_warps": 8, "programs": 132},
]


def _normal(seed: int, shape: tuple[int, ...], dtype: Any) -> jax.Array:
    values = np.random.default_rng(seed).standard_normal(shape, np.float32)
    return jnp.asarray(values).astype(dtype)


def _profile(compiled: Any, iterations: int, args: tuple[Any, ...]) -> list[float] | float:
    """CUPTI milliseconds of `iterations` calls: a float for one, else a list."""
    from jax.experimental.mosaic.gpu import profiler

    # The stub leaves measure's result untyped.
    result = cast(
        "tuple[Any, list[float] | float]", profiler.measure(compiled, iterations=iterations)(*args)
    )
    return result[1]


def cupti_us(fn: Callable[..., Any], *args: Any, iterations: int) -> float:
    """Median µs of `fn(*args)` (jitted) over one CUPTI batch; inf if it does not compile."""
    try:
        compiled = jax.jit(fn).lower(*args).compile()  # pyright: ignore[reportUnknownMemberType]
        timed = _profile(compiled, iterations, args)
    except Exception as exc:  # a tiling that does not fit: say so, go on
        print(f"    ({type(exc).__name__}: {str(exc).splitlines()[0][:100]})")
        return float("inf")
    return statistics.median(timed if isinstance(timed, list) else [timed]) * 1e3


def _apply(pull: Any, ct: jax.Array) -> Any:
    return pull(ct)


def _attention_bwd(*args: jax.Array, causal: bool, tiling: AttentionBwdTiling) -> Any:
    q, k, v, out, lse, g = args
    return attention_backward(q, k, v, (out, lse), g, causal=causal, tiling=tiling)


def _xla_us(
    reference: Callable[..., jax.Array], args: tuple[jax.Array, ...], g: jax.Array, n: int
) -> float:
    """XLA's VJP of the reference on residuals made outside the timed program."""
    _, pull = jax.vjp(reference, *args)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return cupti_us(_apply, pull, g, iterations=n)


def _line(label: str, us: float, xla: float, best: bool) -> None:
    mark = " <- best" if best else ""
    print(f"  {label:<58}{us:10.1f} µs{xla / us:8.2f}x{mark}")


def attention(seq: int, n: int) -> None:
    for causal in (False, True):
        shape = (4, 32, seq, 128)
        q, k, v, g = (_normal(i, shape, jnp.bfloat16) for i in range(4))
        print(f"attention {shape} bfloat16 causal={causal}")
        xla = _xla_us(functools.partial(tile_std.attention_ref, causal=causal), (q, k, v), g, n)
        print(f"  {'XLA autodiff of the reference':<58}{xla:10.1f} µs")
        out, lse = attention_with_lse(q, k, v, causal)
        times: list[float] = []
        for t in ATTENTION_TILINGS:
            run = functools.partial(_attention_bwd, causal=causal, tiling=t)
            times.append(cupti_us(run, q, k, v, out, lse, g, iterations=n))
        for t, us in zip(ATTENTION_TILINGS, times, strict=True):
            label = f"q{t.q_step}/kv{t.kv_held} kv{t.kv_step}/q{t.q_held} w{t.num_warps} s{t.num_stages}"
            _line(label, us, xla, us == min(times))


def _row_ops(
    x: jax.Array, w: jax.Array, b: jax.Array
) -> dict[str, tuple[Any, tuple[jax.Array, ...], Any]]:
    return {
        "softmax": (tile_std.softmax_ref, (x,), softmax_backward),
        "rmsnorm": (
            tile_std.rmsnorm_ref,
            (x, w),
            functools.partial(rmsnorm_backward, eps=RMSNORM_EPS),
        ),
        "layernorm": (
            tile_std.layernorm_ref,
            (x, w, b),
            functools.partial(layernorm_backward, eps=LAYERNORM_EPS),
        ),
    }


def rows(n: int) -> None:
    for shape in ((4096, 4096), (16384, 8192)):
        for dtype in (jnp.bfloat16, jnp.float32):
            x, g = _normal(0, shape, dtype), _normal(1, shape, dtype)
            w = (1 + 0.3 * _normal(2, shape[-1:], jnp.float32)).astype(dtype)
            b = (0.3 * _normal(3, shape[-1:], jnp.float32)).astype(dtype)
            for name, (ref, args, backward) in _row_ops(x, w, b).items():
                print(f"{name} {shape} {jnp.dtype(dtype).name}")
                xla = _xla_us(ref, args, g, n)
                print(f"  {'XLA autodiff of the reference':<58}{xla:10.1f} µs")
                times: list[float] = []
                for tiling in ROW_TILINGS:
                    run = cast("Callable[..., Any]", functools.partial(backward, **tiling))
                    times.append(cupti_us(run, *args, g, iterations=n))
                for tiling, us in zip(ROW_TILINGS, times, strict=True):
                    _line(str(tiling or "auto"), us, xla, us == min(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("parts", nargs="*", default=["attention", "rows"])
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=30)
    opts = parser.parse_args()
    if "attention" in opts.parts:
        attention(opts.seq, opts.iterations)
    if "rows" in opts.parts:
        rows(opts.iterations)


if __name__ == "__main__":
    main()
