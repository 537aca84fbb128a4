"""Two runs of the same code with many cases: does `tile compare` call any change? (issue 33:
"two runs of the same code with 1,000 and with 10,000 cases: no regression or improvement").

    uv run --no-sync python benchmarks/compare_many_aa.py [--cases 1000 10000] [--shift 0.01]

Each case is judged at alpha on its own p-value, so without a control across the run, m
identical cases give about alpha * m / 2 false "regressions" by chance alone (the issue saw 1
at 1,000 cases and 18 at 10,000). The judge holds the run's false discoveries to alpha
(Benjamini-Hochberg) and needs a change beyond the noise floor, so the count should be 0.

Both runs are written by the real recorder (tile-harness `RunRecorder`, as `tile bench`
writes them: a real run directory each) from the same synthetic machine, then read back and
judged by `tile_artifacts.compare.compare_runs` with `tile compare`'s defaults. Each case's
`--samples` samples (and its reference's, at twice the time) are log-normal around the case's
own median with a `--spread` sigma per sample; `--shift S` adds what a process changes for a whole run:
each case's median in each run moves by a normal factor of standard deviation S (a kernel and
its reference by different factors), which is what makes identical code differ between two
runs on a real machine. The figures print per case count and per shift; there is no target
to meet here beyond the issue's "none".
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import QuietDisplay, RunRecorder, open_run, resolve_config
from tile_runner._stats import summarize


def _summary(samples: list[float]) -> tp.Stats:
    """The runner's own summary of the samples (a short bootstrap: many cases)."""
    return summarize(samples, None, resamples=200)


@dataclass(frozen=True)
class Machine:
    """What the synthetic machine does to every case of one run."""

    samples: int  # per case (and as many for its reference)
    spread: float  # per-sample log-normal sigma
    shift: float  # per-case, per-run log-normal sigma of the median (0: none)

    def draw(self, rng: random.Random, median: float) -> list[float]:
        if self.shift:
            median *= rng.lognormvariate(0.0, self.shift)
        return [median * rng.lognormvariate(0.0, self.spread) for _ in range(self.samples)]


def record(project: Path, out: Path, n: int, *, seed: int, machine: Machine) -> Path:
    """One run of n cases from the synthetic machine, written by the real recorder."""
    rng = random.Random(seed)
    resolved = resolve_config(None, {}, cwd=project)
    setup = open_run("bench", resolved, out, ["tile", "bench"])
    cases = [tp.CaseInfo(case_id=f"aa/k[n={i}]", kernel="aa/k", params={"n": str(i)})
             for i in range(n)]  # fmt: skip
    device = tp.DeviceInfo(id=0, platform="cpu", device_kind="cpu")
    recorder = RunRecorder(setup, ui=QuietDisplay())
    recorder.on_hello(tp.Hello(protocol_version=1, runner_version="synthetic",
                               python_version="3", backend="cpu", devices=[device]))  # fmt: skip
    recorder.on_plan(tp.Plan(command="bench", cases=cases))
    for i, info in enumerate(cases):
        base = 1e-4 * (1 + i % 97)  # each case its own time, the same in every run
        kernel, reference = machine.draw(rng, base), machine.draw(rng, 2 * base)
        k_stats, r_stats = _summary(kernel), _summary(reference)
        recorder.on_case_start(tp.CaseStart(case_id=info.case_id, index=i, total=n))
        recorder.on_message(
            tp.BenchResult(
                case_id=info.case_id, kernel="aa/k", params=dict(info.params), timer="wall",
                samples=kernel, stats=k_stats,
                reference=tp.Reference(samples=reference, stats=r_stats,
                                       speedup=r_stats.median / k_stats.median),
                check=tp.Check(passed=True, max_abs_err=0.0, rel_l2_err=0.0, tol=1e-5),
            )
        )  # fmt: skip
    recorder.finalize()
    return out / ta.REPORT_JSON


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--shift", type=float, nargs="*", default=[0.0, 0.01, 0.02])
    parser.add_argument("--samples", type=int, default=100, help="per case")
    parser.add_argument("--spread", type=float, default=0.03, help="per-sample sigma")
    args = parser.parse_args()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"{'cases':>6} {'shift':>6} {'regression':>10} {'improvement':>11} {'neutral':>8} "
          f"{'inconclusive':>12} {'s':>6}")  # fmt: skip
    false = 0
    with tempfile.TemporaryDirectory(prefix="tile-many-aa-") as tmp:
        root = Path(tmp)
        for n in args.cases:
            for shift in args.shift:
                started = time.perf_counter()
                tag = f"{n}-{shift:g}"
                machine = Machine(args.samples, args.spread, shift)
                a = record(root, root / f"A-{tag}", n, seed=1 + n, machine=machine)
                b = record(root, root / f"B-{tag}", n, seed=2 + n, machine=machine)
                doc = ta.compare.compare_runs(ta.read_report(a), ta.read_report(b))
                got = Counter(r.judgement for r in doc.rows)
                false += got["regression"] + got["improvement"]
                print(f"{n:>6} {shift:>6.0%} {got['regression']:>10} {got['improvement']:>11} "
                      f"{got['neutral']:>8} {got['inconclusive']:>12} "
                      f"{time.perf_counter() - started:>6.0f}", flush=True)  # fmt: skip
    print(f"false verdicts in all: {false} (issue 33: none)")
    return 0 if false == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
