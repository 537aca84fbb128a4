"""Does adaptive sampling stop where it should? (issue: tile-stats and adaptive sampling)

Times, on this machine's default JAX device, a kernel of about 1 ms and one of about a
microsecond with target precision 1% and prints how many samples each took, why it stopped,
and how long the sampling took against its max_time budget.

    uv run python benchmarks/sampling_stop.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

import tile_runner as tile


def _run(
    label: str, fn: Callable[[jax.Array], jax.Array], x: jax.Array, *, max_time: float
) -> None:
    t0 = time.perf_counter()
    m = tile.measure(fn, x, max_time=max_time, target_precision=0.01, min_runs=10)
    wall = time.perf_counter() - t0
    s = m.stats
    low, high = s.ci_low, s.ci_high
    half = float("nan") if low is None or high is None else (high - low) / 2 / s.median * 100
    print(f"{label:<22} median {s.median * 1e6:9.1f} µs  n={s.n:<6} stop={s.stop_reason:<9} "
          f"CI ±{half:4.2f}%  sampling+compile {wall:5.2f} s (max_time {max_time} s)")  # fmt: skip


def main() -> None:
    # jaxlib ships no types for its Device class: jax.devices() is a list of Unknown.
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}")  # pyright: ignore[reportUnknownMemberType]
    key = jax.random.key(0)
    # About 1 ms on an idle 2-core CPU: a 256x256 float32 matmul chain.
    a = jax.random.normal(key, (256, 256), jnp.float32)
    _run("~1 ms matmul", lambda x: (x @ x) @ x, a, max_time=2.0)
    tiny = jax.random.normal(key, (8,), jnp.float32)
    _run("~µs elementwise", lambda x: x + 1.0, tiny, max_time=0.5)
    _run("~µs, max_time 0.2", lambda x: x + 1.0, tiny, max_time=0.2)


if __name__ == "__main__":
    main()
