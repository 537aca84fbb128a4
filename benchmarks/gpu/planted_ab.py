"""Does the interleaved A/B (`tile bench --against`) catch a planted 10% and 3% slowdown on the
GPU, and stay quiet on identical code? (issue #33's H200 targets: A/A 0 false of at least 100
and at most 2% inconclusive; 10% caught in at least 95%, 3% in at least 80%)

    python benchmarks/gpu/planted_ab.py [--runs 10] [--aa-runs N] [--plants 10 3] [--passes 100]
        [--sizes 20 21 22 23 24] [--keep DIR]

The fixture is a git repository with one kernel file: two memory-bound jnp kernels (sin and
tanh of a float32 vector, summed over PASSES passes and divided by them; each pass reads a
runtime scale so none can be hoisted) at each vector length 2^k of `--sizes`. The committed
revision runs `--passes` passes. A planted slowdown of p% edits only that number in the
working tree (100 passes -> 110 for 10%, 103 for 3%): the same result, p% more memory traffic,
and on the GPU the per-call overhead is too small to dilute it. `--runs` times, for identical
code (A/A) and for each plant, `tile bench --against HEAD` times the tree and the revision in
turns and its own comparison is tallied: a `regression` in A/A is false, in A/B a catch.

It needs git. On the CPU it runs too (small `--sizes`, fewer `--passes`), which is how its
plumbing is checked; its figures are the GPU's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: ab_turns.py
from ab_turns import against

KERNELS = '''\
"""Planted A/B fixture: PASSES passes of a memory-bound op; a plant raises PASSES."""

import jax.numpy as jnp
from jax import lax

import tile_runner as tile

PASSES = {passes}
MOST = {most}  # passes the scale vector covers, for any plant


def _inputs(case, key):
    return (tile.normal(key, (1 << case.log2n,), "float32"), jnp.ones((MOST,), jnp.float32))


def _passes(op, x, s):
    def one(i, acc):
        return acc + op(x * s[i])

    return lax.fori_loop(0, PASSES, one, jnp.zeros_like(x)) / PASSES


for _name, _op in (("sin", jnp.sin), ("tanh", jnp.tanh)):
    tile.kernel(
        f"ab/{{_name}}",
        inputs=_inputs,
        reference=lambda x, s, _op=_op: _op(x),
        bench=tile.axes(log2n={sizes}),
        tol=1e-3,
    )(lambda x, s, _op=_op: _passes(_op, x, s))
'''


def write_kernels(root: Path, passes: int, most: int, sizes: list[int]) -> None:
    text = KERNELS.format(passes=passes, most=most, sizes=sizes)
    (root / "kernels" / "ab_kernels.py").write_text(text)


def write_repo(root: Path, passes: int, most: int, sizes: list[int]) -> None:
    """The fixture project with `passes` passes, committed: the revision every run is timed
    against."""
    (root / "kernels").mkdir(parents=True)
    write_kernels(root, passes, most, sizes)
    (root / "tile.toml").write_text(
        '[project]\npaths = ["kernels"]\n\n[history]\nenabled = false\n'
    )
    (root / ".gitignore").write_text(".tile/\nruns/\n")
    git = ["git", "-C", str(root), "-c", "user.email=ab@tile", "-c", "user.name=ab"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
        subprocess.run([*git, *args], check=True)


def report(label: str, verdicts: Counter[str], *, plant: int) -> bool:
    """Print one category's verdicts; True when its target is met."""
    total = max(1, sum(verdicts.values()))
    if plant == 0:
        false = verdicts["regression"] + verdicts["improvement"]
        unsure = verdicts["inconclusive"] / total
        met = false == 0 and unsure <= 0.02
        print(f"{label}: {dict(sorted(verdicts.items()))}; false {false}/{total} (target 0), "
              f"inconclusive {unsure:.1%} (target <= 2%)")  # fmt: skip
        return met
    caught = verdicts["regression"] / total
    target = 0.95 if plant >= 10 else 0.80
    print(f"{label}: {dict(sorted(verdicts.items()))}; caught {caught:.1%} "
          f"(target >= {target:.0%})")  # fmt: skip
    return caught >= target


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each: A/A and every plant")
    parser.add_argument("--aa-runs", type=int, default=None,
                        help="runs of identical code (default: --runs; 0 skips A/A)")  # fmt: skip
    parser.add_argument("--plants", type=int, nargs="*", default=[10, 3],
                        help="slowdowns, %% (none: A/A only)")  # fmt: skip
    parser.add_argument("--passes", type=int, default=100, help="passes of the committed code")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 21, 22, 23, 24],
                        help="log2 of the vector lengths")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None, help="measure into this directory")
    args = parser.parse_args()
    if shutil.which("git") is None:
        print("error: planted_ab.py needs git (tile bench --against times a git revision)",
              file=sys.stderr)  # fmt: skip
        print("hint: run it where `git` is on PATH", file=sys.stderr)
        return 2
    most = args.passes * (100 + max(args.plants, default=0)) // 100 + 1
    aa_runs = args.runs if args.aa_runs is None else args.aa_runs
    with tempfile.TemporaryDirectory(prefix="tile-planted-") as tmp:
        root = args.keep or Path(tmp) / "repo"
        write_repo(root, args.passes, most, args.sizes)
        start, met = time.perf_counter(), True
        for plant in [0, *args.plants]:
            runs = aa_runs if plant == 0 else args.runs
            if runs <= 0:
                continue
            passes = args.passes * (100 + plant) // 100
            write_kernels(root, passes, most, args.sizes)
            verdicts: Counter[str] = Counter()
            for i in range(runs):
                doc = against(root, f"P{plant}-{i}")
                verdicts.update(r.judgement for r in doc.rows)
                took = time.perf_counter() - start
                print(f"  +{plant}% run {i} done ({took:.0f} s)", file=sys.stderr, flush=True)
            label = "A/A" if plant == 0 else f"+{plant}% ({args.passes} -> {passes} passes)"
            met = report(label, verdicts, plant=plant) and met
        write_kernels(root, args.passes, most, args.sizes)
        print(f"measured in {time.perf_counter() - start:.0f} s")
        return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
