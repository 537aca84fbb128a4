"""What recording a run costs as its plan grows: N synthetic cases through the real recorder.

    uv run python benchmarks/checkpoint_scale.py [--cases 100 1000 3000] [--old-upto 1000]

A `RunRecorder` (tile-harness, in this process, writing a real run directory with fsync) is
fed a hello, a plan of N cases, then each case's start and `bench_result` (20 samples, a
reference, a check), and is finalized, as `tile bench` feeds it from a runner. The figures
are the process CPU time and the wall time from the recorder's creation to its final
manifest, for the case log with rare compactions (`_checkpoint.py`, the rule now) and for
the old rule (the whole report rewritten after every case, `Checkpoints.every_case`), and
their ratio; `report rewrites` counts the compactions. The old rule's time grows with the
square of N (issue 39: 1000 cases took 145 s of CLI time), so it is run only up to
`--old-upto` cases. Each run directory must pass `tile schema-check` and read back with
every case.

This is not a timed test: speed depends on the machine, so the figures are printed for
people to read (exit 1 only when a run directory does not validate).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import QuietDisplay, RunRecorder, open_run, resolve_config


def _stats(samples: list[float]) -> tp.Stats:
    ordered = sorted(samples)
    n = len(ordered)
    median = (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return tp.Stats(n=n, min=ordered[0], max=ordered[-1], mean=sum(ordered) / n,
                    median=median, stdev=1e-6, mad=1e-6, q1=ordered[n // 4],
                    q3=ordered[3 * n // 4], p5=ordered[0], p95=ordered[-1])  # fmt: skip


def _result(info: tp.CaseInfo, i: int) -> tp.BenchResult:
    samples = [1e-3 + (i % 7) * 1e-5 + k * 1e-7 for k in range(20)]
    reference = [2 * s for s in samples]
    return tp.BenchResult(
        case_id=info.case_id,
        kernel=info.kernel,
        params=dict(info.params),
        timer="wall",
        samples=samples,
        stats=_stats(samples),
        reference=tp.Reference(samples=reference, stats=_stats(reference), speedup=2.0),
        check=tp.Check(passed=True, max_abs_err=1e-7, rel_l2_err=1e-8, tol=1e-5),
    )


def record(project: Path, out: Path, n: int, *, every_case: bool) -> tuple[float, float, int]:
    """Feed n cases through a recorder into `out`; (CPU s, wall s, report rewrites)."""
    resolved = resolve_config(None, {}, cwd=project)
    setup = open_run("bench", resolved, out, ["tile", "bench"])
    cases = [
        tp.CaseInfo(case_id=f"scale/k[n={i}]", kernel="scale/k", params={"n": str(i)})
        for i in range(n)
    ]
    device = tp.DeviceInfo(id=0, platform="cpu", device_kind="cpu")
    cpu, wall = time.process_time(), time.perf_counter()
    recorder = RunRecorder(setup, ui=QuietDisplay())
    recorder.checkpoints.every_case = every_case
    recorder.on_hello(tp.Hello(protocol_version=1, runner_version="synthetic",
                               python_version="3", backend="cpu", devices=[device]))  # fmt: skip
    recorder.on_plan(tp.Plan(command="bench", cases=cases))
    for i, info in enumerate(cases):
        recorder.on_case_start(tp.CaseStart(case_id=info.case_id, index=i, total=n))
        recorder.on_message(_result(info, i))
    recorder.finalize()
    return time.process_time() - cpu, time.perf_counter() - wall, recorder.checkpoints.compactions


def _valid(out: Path, n: int) -> bool:
    problems = ta.check.check_path(out)
    for problem in problems[:5]:
        print(f"  {problem}", file=sys.stderr)
    report = ta.read_report(out / ta.REPORT_JSON)
    return not problems and sum(c.status == "success" for c in report.cases) == n


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[100, 1000, 3000])
    parser.add_argument("--old-upto", type=int, default=1000,
                        help="run the old rule (a rewrite per case) up to this many cases")  # fmt: skip
    args = parser.parse_args()
    ok = True
    print(f"{'cases':>6}  {'rule':<26} {'CPU s':>8} {'wall s':>8} {'rewrites':>8}  CPU ratio")
    with tempfile.TemporaryDirectory(prefix="tile-checkpoint-scale-") as tmp:
        root = Path(tmp)
        for n in args.cases:
            rules = [("case log, rare compaction", False)]
            rules += [("old: rewrite every case", True)] if n <= args.old_upto else []
            new_cpu = 0.0
            for name, every in rules:
                out = root / f"run-{n}-{'old' if every else 'new'}"
                cpu, wall, rewrites = record(root, out, n, every_case=every)
                ok = _valid(out, n) and ok
                new_cpu = new_cpu or cpu
                ratio = f"{cpu / new_cpu:6.1f}x" if every else ""
                print(f"{n:>6}  {name:<26} {cpu:8.2f} {wall:8.2f} {rewrites:>8}  {ratio}",
                      flush=True)  # fmt: skip
    if not ok:
        print("a run directory did not validate or lost cases", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
