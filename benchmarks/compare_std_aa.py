"""False alarms of `tile compare` on repeated CPU runs of tile-std itself (A/A only).

`benchmarks/compare_false_alarms.py` needs a known slowdown, so it uses three fixture kernels
that can do 10% more work on demand. This script asks the other half of the question on the
real workload: it runs `tile bench` of tile-std (the 18 CPU cases: Pallas in interpret mode
against jnp references) N times in fresh processes and compares each run with the next, exactly
as `tile compare` does with its defaults. Every `regression` is a false alarm.

    uv run python benchmarks/compare_std_aa.py [--runs 11] [--pin] [--keep DIR]

`--pin` sets `[runner] pin_cpu = true`, `--rounds N` `[bench] rounds = N`. About 40-60 s a
run on a 2-core VM. `--pooled K` also compares every run after the first K with a baseline
pooled from those K (`tile baseline save R00 ... R0K-1`), as CI would. `--judge DIR`
compares runs made elsewhere (benchmarks/gpu/run_h200.sh's `aa` step).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from compare_false_alarms import probe_machine

import tile_artifacts as ta


def bench(root: Path, name: str) -> None:
    """One fresh `tile bench` of tile-std writing runs/<name>."""
    proc = subprocess.run(
        [sys.executable, "-m", "tile_cli", "bench", "-o", f"runs/{name}"],
        cwd=root,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        sys.exit(f"tile bench {name} failed with exit {proc.returncode}:\n{proc.stderr[-3000:]}")


Runs = dict[str, ta.Report]  # run name (R00, ...) -> its report, in name order


def load_runs(root: Path) -> Runs:
    names = sorted(p.name for p in (root / "runs").iterdir())
    return {name: ta.read_report(root / "runs" / name / "report.json") for name in names}


def print_rates(total: Counter[str], suites_with_alarm: int, pairs: int) -> None:
    cases = sum(total.values())
    false = total["regression"] + total["improvement"]
    print(f"verdicts: {dict(sorted(total.items()))}")
    print(
        f"false verdicts (regression or improvement): {false}/{cases} case comparisons "
        f"({false / max(cases, 1):.1%}), {suites_with_alarm}/{pairs} suite "
        f"comparisons ({suites_with_alarm / max(pairs, 1):.1%}); inconclusive "
        f"{total['inconclusive']}/{cases} ({total['inconclusive'] / max(cases, 1):.1%})"
    )


def judge(runs: Runs, alpha: float = 0.05, *, all_pairs: bool = False) -> None:
    """Compare each run with the next (`all_pairs`: every run with every later one); print
    verdicts per case and the false-alarm rates."""
    per_case: dict[str, Counter[str]] = {}
    suites_with_alarm = 0
    reports = list(runs.values())
    pairs = itertools.combinations(reports, 2) if all_pairs else itertools.pairwise(reports)
    compared = 0
    for base, cur in pairs:
        compared += 1
        rows = ta.compare.compare_runs(base, cur, alpha=alpha).rows
        for row in rows:
            per_case.setdefault(row.case_id, Counter())[row.judgement] += 1
        suites_with_alarm += any(row.judgement in ("regression", "improvement") for row in rows)
    width = max(len(c) for c in per_case)
    print(f"{compared} A/A comparisons of {len(runs)} tile-std runs (alpha {alpha:g})\n")
    for case_id, verdicts in sorted(per_case.items()):
        print(f"  {case_id:<{width}}  {dict(sorted(verdicts.items()))}")
    print()
    print_rates(sum(per_case.values(), Counter[str]()), suites_with_alarm, compared)


def judge_pooled(runs: Runs, k: int, alpha: float = 0.05) -> None:
    """Compare each run after the first `k` with a baseline pooled from those `k`, as CI would
    (`tile baseline save R00 ... ; tile compare baselines/cpu.json RUN`)."""
    names = list(runs)
    baseline = ta.compare.baseline_from_reports([runs[n] for n in names[:k]])
    total = Counter[str]()
    suites_with_alarm = 0
    for name in names[k:]:
        rows = ta.compare.compare_runs(baseline, runs[name], alpha=alpha).rows
        total.update(row.judgement for row in rows)
        alarms = [row for row in rows if row.judgement in ("regression", "improvement")]
        suites_with_alarm += bool(alarms)
        for row in alarms:
            print(f"  {name} {row.case_id}: {row.reason}")
    pairs = len(names) - k
    print(f"\nagainst a baseline pooled from {', '.join(names[:k])}: {pairs} A/A comparisons")
    print_rates(total, suites_with_alarm, pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--pin", action="store_true", help="[runner] pin_cpu = true")
    parser.add_argument("--rounds", type=int, default=None, help="[bench] rounds")
    parser.add_argument("--alpha", type=float, default=0.05, help="compare's significance level")
    parser.add_argument(
        "--pooled", type=int, default=0, help="also judge against a baseline of the first K runs"
    )
    parser.add_argument("--keep", type=Path, default=None, help="measure into this directory")
    parser.add_argument(
        "--judge", type=Path, default=None, help="only judge DIR/runs/* (e.g. runs from a GPU)"
    )
    parser.add_argument("--all-pairs", action="store_true", help="judge every pair of runs")
    args = parser.parse_args()
    if args.judge is not None:
        print(f"runs in {args.judge}")
        runs = load_runs(args.judge)
        judge(runs, args.alpha, all_pairs=args.all_pairs)
        if args.pooled:
            judge_pooled(runs, args.pooled, args.alpha)
        return 0
    with tempfile.TemporaryDirectory(prefix="tile-std-aa-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        toml = f"[bench]\nrounds = {args.rounds}\n" if args.rounds else ""
        toml += "[runner]\npin_cpu = true\n" if args.pin else ""
        (root / "tile.toml").write_text(toml)
        before = probe_machine()
        for i in range(args.runs):
            bench(root, f"R{i:02d}")
            print(f"  R{i:02d} done", file=sys.stderr, flush=True)
        print(f"runs in {root}")
        runs = load_runs(root)
        judge(runs, args.alpha)
        if args.pooled:
            judge_pooled(runs, args.pooled, args.alpha)
        print(f"\nbefore the runs: {before}\nafter the runs:  {probe_machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
