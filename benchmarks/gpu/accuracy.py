"""How close is tile's timing to the truth? One script for a GPU machine.

The elementwise kernel `x*2+1` (float32) at 4 KB, 4 MB, 64 MB and 1 GB, timed by:
  tile      tile_runner.measure(..., timer="auto") (cupti on CUDA), median
  cupti     jax.experimental.mosaic.gpu.profiler.measure called directly, median
  ncu       Nsight Compute gpu__time_duration.sum (--clock-control none --cache-control none)
  wall      naive per-call perf_counter around call + block_until_ready, median
  do_bench  triton.testing.do_bench on torch.add(1, x, alpha=2) (one kernel; L2 cleared
            before each call, CUDA-event timed), median
and prints one table of times (µs) and ratios to the direct CUPTI figure.

Usage: python benchmarks/gpu/accuracy.py [--no-ncu]     (a child mode is used for ncu)
"""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import jax

SIZES = {"4KB": 4 << 10, "4MB": 4 << 20, "64MB": 64 << 20, "1GB": 1 << 30}
NCU_TIMEOUT_S = 75
CUPTI_LIVE_BYTES = 8 << 30
Row = tuple[str, int, float, str, float, float | None, float, float | None]
"""size label, bytes, tile (s), tile's timer, cupti, ncu, wall, do_bench (s; None: not run)"""


def _twice_plus_one(x: jax.Array) -> jax.Array:
    return x * 2.0 + 1.0


def _kernel() -> Callable[[jax.Array], jax.Array]:
    import jax

    # jax.jit's signature names jaxlib's Device, which has no types.
    return jax.jit(_twice_plus_one)  # pyright: ignore[reportUnknownMemberType]


def _input(nbytes: int) -> jax.Array:
    import jax
    import jax.numpy as jnp

    return jax.random.normal(jax.random.key(0), (nbytes // 4,), jnp.float32)


def tile_time(x: jax.Array) -> tuple[float, str]:
    import tile_runner as tile

    m = tile.measure(_twice_plus_one, x, timer="auto", max_time=2.0, min_runs=50)
    return m.median, m.timer


def cupti_time(x: jax.Array) -> float:
    import jax
    from jax.experimental.mosaic.gpu import profiler

    # measure(iterations=N) keeps all N outputs alive: at 1 GB, 200 of them would not fit (the
    # first version of this script hung there in JAX's allocator). Same bound as tile's timer.
    per_call = max(1, min(200, CUPTI_LIVE_BYTES // x.nbytes))
    # The stages' signatures name jaxlib's Device, which has no types.
    compiled = jax.jit(_twice_plus_one).lower(x).compile()  # pyright: ignore[reportUnknownMemberType]
    samples: list[float] = []
    while len(samples) < 200:
        _, ms = profiler.measure(compiled, iterations=per_call)(x)
        # A float for one iteration, a list for more (the stub says a list for any int); None
        # only when no kernel ran, and this one always launches one.
        timed = cast("list[float] | float", ms)
        samples.extend(timed if isinstance(timed, list) else [timed])
    return statistics.median(samples) * 1e-3


def wall_time(x: jax.Array) -> float:
    f = _kernel()
    f(x).block_until_ready()
    samples: list[float] = []
    for _ in range(200):
        t = time.perf_counter()
        f(x).block_until_ready()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def do_bench_time(nbytes: int) -> float | None:
    # Optional and not in the workspace's environment: imported by name (their attributes are
    # Any to the type checker).
    try:
        torch = importlib.import_module("torch")
        do_bench = importlib.import_module("triton.testing").do_bench
    except ImportError:
        return None
    x = torch.randn(nbytes // 4, device="cuda", dtype=torch.float32)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    # 1 + 2 * x in one elementwise kernel (eager `x * 2 + 1` would launch two and move twice the
    # bytes). do_bench clears the L2 before every call and times each launch with CUDA events.
    ms = do_bench(lambda: torch.add(one, x, alpha=2.0), warmup=25, rep=200, return_mode="median")
    return float(ms) * 1e-3


def ncu_child(nbytes: int) -> None:
    """Run the kernel a few times so ncu can time it."""
    f = _kernel()
    x = _input(nbytes)
    for _ in range(8):
        f(x).block_until_ready()


def ncu_time(nbytes: int) -> float | None:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not shutil.which(ncu):
        return None
    cmd = [ncu, "--clock-control", "none", "--cache-control", "none", "--metrics",
           "gpu__time_duration.sum", "-k", "regex:fusion", "--launch-skip", "3", "--csv",
           sys.executable, __file__, "--ncu-child", str(nbytes)]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=NCU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"ncu gave no answer in {NCU_TIMEOUT_S} s at {nbytes} bytes", file=sys.stderr)
        return None
    rows = [r for r in csv.reader(io.StringIO(proc.stdout)) if len(r) > 10]
    if not rows:
        print(f"ncu gave no rows (rc {proc.returncode}): {proc.stderr[-400:]}", file=sys.stderr)
        return None
    header, data = rows[0], rows[1:]
    vi, ui = header.index("Metric Value"), header.index("Metric Unit")
    values: list[float] = []
    for r in data:
        v = float(r[vi].replace(",", ""))
        scale = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}.get(r[ui], 1e-9)
        values.append(v * scale)
    # The child's input generation may launch kernels that match too: they come first, so
    # keep the last launches, which are all the timed kernel.
    return statistics.median(values[-5:]) if values else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-ncu", action="store_true")
    parser.add_argument("--ncu-child", type=int)
    args = parser.parse_args()
    if args.ncu_child:
        ncu_child(args.ncu_child)
        return
    import jax

    # jaxlib ships no types for its Device class: jax.devices() is a list of Unknown.
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")  # pyright: ignore[reportUnknownMemberType]
    rows: list[Row] = []
    for label, nbytes in SIZES.items():
        x = _input(nbytes)
        t_tile, timer = tile_time(x)
        t_cupti = cupti_time(x)
        t_wall = wall_time(x)
        t_bench = do_bench_time(nbytes)
        t_ncu = None if args.no_ncu else ncu_time(nbytes)
        rows.append((label, nbytes, t_tile, timer, t_cupti, t_ncu, t_wall, t_bench))
        print(f"measured {label}: {rows[-1][2:]}", flush=True)
        del x

    def us(v: float | None) -> str:
        return f"{v * 1e6:9.2f}" if v is not None else "        -"

    def r(v: float | None, ref: float) -> str:
        return f"{v / ref:7.3f}" if v is not None else "      -"

    print("\ntimes in µs (median); ratios to the direct CUPTI figure")
    print(f"{'size':>5} {'tile':>9} {'timer':>6} {'cupti':>9} {'ncu':>9} {'wall':>9} "
          f"{'do_bench':>9} | {'tile/c':>7} {'ncu/c':>7} {'tile/ncu':>8} {'wall/c':>7} "
          f"{'bench/c':>7} {'TB/s':>6}")  # fmt: skip
    for label, nbytes, t, timer, c, n, w, b in rows:
        tbps = 2 * nbytes / t / 1e12
        tn = f"{t / n:8.3f}" if n else "       -"
        print(f"{label:>5} {us(t)} {timer:>6} {us(c)} {us(n)} {us(w)} {us(b)} | "
              f"{r(t, c)} {r(n, c)} {tn} {r(w, c)} {r(b, c)} {tbps:6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
