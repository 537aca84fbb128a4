"""False alarms and detection of `tile compare` on repeated CPU runs of the same code.

(The A/A half on tile-std itself, which has no known slowdown to detect, is
`benchmarks/compare_std_aa.py`.)

Run with `uv run python benchmarks/compare_false_alarms.py` (22 `tile bench` processes, about
4 minutes on a 2-core machine; `--quick`: 8 processes, about 1.5 minutes). It writes a project
with three fixture kernels to a temporary directory, then alternates fresh `tile bench`
processes of the unchanged code (A) and of the same code made ~10% slower (B:
`CMP_SLOWDOWN=1` makes every kernel do ~10% more work for the same result; the references
do not change):

    A00 B00 A01 B01 ... A10 B10

A/A comparisons, (A_i, A_i+1) and (B_i, B_i+1), compare the same code measured twice: every
`regression` there is a false alarm. A/B comparisons, (A_i, B_i) and (A_i+1, B_i), compare the
code with its slowed copy measured next to it: every `regression` there is a detection. Each
comparison is judged by `tile_artifacts.compare.compare_runs` with its defaults (noise floor 2%,
alpha 0.05, basis auto: each kernel relative to its reference, which tile times interleaved
with it), exactly as `tile compare` does; then again with basis absolute (the kernel's own
times, with the drift controls), and the line "previous rule" judges the absolute rows by the
rule before the drift controls (point beyond the floor, p < alpha, CI above 1). Targets:
false-alarm rate <= 5% of suite comparisons, detection rate >= 90% of case comparisons, for
`tile compare`'s default. Exit 0 when both are met, else 1.

The kernels (about 11 µs, 0.55 ms and 2 ms of wall time per call on a 2-core AMD EPYC VM):
- `cmp/tiny`:   x * 2 + 1 on 256 floats; B adds a fused `sin` pass over 256 zeros (+~1 µs).
- `cmp/matmul`: a 128x128 matmul followed by 9 multiplications by an identity matrix held in a
                runtime input (XLA cannot fold it away); B does 10 of them: +10% FLOPs.
- `cmp/reduce`: the sum of 2^20 floats (4 MB) done as 10 passes of `sum(x * s[i])` (s a runtime
                vector of ones) in a `fori_loop`, averaged; B does 11 passes: +10% work.
Each reference computes the A result with the same amount of work written as plain jnp
(`multi_dot` of the ten matrices; the ten weighted sums as one (10, n) product), as a real
reference does. With references that did a tenth of the work (`a @ b`, `sum(x)`) the relative
basis could not follow matmul and reduce: their references' speed wandered apart from the
kernels' (figures in the issue #8 note).
The achieved slowdown is printed (median A/B ratio per kernel, next to the median A/A ratio and
the references' median A/B ratio) so that the 10% can be checked.

Sampling uses tile's defaults unless `--min-time` / `--max-time` are given. `--keep DIR` keeps
the runs (and the load average around each) in DIR; `--rejudge DIR` judges runs kept earlier
without measuring again, to try another rule or noise floor on the same data. `--pin` sets
`[runner] pin_cpu = true`: each runner on one core with XLA single-threaded, which on a shared
VM keeps a kernel and its reference at the same speed (see docs/measurement.md). `--rounds N`
sets `[bench] rounds = N`: each case timed in N rounds over the run, with fresh inputs each
round, and compared on the scatter between rounds. `--pooled K` measures K + 20 runs of each
kind and also judges them as CI would against a baseline pooled from the first K A runs
(`tile baseline save A00 ... A0K-1`): the later A runs are the A/A comparisons and the B runs
the A/B ones; the exit code then follows this judgement.
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
"""Fixture kernels: CMP_SLOWDOWN=1 makes each do ~10% more work for the same result."""

import os

import jax
import jax.numpy as jnp
from jax import lax

import tile_runner as tile

SLOW = os.environ.get("CMP_SLOWDOWN", "0") == "1"
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
    # The same ten products as plain jnp (a reference does the kernel's work, differently).
    reference=lambda a, b, eye: jnp.linalg.multi_dot([a, b] + [eye] * 9),
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
    # Ten weighted sums at once, as one (10, n) product: the kernel's arithmetic, vectorised.
    reference=lambda x, s: jnp.mean(jnp.sum(x[None, :] * s[:10, None], axis=1)),
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


def write_project(root: Path, bench_settings: dict[str, float | int], *, pin: bool) -> None:
    """The fixture project: tile.toml (tile's sampling defaults unless given) and the kernels."""
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    (root / "kernels" / "cmp_kernels.py").write_text(KERNELS)
    lines = [f"{key} = {value}" for key, value in bench_settings.items()]
    if pin:
        lines += ["[runner]", "pin_cpu = true"]
    (root / "tile.toml").write_text(TOML + "".join(line + "\n" for line in lines))


def bench(root: Path, name: str, *, slow: bool) -> None:
    """One fresh `tile bench` process writing runs/<name>."""
    env = {**os.environ, "NO_COLOR": "1", "CMP_SLOWDOWN": "1" if slow else "0"}
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


def measure(root: Path, pairs: int, pooled: int = 0) -> None:
    """A0 B0 A1 B1 ... interleaved, so that slow drift of the machine hits A and B alike.

    With `pooled` K: K + pairs of each, enough for a baseline of K A runs and `pairs` others.
    """
    start = time.perf_counter()
    loads: dict[str, list[float]] = {}
    for i in range(pooled + pairs if pooled else pairs // 2 + 1):
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


def _previous_rule(row: ta.compare.ComparisonRow, noise_floor: float, alpha: float) -> bool:
    """Whether the rule before the drift controls called this row a regression."""
    if row.ratio is None or row.ratio_ci_low is None or row.p_value is None:
        return False
    return row.ratio > 1 + noise_floor / 100 and row.p_value < alpha and row.ratio_ci_low > 1


def _rate(hits: int, total: int) -> str:
    return f"{hits / max(total, 1):6.1%} ({hits}/{total})"


@dataclass
class Tally:
    """Verdicts of one rule over every planned pair."""

    rows: dict[str, list[str]]  # "A/A" or "A/B" -> judgement of every case comparison
    suites: dict[str, list[bool]]  # -> whether a suite comparison had any regression
    by_case: dict[tuple[str, str], list[str]]  # (kind, case_id) -> judgements

    @classmethod
    def empty(cls) -> Tally:
        return cls({"A/A": [], "A/B": []}, {"A/A": [], "A/B": []}, {})

    def add(self, kind: str, verdicts: dict[str, str]) -> None:
        for case_id, judgement in verdicts.items():
            self.rows[kind].append(judgement)
            self.by_case.setdefault((kind, case_id), []).append(judgement)
        self.suites[kind].append("regression" in verdicts.values())

    def met(self) -> bool:
        aa, ab = self.suites["A/A"], self.rows["A/B"]
        return sum(aa) <= 0.05 * len(aa) and ab.count("regression") >= 0.90 * len(ab)

    def print_rates(self, name: str) -> None:
        aa, ab = self.rows["A/A"], self.rows["A/B"]
        n_suites = len(self.suites["A/A"])
        print(f"\n{name}")
        print(f"  A/A verdicts: { {j: aa.count(j) for j in sorted(set(aa))} }")
        print(f"  A/B verdicts: { {j: ab.count(j) for j in sorted(set(ab))} }")
        print(
            f"  false-alarm rate: {_rate(aa.count('regression'), len(aa))} of case comparisons, "
            f"{_rate(sum(self.suites['A/A']), n_suites)} of suite comparisons (target <= 5%)"
        )
        print(
            f"  detection rate:   {_rate(ab.count('regression'), len(ab))} of case comparisons "
            "(target >= 90%)"
        )
        flagged = sum(j in ("regression", "inconclusive") for j in ab)
        flagged_aa = sum(j in ("regression", "inconclusive") for j in aa)
        print(
            f"  regression or inconclusive (what --fail-on-inconclusive stops): "
            f"A/B {_rate(flagged, len(ab))}, A/A {_rate(flagged_aa, len(aa))}"
        )


def judge_all(root: Path, pairs: int, noise_floor: float, alpha: float) -> int:
    """Compare every planned pair, print the verdicts and the rates; 0 if both targets are met.

    Three rules on the same pairs: `tile compare`'s default (basis auto: relative to the
    reference timed interleaved where the runs have it), basis absolute, and the previous rule.
    """
    reports = {p.name: ta.read_report(p / "report.json") for p in (root / "runs").iterdir()}
    plan_ = plan(root, pairs)
    case_ids = sorted({c.case_id for r in reports.values() for c in r.cases})
    tallies = {"auto": Tally.empty(), "absolute": Tally.empty(), "previous": Tally.empty()}
    ratios: dict[tuple[str, str, str], list[float]] = {}  # (series, kind, case_id) -> ratios
    width = max(len(c) for c in case_ids)
    print(f"noise floor {noise_floor:g}%, alpha {alpha:g}\n")
    for pair in plan_:
        base, cur = reports[pair.base], reports[pair.cur]
        docs = {
            basis: ta.compare.compare_runs(
                base, cur, noise_floor_pct=noise_floor, alpha=alpha, basis=basis
            )
            for basis in ("auto", "absolute")
        }
        ref = ta.compare.compare_runs(
            base, cur, noise_floor_pct=noise_floor, alpha=alpha, metric="ref_time_s"
        )
        rows = {
            name: {r.case_id: r for r in doc.rows} for name, doc in (*docs.items(), ("ref", ref))
        }
        for name in ("auto", "absolute"):
            tallies[name].add(pair.kind, {c: r.judgement for c, r in rows[name].items()})
        tallies["previous"].add(
            pair.kind,
            {
                c: "regression" if _previous_rule(r, noise_floor, alpha) else "neutral"
                for c, r in rows["absolute"].items()
            },
        )
        print(f"{pair.kind} {pair.base} -> {pair.cur}")
        for case_id in sorted(rows["auto"]):
            auto, absolute = rows["auto"][case_id], rows["absolute"][case_id]
            ref_row = rows["ref"].get(case_id)
            for series, row in (("rel", auto), ("abs", absolute), ("ref", ref_row)):
                if row is not None and row.ratio is not None:
                    ratios.setdefault((series, pair.kind, case_id), []).append(row.ratio)
            print(
                f"  {case_id:<{width}}  {auto.basis or '-':<8} {_pct(auto.ratio)}  "
                f"abs {_pct(absolute.ratio)}  ref {_pct(ref_row.ratio if ref_row else None)}  "
                f"{auto.judgement:<14} (absolute: {absolute.judgement:<14}) {auto.reason or ''}"
            )

    def med(series: str, kind: str, case_id: str) -> str:
        values = ratios.get((series, kind, case_id))
        return _pct(statistics.median(values)) if values else "   -  "

    print(
        "\nper kernel: regressions in A/A (false alarms) and A/B (detected) by rule, and median "
        "ratios A/A, A/B"
    )
    print(f"  {'':<{width}}  auto     absolute  previous   relative        absolute        ref A/B")
    for case_id in case_ids:
        cells: list[str] = []
        for name in ("auto", "absolute", "previous"):
            aa = tallies[name].by_case.get(("A/A", case_id), [])
            ab = tallies[name].by_case.get(("A/B", case_id), [])
            cells.append(f"{aa.count('regression')}/{len(aa)}|{ab.count('regression')}/{len(ab)}")
        print(
            f"  {case_id:<{width}}  {cells[0]:<8} {cells[1]:<9} {cells[2]:<10} "
            f"{med('rel', 'A/A', case_id)},{med('rel', 'A/B', case_id)}  "
            f"{med('abs', 'A/A', case_id)},{med('abs', 'A/B', case_id)}  "
            f"{med('ref', 'A/B', case_id)}"
        )
    tallies["auto"].print_rates("tile compare (basis auto: relative where interleaved):")
    tallies["absolute"].print_rates("basis absolute (the kernel's own times):")
    prev = tallies["previous"]
    aa, ab, n_suites = prev.rows["A/A"], prev.rows["A/B"], len(prev.suites["A/A"])
    print(
        f"\nprevious rule:    false alarms {_rate(aa.count('regression'), len(aa))} "
        f"of cases, {_rate(sum(prev.suites['A/A']), n_suites)} of suites; "
        f"detection {_rate(ab.count('regression'), len(ab))}"
    )
    return 0 if tallies["auto"].met() else 1


def judge_pooled(root: Path, k: int, pairs: int, noise_floor: float, alpha: float) -> int:
    """Against a baseline pooled from the first `k` A runs: the later A runs (A/A) and the B
    runs (A/B), each compared as `tile compare BASELINE RUN` does. 0 if both targets are met.
    """
    runs = sorted(p.name for p in (root / "runs").iterdir() if (p / "report.json").exists())
    reports = {name: ta.read_report(root / "runs" / name / "report.json") for name in runs}
    a_runs = [r for r in runs if r.startswith("A")]
    baseline = ta.compare.baseline_from_reports([reports[r] for r in a_runs[:k]])
    tally = Tally.empty()
    print(f"\nagainst a baseline pooled from {', '.join(a_runs[:k])}:")
    for kind, group in (("A/A", a_runs[k:]), ("A/B", [r for r in runs if r.startswith("B")])):
        for name in group[:pairs]:
            doc = ta.compare.compare_runs(
                baseline, reports[name], noise_floor_pct=noise_floor, alpha=alpha
            )
            tally.add(kind, {row.case_id: row.judgement for row in doc.rows})
            for row in doc.rows:
                if (kind == "A/A") == (row.judgement == "regression"):
                    print(f"  {kind} {name} {row.case_id}: {row.judgement}, {row.reason}")
    tally.print_rates(f"tile compare against the pooled baseline ({k} runs):")
    return 0 if tally.met() else 1


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
    parser.add_argument(
        "--pin", action="store_true", help="[runner] pin_cpu: one core, XLA single-threaded"
    )
    parser.add_argument("--rounds", type=int, default=None, help="[bench] rounds")
    parser.add_argument(
        "--pooled", type=int, default=0, help="also judge against a baseline of the first K A runs"
    )
    args = parser.parse_args()
    if args.rejudge is not None:
        code = judge_all(args.rejudge, args.pairs or 1000, args.noise_floor, args.alpha)
        if args.pooled:
            pairs = args.pairs or 1000
            code = judge_pooled(args.rejudge, args.pooled, pairs, args.noise_floor, args.alpha)
        return code
    pairs = args.pairs or (6 if args.quick else 20)
    with tempfile.TemporaryDirectory(prefix="tile-cmp-") as tmp:
        root = args.keep or Path(tmp)
        settings = {"min_time": args.min_time, "max_time": args.max_time, "rounds": args.rounds}
        write_project(root, {k: v for k, v in settings.items() if v is not None}, pin=args.pin)
        before = probe_machine()
        mode = " ([runner] pin_cpu = true)" if args.pin else ""
        mode += f" ([bench] rounds = {args.rounds})" if args.rounds else ""
        count = 2 * (args.pooled + pairs if args.pooled else pairs // 2 + 1)
        print(f"measuring {count} runs in {root}{mode}", file=sys.stderr)
        measure(root, pairs, args.pooled)
        code = judge_all(root, pairs, args.noise_floor, args.alpha)
        if args.pooled:
            code = judge_pooled(root, args.pooled, pairs, args.noise_floor, args.alpha)
        print(f"\nbefore the runs: {before}\nafter the runs:  {probe_machine()}")
        return code


if __name__ == "__main__":
    raise SystemExit(main())
