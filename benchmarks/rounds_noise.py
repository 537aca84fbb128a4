"""Where the run-to-run noise of CPU timings comes from: rounds, fresh inputs, recompiles.

Each of `--processes` fresh processes (pinned to one core, XLA single-threaded, as
`[runner] pin_cpu` does) builds the tile-std bench cases on the CPU, then times every case with
its reference interleaved in `--rounds` short rounds over the whole plan (`--budget` seconds
per case in all). Per case it prints the process-to-process SD of the mean log round median
(kernel and kernel/reference ratio) next to the SD within a process of the round medians:
when rounds see all the noise, the first is about the second / sqrt(rounds).

    uv run --with numpy python benchmarks/rounds_noise.py [--rounds 8] [--fresh-inputs]
        [--recompile] [--processes 6] [-k std/copy -k std/scale ...]

`--fresh-inputs` makes the inputs anew every round (as `[bench] rounds` does); `--recompile`
also compiles kernel and reference anew. About 15-40 s a process on a 2-core VM. Figures from
2026-12-02 are in docs/measurement.md ("Runs in rounds").
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tile_runner import Case, KernelDef

Bound = tuple[Callable[..., Any], tuple[Any, ...], Callable[..., Any], tuple[Any, ...]]
"""Kernel and reference, each with the arguments left to trace once static ones are bound."""


def one_process(args: argparse.Namespace, out: Path) -> None:
    """Runs in the child: time every case in rounds, write {case: [(kernel, ref), ...]}."""
    from tile_runner._main import pin_to_one_core

    pin_to_one_core()
    import jax

    importlib.import_module("tile_std")  # registers the kernels
    from tile_protocol import BenchSettings
    from tile_runner._compile import aot_compile, bind_static
    from tile_runner._inputs import case_key
    from tile_runner._measure import time_compiled
    from tile_runner._plan import make_plan

    def inputs(kernel: KernelDef, case: Case) -> tuple[Any, ...]:
        made: Any = kernel.inputs(case, case_key(0, case.id))
        # Untyped in jax; it returns its argument, once every array in it is ready.
        jax.block_until_ready(made)  # pyright: ignore[reportUnknownMemberType]
        return cast("tuple[Any, ...]", made) if isinstance(made, tuple) else (made,)

    def bind(kernel: KernelDef, args_: tuple[Any, ...]) -> Bound:
        assert kernel.reference is not None, f"{kernel.name} has no reference to time against"
        fn, dyn = bind_static(kernel.fn, args_)
        ref, ref_dyn = bind_static(kernel.reference, args_)
        return fn, dyn, ref, ref_dyn

    def build(kernel: KernelDef, args_: tuple[Any, ...]) -> Bound:
        fn, dyn, ref, ref_dyn = bind(kernel, args_)
        return aot_compile(fn, dyn).compiled, dyn, aot_compile(ref, ref_dyn).compiled, ref_dyn

    cases = make_plan("bench", "cpu", kernels=args.kernel or ()).cases
    built = [build(kernel, inputs(kernel, case)) for kernel, case in cases]
    share = args.budget / args.rounds / 2  # the pair gets twice this (time_scale 2)
    settings = BenchSettings(max_time=share, min_runs=5, max_runs=10**6, target_precision=1e-9)
    timings: dict[str, list[tuple[list[float], list[float]]]] = {c.id: [] for _, c in cases}
    for round_ in range(args.rounds):
        for i, (kernel, case) in enumerate(cases):
            fn, dyn, ref, ref_dyn = built[i]
            if round_ and args.recompile:
                fn, dyn, ref, ref_dyn = build(kernel, inputs(kernel, case))
            elif round_ and args.fresh_inputs:
                _, dyn, _, ref_dyn = bind(kernel, inputs(kernel, case))
            t = time_compiled(fn, dyn, settings, timer="wall", reference=(ref, ref_dyn))
            assert t.reference is not None
            timings[case.id].append((t.samples, t.reference.samples))
    out.write_text(json.dumps(timings))


def report(files: list[Path], rounds: int) -> None:
    import numpy as np

    # Per process, per case, per round: [kernel samples, reference samples].
    runs: list[dict[str, list[list[list[float]]]]] = [json.loads(f.read_text()) for f in files]
    print(f"{len(runs)} processes, {rounds} rounds; SD in %: between processes | within / sqrt(R)")
    print(f"  {'case':<52} {'kernel':>15} {'ratio':>15}")
    for case_id in runs[0]:
        cols: list[str] = []
        for ratio in (False, True):
            means: list[float] = []
            within: list[float] = []
            for run in runs:
                logs = [
                    np.log(np.median(np.array(k) / np.array(r) if ratio else np.array(k)))
                    for k, r in run[case_id]
                ]
                means.append(float(np.mean(logs)))
                within.append(np.std(logs, ddof=1) / np.sqrt(len(logs)) if len(logs) > 1 else 0)
            cols.append(f"{np.std(means, ddof=1) * 100:6.1f} | {np.mean(within) * 100:5.1f}")
        print(f"  {case_id[:52]:<52} {cols[0]:>15} {cols[1]:>15}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per case, all rounds")
    parser.add_argument("--fresh-inputs", action="store_true")
    parser.add_argument("--recompile", action="store_true")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("-k", "--kernel", action="append", help="kernel name (repeatable)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        one_process(args, args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="tile-rounds-") as tmp:
        files: list[Path] = []
        for i in range(args.processes):
            files.append(Path(tmp) / f"p{i}.json")
            child = [sys.executable, __file__, *sys.argv[1:], "--child", str(files[-1])]
            subprocess.run(child, check=True)
            print(f"  process {i} done", file=sys.stderr, flush=True)
        report(files, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
