"""What the per-kernel breakdown costs a run: the host work it adds (keeping each launch per
call, then summarising each kernel), replayed for every case of a real run's report.json at
that case's own sample count and kernel count, over the run's wall time (issue #36: under 1%).

The replay times exactly the code the runner runs (`KernelLog.add_calls` in batches as the
sampler takes them, `kernel_times` once per case); the device work is not part of it (the
breakdown adds none: CUPTI's session reports every launch anyway).

Once per case the runner also reads the compiled program's HLO text for the kernels'
origins (`compiled.as_text()`, then `hlo_origins`); `--hlo` compiles each case of the run
as tile does (tile-std's kernels, default configuration) and adds that too.

Usage: python benchmarks/breakdown_cost.py [--hlo] RUN_DIR [RUN_DIR ...]
       python benchmarks/breakdown_cost.py --synthetic     (30 cases x 3 kernels x 1000 samples)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import cast

from tile_artifacts import read_report
from tile_runner._breakdown import KernelLog, kernel_times

_BATCH = 100  # samples per sampler batch (the runner's grow from 10 to 10,000)


def replay(samples: int, kernels: int) -> float:
    """Seconds of host work the breakdown adds to one case of `samples` x `kernels`."""
    call = [(f"fusion_{j}", 0.01 * (j + 1)) for j in range(kernels)]
    t0 = time.perf_counter()
    log = KernelLog()
    left = samples
    while left > 0:
        k = min(_BATCH, left)
        log.add_calls(call * k, k)
        left -= k
    kernel_times(log, samples, 0.01 * kernels, None)
    return time.perf_counter() - t0


def hlo_text(kernel_name: str, case_id: str) -> float:
    """Seconds to read one case's compiled HLO text and find its kernels' origins."""
    import tile_runner as tile
    from tile_runner._breakdown import hlo_origins
    from tile_runner._compile import aot_compile, bind_static
    from tile_runner._configure import with_default_config

    kernel = tile.get_kernel(kernel_name)
    case = next(c for c in tile.cases(kernel_name, "bench") if c.id == case_id)
    made: object = kernel.inputs(case, tile.case_key(0, case.id))
    args = cast("tuple[object, ...]", made) if isinstance(made, tuple) else (made,)
    bound, dynamic = bind_static(with_default_config(kernel.fn), args)
    compiled = aot_compile(bound, dynamic).compiled
    t0 = time.perf_counter()
    hlo_origins(str(compiled.as_text()))
    return time.perf_counter() - t0


def from_run(run_dir: Path, *, hlo: bool = False) -> None:
    report = read_report(run_dir / "report.json")
    wall = report.timing.wall_s if report.timing is not None else None
    cost = 0.0
    cases = 0
    if hlo:
        import tile_runner as tile

        tile.discover(plugins=["tile-std"])
    for case in report.cases:
        if not case.samples:
            continue
        launches = sum(k.launches for k in case.kernels or []) or 1
        cost += replay(len(case.samples), launches)
        cost += hlo_text(case.kernel, case.case_id) if hlo else 0.0
        cases += 1
    share = f"{100 * cost / wall:.3f}% of the run's {wall:.1f} s wall" if wall else "no wall_s"
    what = "breakdown host work" + (" with HLO text" if hlo else "")
    print(f"{run_dir}: {cases} cases, {what} {cost * 1e3:.1f} ms = {share}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--hlo", action="store_true", help="add each case's HLO text (compiles)")
    args = parser.parse_args()
    if args.synthetic or not args.runs:
        each = [replay(1000, 3) for _ in range(30)]
        print(f"synthetic: 30 cases x 3 kernels x 1000 samples: {sum(each) * 1e3:.1f} ms "
              f"({sum(each) / 30 * 1e3:.2f} ms a case)")  # fmt: skip
    for run in args.runs:
        from_run(run, hlo=args.hlo)


if __name__ == "__main__":
    main()
