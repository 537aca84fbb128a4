"""False alarms and detection of `tile compare` on repeated CPU runs of the same code.

Run with `uv run python benchmarks/compare_false_alarms.py` (22 `tile bench` processes, about
4 minutes on a 2-core machine; `--quick`: 8 processes, about 1.5 minutes). It writes a project
with three fixture kernels to a temporary directory, then alternates fresh `tile bench`
processes of the unchanged code (A) and of the same code made ~10% slower (B:
`TILE_CMP_SLOWDOWN=1` makes every kernel do ~10% more work for the same result; the references
do not change):

    A00 B00 A01 B01 ... A10 B10

A/A comparisons, (A_i, A_i+1) and (B_i, B_i+1), compare the same code measured twice: every
`regression` there is a false alarm. A/B comparisons, (A_i, B_i) and (A_i+1, B_i), compare the
code with its slowed copy measured next to it: every `regression` there is a detection. Each
comparison is judged by `tile_artifacts.compare_runs` with its defaults (noise floor 2%,
alpha 0.05), exactly as `tile compare` does; the line "previous rule" judges the same rows by
the rule before the drift controls (point beyond the floor, p < alpha, CI above 1). Targets:
false-alarm rate <= 5%, detection rate >= 90%. Exit 0 when both are met, else 1.

The kernels (about 11 µs, 0.55 ms and 2 ms of wall time per call on a 2-core AMD EPYC VM):
- `cmp/tiny`:   x * 2 + 1 on 256 floats; B adds a fused `sin` pass over 256 zeros (+~1 µs).
- `cmp/matmul`: a 128x128 matmul followed by 9 multiplications by an identity matrix held in a
                runtime input (XLA cannot fold it away); B does 10 of them: +10% FLOPs.
- `cmp/reduce`: the sum of 2^20 floats (4 MB) done as 10 passes of `sum(x * s[i])` (s a runtime
                vector of ones) in a `fori_loop`, averaged; B does 11 passes: +10% work.
The achieved slowdown is printed (median A/B ratio per kernel, next to the median A/A ratio and
the references' median A/B ratio) so that the 10% can be checked.

Sampling uses tile's defaults unless `--min-time` / `--max-time` are given. `--keep DIR` keeps
the runs (and the load average around each) in DIR; `--rejudge DIR` judges runs kept earlier
without measuring again, to try another rule or noise floor on the same data.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import tile_artifacts as ta

KERNELS = '''\
"""Fixture kernels: TILE_CMP_SLOWDOWN=1 makes each do ~10% more work for the same result."""

import os

import jax
import jax.numpy as jnp
from jax import lax

import tile_runner as tile

SLOW = os.environ.get("TILE_CMP_SLOWDOWN", "0") == "1"
DOTS = 11 if SLOW else 10  # cmp/matmul: 1 real matmul + (DOTS - 1) by the identity
PASSES = 11 if SLOW else 10  # cmp/reduce: passes over the 4 MB input
SIN_PASSES = 1 if SLOW else 0  # cmp/tiny: fused sin passes over 256 zeros, ~1 us each


def _tiny_inputs(case, key):
    return (tile.normal(key, (case.n,), "float32"), jnp.zeros((case.n,), jnp.float32))


@tile.kernel(
    "cmp/tiny",
    inputs=_tiny_inputs,
    reference=lambda x, z: x * 2.0 + 1.0,
    bench=tile.axes(n=[256]),
)
def tiny(x, z):
    if not SIN_PASSES:
        return x * 2.0 + 1.0
    for _ in range(SIN_PASSES):
        z = jnp.sin(z)  # sin(0) == 0: same result, more work
    return x * 2.0 + 1.0 + z


def _mm_inputs(case, key):
    k1, k2 = jax.random.split(key)
    return (
        tile.normal(k1, (case.n, case.n), "float32"),
        tile.normal(k2, (case.n, case.n), "float32"),
        jnp.eye(case.n, dtype=jnp.float32),
    )


@tile.kernel(
    "cmp/matmul",
    inputs=_mm_inputs,
    reference=lambda a, b, eye: a @ b,
    bench=tile.axes(n=[128]),
)
def matmul(a, b, eye):
    y = a @ b
    for _ in range(DOTS - 1):
        y = y @ eye  # exact, and not foldable: eye is runtime data
    return y


def _reduce_inputs(case, key):
    return (tile.normal(key, (case.n,), "float32"), jnp.ones((16,), jnp.float32))


@tile.kernel(
    "cmp/reduce",
    inputs=_reduce_inputs,
    reference=lambda x, s: jnp.sum(x),
    bench=tile.axes(n=[1 << 20]),
)
def reduce(x, s):
    def one_pass(i, acc):
        return acc + jnp.sum(x * s[i])  # s[i] depends on i: the pass cannot be hoisted

    return lax.fori_loop(0, PASSES, one_pass, jnp.float32(0.0)) / PASSES
'''

TOML = """\
[project]
paths = ["kernels"]

[bench]
"""


@dataclass(frozen=True)
class Pair:
    """One comparison: which runs, and whether a regression is the right answer."""

    kind: str  # "A/A" or "A/B"
    base: str
    cur: str


def write_project(root: Path, bench_settings: dict[str, float]) -> None:
    """The fixture project: tile.toml (tile's sampling defaults unless given) and the kernels."""
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    (root / "kernels" / "cmp_kernels.py").write_text(KERNELS)
    lines = [f"{key} = {value}" for key, value in bench_settings.items()]
    (root / "tile.toml").write_text(TOML + "".join(line + "\n" for line in lines))


def bench(root: Path, name: str, *, slow: bool) -> None:
    """One fresh `tile bench` process writing runs/<name>."""
    env = {**os.environ, "NO_COLOR": "1", "TILE_CMP_SLOWDOWN": "1" if slow else "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "tile_cli", "bench", "-o", f"runs/{name}"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        sys.exit(f"tile bench {name} failed with exit {proc.returncode}:\n{proc.stderr[-3000:]}")


def probe_machine(seconds: float = 3.0) -> str:
    """How steady this CPU is right now: a fixed pure-Python loop timed over and over.

    On a quiet machine the loop's times agree within a few percent; on a shared VM they wander
    (here: between two speeds about 2x apart, for seconds at a time), and so do benchmarks.
    """
    times: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        total = 0
        for i in range(20_000):
            total += i
        times.append(time.perf_counter() - start)
    center = statistics.median(times)
    off = sum(abs(t / center - 1) > 0.10 for t in times) / len(times)
    deciles = statistics.quantiles(times, n=10)
    return (
        f"CPU steadiness: {off:.0%} of {len(times)} loop timings off the median by >10%, "
        f"p10..p90 = {deciles[0] / center:.2f}..{deciles[-1] / center:.2f} x median"
    )


def measure(root: Path, pairs: int) -> None:
    """A0 B0 A1 B1 ... interleaved, so that slow drift of the machine hits A and B alike."""
    start = time.perf_counter()
    loads: dict[str, list[float]] = {}
    for i in range(pairs // 2 + 1):
        for name, slow in ((f"A{i:02d}", False), (f"B{i:02d}", True)):
            before = os.getloadavg()[0]
            bench(root, name, slow=slow)
            loads[name] = [before, os.getloadavg()[0]]
            done = time.perf_counter() - start
            print(f"  {name} done ({done:.0f} s, load {before:.1f})", file=sys.stderr, flush=True)
    (root / "loadavg.json").write_text(json.dumps(loads, indent=1))


def plan(root: Path, pairs: int) -> list[Pair]:
    """`pairs` A/A pairs and `pairs` A/B pairs from the runs present.

    A/A: (A_i, A_i+1) and (B_i, B_i+1), both the same code measured twice. A/B: (A_i, B_i)
    and (A_i+1, B_i): the unchanged code against the slowed one, measured next to each other.
    """
    runs = sorted(p.name for p in (root / "runs").iterdir() if (p / "report.json").exists())
    a_runs = [r for r in runs if r.startswith("A")]
    b_runs = [r for r in runs if r.startswith("B")]
    same = [Pair("A/A", x, y) for x, y in itertools.pairwise(a_runs)]
    same += [Pair("A/A", x, y) for x, y in itertools.pairwise(b_runs)]
    slowed = [Pair("A/B", a, b) for a, b in zip(a_runs, b_runs, strict=False)]
    slowed += [Pair("A/B", a, b) for a, b in zip(a_runs[1:], b_runs, strict=False)]
    return same[:pairs] + slowed[:pairs]


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{(x - 1) * 100:+5.1f}%"


def _previous_rule(row: ta.ComparisonRow, noise_floor: float, alpha: float) -> bool:
    """Whether the rule before the drift controls called this row a regression."""
    if row.ratio is None or row.ratio_ci_low is None or row.p_value is None:
        return False
    return row.ratio > 1 + noise_floor / 100 and row.p_value < alpha and row.ratio_ci_low > 1


def _rate(hits: int, total: int) -> str:
    return f"{hits / max(total, 1):6.1%} ({hits}/{total})"


def judge_all(root: Path, pairs: int, noise_floor: float, alpha: float) -> int:
    """Compare every planned pair, print the verdicts and the rates; 0 if both targets are met."""
    reports = {p.name: ta.read_report(p / "report.json") for p in (root / "runs").iterdir()}
    plan_ = plan(root, pairs)
    case_ids = sorted({c.case_id for r in reports.values() for c in r.cases})
    tally: dict[tuple[str, str], list[str]] = {}
    ratios: dict[tuple[str, str], list[float]] = {}
    ref_ratios: dict[tuple[str, str], list[float]] = {}
    suites: dict[str, list[bool]] = {"A/A": [], "A/B": []}
    previous: dict[str, list[bool]] = {"A/A": [], "A/B": []}
    previous_suites: dict[str, list[bool]] = {"A/A": [], "A/B": []}
    width = max(len(c) for c in case_ids)
    print(f"noise floor {noise_floor:g}%, alpha {alpha:g}\n")
    for pair in plan_:
        doc = ta.compare_runs(
            reports[pair.base], reports[pair.cur], noise_floor_pct=noise_floor, alpha=alpha
        )
        ref = ta.compare_runs(
            reports[pair.base], reports[pair.cur], noise_floor_pct=noise_floor, alpha=alpha,
            metric="ref_time_s",
        )  # fmt: skip
        ref_by_case = {r.case_id: r for r in ref.rows}
        print(f"{pair.kind} {pair.base} -> {pair.cur}")
        for row in sorted(doc.rows, key=lambda r: r.case_id):
            key = (pair.kind, row.case_id)
            tally.setdefault(key, []).append(row.judgement)
            if row.ratio is not None:
                ratios.setdefault(key, []).append(row.ratio)
            ref_row = ref_by_case.get(row.case_id)
            if ref_row is not None and ref_row.ratio is not None:
                ref_ratios.setdefault(key, []).append(ref_row.ratio)
            ref_ratio = ref_row.ratio if ref_row is not None else None
            previous[pair.kind].append(_previous_rule(row, noise_floor, alpha))
            print(
                f"  {row.case_id:<{width}}  kernel {_pct(row.ratio)}  ref {_pct(ref_ratio)}  "
                f"{row.judgement:<14} {row.reason or ''}"
            )
        suites[pair.kind].append(doc.summary.regression_count > 0)
        previous_suites[pair.kind].append(any(previous[pair.kind][-len(doc.rows) :]))

    print(
        "\nper kernel            A/A false alarms   A/B detected   median ratio A/A, A/B (ref A/B)"
    )
    for case_id in case_ids:
        aa, ab = tally.get(("A/A", case_id), []), tally.get(("A/B", case_id), [])
        med = {
            kind: statistics.median(ratios[(kind, case_id)])
            if ratios.get((kind, case_id))
            else None
            for kind in ("A/A", "A/B")
        }
        ref_ab = ref_ratios.get(("A/B", case_id))
        print(
            f"  {case_id:<{width}}  {aa.count('regression'):>3}/{len(aa):<3}"
            f"          {ab.count('regression'):>3}/{len(ab):<3}"
            f"       {_pct(med['A/A'])}, {_pct(med['A/B'])}"
            f" ({_pct(statistics.median(ref_ab)) if ref_ab else '-'})"
        )
    aa_rows = [j for (kind, _), js in tally.items() if kind == "A/A" for j in js]
    ab_rows = [j for (kind, _), js in tally.items() if kind == "A/B" for j in js]
    print(f"\nA/A verdicts: { {j: aa_rows.count(j) for j in sorted(set(aa_rows))} }")
    print(f"A/B verdicts: { {j: ab_rows.count(j) for j in sorted(set(ab_rows))} }")
    n_suites = len(suites["A/A"])
    false_cases, false_suites = aa_rows.count("regression"), sum(suites["A/A"])
    detected = ab_rows.count("regression")
    flagged = sum(j in ("regression", "inconclusive") for j in ab_rows)
    flagged_aa = sum(j in ("regression", "inconclusive") for j in aa_rows)
    print(
        f"\nfalse-alarm rate: {_rate(false_cases, len(aa_rows))} of case comparisons, "
        f"{_rate(false_suites, n_suites)} of suite comparisons (target <= 5%)"
    )
    print(f"detection rate:   {_rate(detected, len(ab_rows))} of case comparisons (target >= 90%)")
    print(
        f"regression or inconclusive (what --fail-on-inconclusive stops): "
        f"A/B {_rate(flagged, len(ab_rows))}, A/A {_rate(flagged_aa, len(aa_rows))}"
    )
    print(
        f"previous rule:    false alarms {_rate(sum(previous['A/A']), len(previous['A/A']))} "
        f"of cases, {_rate(sum(previous_suites['A/A']), n_suites)} of suites; "
        f"detection {_rate(sum(previous['A/B']), len(previous['A/B']))}"
    )
    met = false_suites <= 0.05 * n_suites and detected >= 0.90 * len(ab_rows)
    return 0 if met else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 pairs instead of 20")
    parser.add_argument("--pairs", type=int, default=None, help="A/A and A/B comparisons each")
    parser.add_argument("--min-time", type=float, default=None, help="[bench] min_time, seconds")
    parser.add_argument("--max-time", type=float, default=None, help="[bench] max_time, seconds")
    parser.add_argument("--noise-floor", type=float, default=2.0, help="percent")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--keep", type=Path, default=None, help="measure into this directory")
    parser.add_argument("--rejudge", type=Path, default=None, help="judge runs kept earlier")
    args = parser.parse_args()
    if args.rejudge is not None:
        return judge_all(args.rejudge, args.pairs or 1000, args.noise_floor, args.alpha)
    pairs = args.pairs or (6 if args.quick else 20)
    with tempfile.TemporaryDirectory(prefix="tile-cmp-") as tmp:
        root = args.keep or Path(tmp)
        settings = {"min_time": args.min_time, "max_time": args.max_time}
        write_project(root, {k: v for k, v in settings.items() if v is not None})
        before = probe_machine()
        print(f"measuring {2 * (pairs // 2 + 1)} runs in {root}", file=sys.stderr)
        measure(root, pairs)
        code = judge_all(root, pairs, args.noise_floor, args.alpha)
        print(f"\nbefore the runs: {before}\nafter the runs:  {probe_machine()}")
        return code


if __name__ == "__main__":
    raise SystemExit(main())
