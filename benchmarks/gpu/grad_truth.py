"""Are tile's `bwd` and `fwd_bwd` timings true? tile-std attention and LayerNorm (issue #35).

First a real `tile bench --mode bwd,fwd_bwd` of the two kernels' GPU bench cases (a child
process, as a user runs it). Then, in this process, each case's same jitted program (the
runner's mode kernel: for `bwd` the VJP applied to residuals made outside, for `fwd_bwd` value
and VJP in one program) timed by `jax.experimental.mosaic.gpu.profiler.measure` directly.
Prints per case tile's median, the direct CUPTI median and their ratio (target: within 1%),
and tile's median of XLA's autodiff of the reference beside the kernel's (the speed targets:
every Pallas backward at least as fast as XLA's, attention's at least 2x).

Usage: python benchmarks/gpu/grad_truth.py [-k FILTER] [--max-time S] [--samples N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

KERNELS = ("std/attention", "std/layernorm")
RUN = Path("/tmp/grad-truth-run")
CUPTI_LIVE_BYTES = 8 << 30  # outputs measure() keeps alive per call, as accuracy.py bounds them


def tile_bench(filters: list[str], max_time: float) -> dict[str, dict[str, Any]]:
    """Run `tile bench` on the kernels in both gradient modes; its report's cases by id."""
    argv = [sys.executable, "-m", "tile_cli", "bench", "--mode", "bwd,fwd_bwd", "-o", str(RUN)]
    argv += [a for name in KERNELS for a in ("--kernel", name)]
    argv += [a for f in filters for a in ("-k", f)]
    argv += ["--max-time", str(max_time)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
    report = json.loads((RUN / "report.json").read_text())
    return {c["case_id"]: c for c in report["cases"]}


def _program(name: str, case: Any) -> tuple[Any, list[Any]]:
    """The case's program as the runner builds it: compiled, and its dynamic arguments."""
    import jax

    import tile_runner as tile
    from tile_runner._compile import bind_static
    from tile_runner._vjp import mode_kernel

    kdef = tile.get_kernel(name)
    mk = mode_kernel(kdef, kdef.fn, case.mode)
    args = mk.inputs(case, tile.case_key(0, case.id))
    fn, dynamic = bind_static(mk.fn, args)
    compiled = jax.jit(fn).lower(*dynamic).compile()  # pyright: ignore[reportUnknownMemberType]
    return compiled, list(dynamic)


def cupti_median(name: str, case: Any, samples: int, streak: int) -> float:
    """Median seconds of the case's program under a direct CUPTI measurement, in runs of at
    most `streak` back-to-back calls: tile's own run took the case's samples in batches of at
    most that many, and a long compute-bound kernel called for longer runs heats the GPU into
    lower clocks (2026-12-05 on an H100: 100-call runs of attention's 5 ms fwd_bwd read 2%
    slower than tile's 10)."""
    import jax
    from jax.experimental.mosaic.gpu import profiler

    compiled, dynamic = _program(name, case)
    out = compiled(*dynamic)
    out_bytes = sum(x.nbytes for x in jax.tree.leaves(out))
    del out
    per_call = max(1, min(100, streak, CUPTI_LIVE_BYTES // max(1, out_bytes)))
    times: list[float] = []
    while len(times) < samples:
        # The stub leaves measure's result untyped: a float for one iteration, else a list.
        result = cast(
            "tuple[Any, list[float] | float]",
            profiler.measure(compiled, iterations=per_call)(*dynamic),
        )
        timed = result[1]
        times.extend(timed if isinstance(timed, list) else [timed])
    return statistics.median(times) * 1e-3


def _cases(filters: list[str]) -> list[tuple[str, Any]]:
    import tile_runner as tile
    import tile_std

    out: list[tuple[str, Any]] = []
    for name in KERNELS:
        assert name in tile_std.KERNELS, name
        for case in tile.cases(name, "bench"):
            for mode in ("bwd", "fwd_bwd"):
                moded = tile.Case(case.kernel, case.params, mode=mode)
                if not filters or any(tile.matches(moded.id, f) for f in filters):
                    out.append((name, moded))
    return out


def _reference_median(row: dict[str, Any]) -> float | None:
    """tile's median of the reference (XLA's autodiff) on the case, if it was timed."""
    ref = cast("dict[str, Any]", row.get("reference") or {})
    stats = cast("dict[str, Any]", ref.get("stats") or {})
    median = stats.get("median")
    return float(median) if median is not None else None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-k", dest="filters", action="append", default=[])
    parser.add_argument("--max-time", type=float, default=1.0)
    parser.add_argument("--samples", type=int, default=200)
    opts = parser.parse_args()
    report = tile_bench(opts.filters, opts.max_time)
    head = f"{'case':<58}{'tile µs':>10}{'cupti µs':>10}{'ratio':>8}{'XLA µs':>11}{'vs XLA':>8}"
    print(head)
    worst = 0.0
    for name, case in _cases(opts.filters):
        row = report.get(case.id)
        if row is None or row.get("stats") is None:
            print(f"{case.id:<58}  not in tile's report ({row and row.get('status')})")
            continue
        mine = row["stats"]["median"]
        truth = cupti_median(name, case, opts.samples, int(row["stats"]["n"]))
        xla = _reference_median(row)
        speed = f"{xla / mine:7.2f}x" if xla else "      -"
        xla_us = f"{xla * 1e6:11.1f}" if xla else "          -"
        ratio = mine / truth
        worst = max(worst, abs(ratio - 1))
        print(f"{case.id:<58}{mine * 1e6:10.1f}{truth * 1e6:10.1f}{ratio:8.3f}{xla_us}{speed}")
    print(f"worst |tile / cupti - 1| = {worst:.2%} (target: under 1%)")


if __name__ == "__main__":
    main()
