"""Time tile-stats' bootstrap CI of the median against a vectorized numpy implementation.

Run with `uv run python benchmarks/stats_speed.py`. Prints best-of-N times and the speedup; the
goal is tile-stats at least 10x faster than numpy on n = 1,000 values and 10,000 resamples.
`--json` prints one JSON line instead (the build-profile harness reads it, `just build-profiles`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

import numpy as np

import tile_stats


def numpy_bootstrap_median_ci(
    xs: np.ndarray, *, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap CI of the median, the usual vectorized numpy way."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, xs.size, size=(resamples, xs.size))
    medians = np.median(xs[idx], axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(medians, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of `repeats` calls, in seconds (best filters out scheduler noise)."""
    times: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Run the comparison and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON line of figures")
    parser.add_argument(
        "--no-numpy",
        action="store_true",
        help="time tile-stats only (numpy is the same in every build)",
    )
    args = parser.parse_args()

    n: int = args.n
    resamples: int = args.resamples
    xs = np.random.default_rng(42).lognormal(mean=0.0, sigma=0.25, size=n)
    values: list[float] = xs.tolist()

    def run_tile() -> tuple[float, float]:
        return tile_stats.bootstrap_ci(values, resamples=resamples, seed=1)

    def run_numpy() -> tuple[float, float]:
        return numpy_bootstrap_median_ci(xs, resamples=resamples, confidence=0.95, seed=1)

    run_tile()  # warm caches and the thread pool path once
    t_tile = best_of(run_tile, args.repeats)
    if args.json:
        t_np = None if args.no_numpy else best_of(run_numpy, args.repeats)
        figures = {"n": args.n, "resamples": args.resamples, "repeats": args.repeats}
        print(json.dumps({**figures, "tile_stats_s": t_tile, "numpy_s": t_np}))
        return
    t_numpy = best_of(run_numpy, args.repeats)
    lo_t, hi_t = run_tile()
    lo_n, hi_n = run_numpy()
    print(
        f"bootstrap CI of the median: n={args.n}, resamples={args.resamples}, "
        f"best of {args.repeats}, {os.cpu_count()} CPUs"
    )
    print(f"  tile-stats : {t_tile * 1e3:8.2f} ms   CI [{lo_t:.5f}, {hi_t:.5f}]")
    print(f"  numpy      : {t_numpy * 1e3:8.2f} ms   CI [{lo_n:.5f}, {hi_n:.5f}]")
    print(f"  speedup    : {t_numpy / t_tile:8.1f}x (target >= 10x)")


if __name__ == "__main__":
    main()
