"""How often `tile compare` gives a false verdict on identical code under a changing load, and
how often it catches a planted 2x slowdown (issue 33's CPU targets: <= 1% false, >= 99% caught).

    uv run --no-sync python benchmarks/aa_gate.py [--runs 5] [--keep DIR] [--rejudge DIR]

It writes a fixture project (five jnp kernels x four sizes = 20 cases of 0.1-3 ms; three
kernels' references run the kernel's own unchanged program, two the same work written as one
fused jnp expression) to a temporary directory, then alternates fresh
`tile bench` processes of the unchanged code (A) and of the same code made 2x slower (B:
`AA_SLOW=1` makes every kernel run its whole program twice, the second run waiting on the
first, for the same result; the references do not change). `--check-plant` times both
programs of every case in this process, in turns, and prints how much slower B really is
(1.5-2.3x on our 2-core VM: the dispatch and what XLA's threads do not overlap are paid
once). Before each run it starts 0, 1 or 2 busy-loop processes (a different number from the
run before; each ends by itself after `--load-cap` seconds, and is killed when the run ends),
so the machine's load changes between every two runs, as on a shared CI runner:

    A0 (load 0)  B0 (load 2)  A1 (load 1)  B1 (load 0)  A2 (load 2) ...

Every pair of runs of the same code (A with A, B with B) is an A/A comparison: any
`regression` or `improvement` there is a false verdict. Every A with every B is an A/B
comparison of a 2x slowdown: `regression` is a detection. Each is judged by
`tile_artifacts.compare_runs` with its defaults (noise floor 2%, alpha 0.05, basis auto,
false discoveries controlled over the run), exactly as `tile compare` does. It also judges the
A runs against baselines pooled from `--pooled` others (every such pool in turn), as `tile
bench --compare` against `tile baseline save A0 A1 A2` would.

The default (5 A and 5 B runs, `[bench] max_time = 0.25`) takes about 6-9 minutes on a busy
2-core VM and gives 400 A/A and 500 A/B case comparisons. `--keep DIR` keeps the runs;
`--rejudge DIR` judges kept runs again without measuring (to try the judge on the same data);
`--rounds N` measures each run in N rounds (`[bench] rounds`), which the judge then tests on;
`--processes N` in N runner processes (`[bench] processes`; left out, tile's default: two on
a CPU), whose spread the judge then tests on.
Exit 0 when both targets are met for two-run comparisons, else 1.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import tile_artifacts as ta

KERNELS = '''\
"""A/A gate fixture kernels: AA_SLOW=1 makes every kernel run its whole program twice, the
second run waiting on the first (same result)."""

import os

import jax
import jax.numpy as jnp
from jax import lax

import tile_runner as tile

PASSES = 4
SLOW = os.environ.get("AA_SLOW", "0") == "1"  # SLOW_SWITCH
# log2 of the vector lengths (aa_gate.py --sizes, passed down to the runner)
SIZES = [1 << int(k) for k in os.environ.get("AA_SIZES", "16,17,18,19").split(",")]


def _inputs(case, key):
    return (tile.normal(key, (case.n,), "float32"), jnp.ones((PASSES,), jnp.float32))


def _passes(op, x, s):
    # s[i] is runtime data (all ones): no pass can be hoisted out or merged with another.
    def one(i, acc):
        return acc + op(x * s[i])

    return lax.fori_loop(0, PASSES, one, jnp.zeros_like(x)) / PASSES


def _twice(op, x, s):
    # 0 * y[0] is not folded for floats (NaN): the second run cannot start before the first ends.
    y = _passes(op, x, s)
    return _passes(op, x, s * (1 + 0 * y[0]))


def _same_program(op):
    return lambda x, s: _passes(op, x, s)


def _written_apart(op):
    return lambda x, s: sum(op(x * s[i]) for i in range(PASSES)) / PASSES


# (op, reference): three references run the unchanged kernel's own program, two the same work
# written as one fused jnp expression, which responds to load differently.
OPS = {
    "tanh": (jnp.tanh, _same_program),
    "sigmoid": (jax.nn.sigmoid, _same_program),
    "log1p": (lambda y: jnp.log1p(jnp.abs(y)), _same_program),
    "gauss": (lambda y: jnp.exp(-y * y), _written_apart),
    "erf": (lambda y: lax.erf(y), _written_apart),
}

for _name, (_op, _reference) in OPS.items():
    tile.kernel(
        f"aa/{_name}",
        inputs=_inputs,
        reference=_reference(_op),
        bench=tile.axes(n=SIZES),
        tol=1e-3,
    )(lambda x, s, _op=_op: (_twice if SLOW else _passes)(_op, x, s))
'''

SLOW_SWITCH = 'SLOW = os.environ.get("AA_SLOW", "0") == "1"  # SLOW_SWITCH'
"""The fixture's line that `ab_turns.py` rewrites to make the working tree the slow side."""

BUSY = "import time\nend = time.monotonic() + {cap}\nwhile time.monotonic() < end:\n    pass\n"


def write_project(root: Path, max_time: float, rounds: int, processes: int | None) -> None:
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    (root / "kernels" / "aa_kernels.py").write_text(KERNELS)
    bench = f"max_time = {max_time}\nrounds = {rounds}\n"
    bench += "" if processes is None else f"processes = {processes}\n"
    (root / "tile.toml").write_text(f'[project]\npaths = ["kernels"]\n\n[bench]\n{bench}')


@contextmanager
def load(level: int, cap: float) -> Generator[None]:
    """`level` busy-loop processes for the block's duration; each ends by itself after `cap` s."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY.format(cap=cap)]) for _ in range(level)]
    try:
        yield
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()


def bench(root: Path, name: str, *, slow: bool) -> None:
    """One fresh `tile bench` process writing runs/<name>."""
    env = {**os.environ, "NO_COLOR": "1", "AA_SLOW": "1" if slow else "0"}
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


def measure(root: Path, runs: int, cap: float) -> None:
    """A0 B0 A1 B1 ...: each run under a load (0, 1 or 2 busy processes) unlike the one before."""
    start = time.perf_counter()
    levels = itertools.cycle([0, 2, 1])
    (root / "runs").mkdir(exist_ok=True)
    for i in range(runs):
        for name, slow in ((f"A{i}", False), (f"B{i}", True)):
            level = next(levels)
            with load(level, cap):
                bench(root, name, slow=slow)
            (root / "runs" / name / "load.txt").write_text(f"{level}\n")
            done = time.perf_counter() - start
            print(f"  {name} done under load {level} ({done:.0f} s)", file=sys.stderr, flush=True)


@dataclass
class Tally:
    """Verdicts of the A/A and A/B case comparisons of one kind of comparison."""

    aa: Counter[str] = field(default_factory=Counter[str])
    ab: Counter[str] = field(default_factory=Counter[str])
    aa_suites: list[int] = field(default_factory=list[int])  # false verdicts per A/A pair
    bases: Counter[str] = field(default_factory=Counter[str])
    false: list[str] = field(default_factory=list[str])
    missed: Counter[str] = field(default_factory=Counter[str])

    def add(self, same: bool, doc: ta.compare.ComparisonDoc, pair: str) -> None:
        verdicts = Counter(r.judgement for r in doc.rows)
        self.bases.update(r.basis or "-" for r in doc.rows)
        if same:
            self.aa.update(verdicts)
            wrong = [r for r in doc.rows if r.judgement in ("regression", "improvement")]
            self.aa_suites.append(len(wrong))
            self.false += [f"{pair} {r.case_id}: {r.judgement}, {r.reason}" for r in wrong]
        else:
            self.ab.update(verdicts)
            self.missed.update(r.reason.split(":")[0] for r in doc.rows
                               if r.judgement != "regression" and r.reason)  # fmt: skip

    def rates(self) -> tuple[float, float]:
        aa_total, ab_total = sum(self.aa.values()), sum(self.ab.values())
        false = self.aa["regression"] + self.aa["improvement"]
        return false / max(aa_total, 1), self.ab["regression"] / max(ab_total, 1)

    def print(self, title: str) -> None:
        aa_total, ab_total = sum(self.aa.values()), sum(self.ab.values())
        false_rate, caught = self.rates()
        false = self.aa["regression"] + self.aa["improvement"]
        print(f"\n{title}")
        print(f"  A/A verdicts: {dict(sorted(self.aa.items()))}")
        print(f"  A/B verdicts: {dict(sorted(self.ab.items()))}")
        print(f"  rows by basis: {dict(sorted(self.bases.items()))}")
        print(f"  false verdicts: {false}/{aa_total} A/A case comparisons ({false_rate:.2%}; "
              f"target <= 1%), in {sum(1 for n in self.aa_suites if n)} of "
              f"{len(self.aa_suites)} run pairs")  # fmt: skip
        print(
            f"  2x slowdowns caught: {self.ab['regression']}/{ab_total} ({caught:.2%}; "
            "target >= 99%)"
        )
        inconclusive = self.aa["inconclusive"] / max(aa_total, 1)
        print(f"  A/A inconclusive: {self.aa['inconclusive']}/{aa_total} ({inconclusive:.1%})")
        for line in self.false[:10]:
            print(f"    false: {line}")
        for reason, n in self.missed.most_common(5):
            print(f"    not caught ({n}): {reason}")


def _medians(report: Any) -> dict[str, tuple[float, float]]:
    """Each case's (kernel median, interleaved reference median) of one run's report."""
    return {c.case_id: (c.stats.median, c.reference.stats.median) for c in report.cases
            if c.stats is not None and c.reference is not None
            and c.reference.stats is not None}  # fmt: skip


def overlap(reports: dict[str, Any]) -> None:
    """How far identical code moved between two runs against how far the plant moved it, per
    basis (|log| of the change of medians): where the A/A spread reaches the A/B one, no rule
    that sees two single runs can keep false verdicts rare and catch every plant."""
    runs = {name: _medians(report) for name, report in reports.items() if name[0] in "AB"}
    changes: dict[tuple[str, str], list[float]] = {}
    for x, y in itertools.combinations(sorted(runs), 2):
        kind = "A/A" if x[0] == y[0] else "A/B"
        first, second = (runs[y], runs[x]) if x[0] == "B" and y[0] == "A" else (runs[x], runs[y])
        for case_id, (kernel, reference) in first.items():
            if case_id in second:
                k2, r2 = second[case_id]
                changes.setdefault((kind, "absolute"), []).append(math.log(k2 / kernel))
                changes.setdefault((kind, "relative"), []).append(
                    math.log((k2 / r2) / (kernel / reference))
                )
    print("\nhow far the medians moved, |log| of the change (two single runs)")
    for basis in ("absolute", "relative"):
        same = sorted(abs(v) for v in changes.get(("A/A", basis), []))
        plant = sorted(changes.get(("A/B", basis), []))
        if same and plant:
            print(f"  {basis}: A/A 99th percentile {same[int(0.99 * (len(same) - 1))]:.2f}, "
                  f"largest {same[-1]:.2f}; A/B smallest {plant[0]:.2f}, 1st percentile "
                  f"{plant[int(0.01 * (len(plant) - 1))]:.2f} (log 2 = 0.69)")  # fmt: skip


def judge(root: Path, pooled: int) -> int:
    names = sorted(p.name for p in (root / "runs").iterdir() if (p / "report.json").exists())
    reports = {n: ta.read_report(root / "runs" / n / "report.json") for n in names}
    a_runs = [n for n in names if n.startswith("A")]
    b_runs = [n for n in names if n.startswith("B")]
    two = Tally()
    for x, y in [*itertools.combinations(a_runs, 2), *itertools.combinations(b_runs, 2)]:
        two.add(True, ta.compare.compare_runs(reports[x], reports[y]), f"{x}-{y}")
    for a, b in itertools.product(a_runs, b_runs):
        two.add(False, ta.compare.compare_runs(reports[a], reports[b]), f"{a}-{b}")
    two.print(f"tile compare RUN RUN ({len(a_runs)} A and {len(b_runs)} B runs, all pairs)")
    overlap(reports)
    if 2 <= pooled < len(a_runs):
        # Every `pooled` of the A runs in turn as the baseline, judged against the A runs outside
        # it (A/A) and every B run (A/B): each pool as `tile baseline save` would make it.
        against = Tally()
        pools = list(itertools.combinations(a_runs, pooled))
        for pool in pools:
            baseline = ta.compare.baseline_from_reports([reports[n] for n in pool])
            for n in [*(a for a in a_runs if a not in pool), *b_runs]:
                doc = ta.compare.compare_runs(baseline, reports[n])
                against.add(n.startswith("A"), doc, f"{'+'.join(pool)}-{n}")
        against.print(f"tile bench --compare against a baseline pooled from {pooled} A runs "
                      f"({len(pools)} pools in turn)")  # fmt: skip
    false_rate, caught = two.rates()
    return 0 if false_rate <= 0.01 and caught >= 0.99 else 1


def check_plant(calls: int) -> None:
    """Each case's B/A time, both programs timed in this process in turns: the real plant."""
    import statistics

    import jax

    fixture: dict[str, Any] = {}
    exec(compile(KERNELS, "aa_kernels.py", "exec"), fixture)
    jit: Any = jax.jit  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    ratios: list[float] = []
    for name, (op, _) in fixture["OPS"].items():
        for n in fixture["SIZES"]:
            x, s = fixture["_inputs"](SimpleNamespace(n=n), jax.random.key(0))
            a, b = (jit(functools.partial(fixture[way], op)) for way in ("_passes", "_twice"))
            times: dict[Any, list[float]] = {a: [], b: []}
            for f in (a, b) * (calls + 1):
                t0 = time.perf_counter()
                jax.block_until_ready(f(x, s))  # pyright: ignore[reportUnknownMemberType]
                times[f].append(time.perf_counter() - t0)
            ta_, tb = (statistics.median(times[f][1:]) for f in (a, b))
            ratios.append(tb / ta_)
            print(f"  aa/{name}[n={n}]: A {ta_ * 1e3:.3f} ms, B/A {tb / ta_:.2f}")
    print(f"B/A over {len(ratios)} cases: {min(ratios):.2f}-{max(ratios):.2f}, "
          f"median {statistics.median(ratios):.2f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="A runs and B runs, each")
    parser.add_argument("--max-time", type=float, default=0.25, help="[bench] max_time, s")
    parser.add_argument("--rounds", type=int, default=1, help="[bench] rounds (1: tile's default)")
    parser.add_argument("--processes", type=int, default=None,
                        help="[bench] processes (default: tile's, 2 on a CPU)")  # fmt: skip
    parser.add_argument("--pooled", type=int, default=3, help="A runs pooled into a baseline")
    parser.add_argument("--load-cap", type=float, default=300.0, help="longest life of a load")
    parser.add_argument("--keep", type=Path, default=None, help="measure into this directory")
    parser.add_argument("--rejudge", type=Path, default=None, help="judge runs kept earlier")
    parser.add_argument("--sizes", default="16,17,18,19", metavar="LOG2,...",
                        help="log2 of the vector lengths (default 16,17,18,19)")  # fmt: skip
    parser.add_argument("--check-plant", type=int, default=0, metavar="CALLS",
                        help="time A and B in turns in this process, CALLS each, and stop")  # fmt: skip
    args = parser.parse_args()
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    os.environ["AA_SIZES"] = args.sizes  # read by the fixture, here and in every runner
    if args.check_plant:
        check_plant(args.check_plant)
        return 0
    if args.rejudge is not None:
        return judge(args.rejudge, args.pooled)
    with tempfile.TemporaryDirectory(prefix="tile-aa-") as tmp:
        root = args.keep or Path(tmp)
        write_project(root, args.max_time, args.rounds, args.processes)
        print(f"measuring {2 * args.runs} runs in {root}", file=sys.stderr)
        start = time.perf_counter()
        measure(root, args.runs, args.load_cap)
        print(f"measured in {time.perf_counter() - start:.0f} s")
        return judge(root, args.pooled)


if __name__ == "__main__":
    raise SystemExit(main())
