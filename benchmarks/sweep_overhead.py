"""What the runner costs beyond measuring: a 100-case sweep through `tile bench` against a
hand-written jit loop that does the same work, and the README's `uv run tile bench`.

    uv run python benchmarks/sweep_overhead.py [--cases 100] [--runs 100] [--repeat 3]
        [--python OTHER_VENV/bin/python] [--readme] [--readme-baseline ARGS]
        [--medians FILE] [--against-medians FILE]

The sweep: one tiny jnp kernel (`2x + 1` on a vector) with a reference, one case per vector
length. `tile bench` runs it with exactly `--runs` samples a case (min_runs = max_runs), the
compile cache warm (a first run fills it and is not counted). The floor is a fresh process
that does what the runner must do for each case, written by hand: make the input with the
same key, jit-compile the kernel and the reference (with JAX's persistent cache, also warm),
run both once and compare, then warm up and take the same samples of the two, interleaved,
with `perf_counter` around each call. The figures: wall seconds of the whole `tile bench`
command and of the whole floor process (both import jax and start from nothing), their ratio,
and the per-case cost inside the runner (its cases' accounting) against the floor's per-case
loop.

`--python` runs `tile` with another environment's interpreter (e.g. the main checkout's
`.venv/bin/python`, for figures before a change) while the floor always runs here; the
best of `--repeat` runs is kept for each. `--readme` also times the README's command, `tile
bench` of tile-std in this checkout, its second run (compile cache warm);
`--readme-baseline "--target-precision 0.01"` times the same command with those arguments
too, in turns with the plain one after the first run (ABAB...), for a change that a flag
undoes (the default it changed). `--medians FILE`
writes each case's median (JSON); `--against-medians FILE` compares each case's median with
such a file from another code's run (the medians must not move beyond noise).

This is not a timed test: speed depends on the machine, so figures are printed for people to
read (exit 1 only when a run failed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

_KERNELS = """
import jax.numpy as jnp
import tile_runner as tile


def _ref(x):
    return 2.0 * x + 1.0


@tile.kernel(
    "sweep/axpy",
    inputs=lambda case, key: (tile.normal(key, (case.n,), "float32"),),
    reference=_ref,
    bench=tile.axes(n=list(range(64, 64 + {cases}))),
)
def axpy(x):
    return x * 2 + 1
"""

_FLOOR = """
import hashlib, json, statistics, sys, time
t_start = time.perf_counter()
import jax, jax.numpy as jnp

jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
plan = json.loads(sys.argv[2])  # [[case_id, n, kernel samples, reference samples], ...]
warmup = int(sys.argv[3])


def kernel(x):
    return x * 2 + 1


def ref(x):
    return 2.0 * x + 1.0


def err(o, r):
    return jnp.linalg.norm(o - r) / jnp.linalg.norm(r)


check = jax.jit(err)
t_loop = time.perf_counter()
medians = {{}}
for case_id, n, kn, rn in plan:
    digest = hashlib.sha256(case_id.encode()).digest()
    key = jax.random.fold_in(jax.random.key(0), int.from_bytes(digest[:4], "little") >> 1)
    x = jax.random.normal(key, (n,), "float32").block_until_ready()
    k = jax.jit(kernel).lower(x).compile()
    r = jax.jit(ref).lower(x).compile()
    assert float(check(k(x), r(x))) <= 1e-5
    for _ in range(warmup):
        k(x).block_until_ready()
        r(x).block_until_ready()
    ks, rs = [], []
    for i in range(max(kn, rn)):
        if i < kn:
            t0 = time.perf_counter()
            k(x).block_until_ready()
            ks.append(time.perf_counter() - t0)
        if i < rn:
            t0 = time.perf_counter()
            r(x).block_until_ready()
            rs.append(time.perf_counter() - t0)
    medians[case_id] = statistics.median(ks)
t_end = time.perf_counter()
print(json.dumps({{"loop_s": t_end - t_loop, "import_s": t_loop - t_start, "medians": medians}}))
"""


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "TILE_HISTORY_ENABLED": "false",
            "TILE_CACHE_DIR": str(cache)}  # fmt: skip


def _tile_bench(python: str, cwd: Path, cache: Path, out: Path, extra: list[str]) -> float:
    """Wall seconds of one `tile bench` process; raises when it fails."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [python, "-m", "tile_cli", "bench", "-o", str(out), *extra],
        cwd=cwd,
        env=_env(cache),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"tile bench failed (exit {done.returncode}):\n{done.stdout[-3000:]}"
                         f"\n{done.stderr[-3000:]}")  # fmt: skip
    return wall


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for null."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text())


def _floor(cache: Path, plan: list[list[Any]], warmup: int) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _FLOOR.format(), str(cache), json.dumps(plan), str(warmup)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"the floor loop failed:\n{done.stderr[-3000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def _sweep(args: argparse.Namespace, root: Path) -> int:
    project = root / "project"
    project.mkdir()
    (project / "sweep_kernels.py").write_text(_KERNELS.format(cases=args.cases))
    (project / "tile.toml").write_text(
        '[project]\npaths = ["sweep_kernels.py"]\nplugins = []\n\n'
        f"[bench]\nmin_runs = {args.runs}\nmax_runs = {args.runs}\nmax_time = 30.0\n"
        f"warmup_runs = {args.warmup}\n"
    )
    python = args.python or sys.executable
    cache = root / "tile-cache"
    _tile_bench(python, project, cache, root / "fill", [])  # fills the compile cache
    walls: list[float] = []
    report: dict[str, Any] = {}
    for i in range(args.repeat):
        run = root / f"run{i}"
        walls.append(_tile_bench(python, project, cache, run, []))
        if walls[-1] == min(walls):
            report = _report(run)
    cases = [c for c in report["cases"] if c.get("stats")]
    plan: list[list[Any]] = [[c["case_id"], int(c["params"]["n"]), c["stats"]["n"],
                              _obj(_obj(c.get("reference")).get("stats")).get("n", 0)]
                             for c in cases]  # fmt: skip
    floor_cache = root / "floor-cache"
    _floor(floor_cache, plan, args.warmup)  # fills its compile cache
    floors = [_floor(floor_cache, plan, args.warmup) for _ in range(args.repeat)]
    floor_wall, floor = min(floors, key=lambda f: f[0])
    tile_wall = min(walls)
    timing = _obj(report.get("timing"))
    in_runner = sum(float(_obj(c.get("accounting")).get("total_s") or 0.0) for c in cases)
    n = len(cases)
    print(f"sweep: {n} cases x {args.runs} samples (+ reference), compile cache warm, "
          f"best of {args.repeat}; tile from {python}")  # fmt: skip
    print(f"  tile bench wall      {tile_wall:7.2f} s   (runs: "
          f"{', '.join(f'{w:.2f}' for w in walls)}; runner start "
          f"{float(timing.get('runner_start_s') or 0):.2f} s)")  # fmt: skip
    print(f"  floor process wall   {floor_wall:7.2f} s   (import {floor['import_s']:.2f} s, "
          f"loop {floor['loop_s']:.2f} s)")  # fmt: skip
    print(f"  ratio (wall)         {tile_wall / floor_wall:7.2f}x")
    print(f"  per case: runner {1e3 * in_runner / n:.2f} ms, floor "
          f"{1e3 * floor['loop_s'] / n:.2f} ms, ratio {in_runner / floor['loop_s']:.2f}x")  # fmt: skip
    medians = {c["case_id"]: c["stats"]["median"] for c in cases}
    ratios = [medians[k] / v for k, v in floor["medians"].items() if k in medians and v > 0]
    print(f"  case medians tile/floor: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")  # fmt: skip
    if args.medians:
        Path(args.medians).write_text(json.dumps(medians, indent=1, sort_keys=True))
    if args.against_medians:
        _against(medians, Path(args.against_medians))
    return 0


def _against(medians: dict[str, float], path: Path) -> None:
    """Each case's median against another code's (`--medians` of that run)."""
    other: dict[str, float] = json.loads(path.read_text())
    ratios = sorted(medians[k] / v for k, v in other.items() if k in medians and v > 0)
    if not ratios:
        return
    quart = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    print(f"  case medians this/other ({path.name}): median {statistics.median(ratios):.3f}, "
          f"quartiles {quart[0]:.3f}-{quart[2]:.3f}, min {ratios[0]:.3f}, "
          f"max {ratios[-1]:.3f}")  # fmt: skip


def _readme(args: argparse.Namespace, root: Path) -> None:
    """The README's `uv run tile bench` (tile-std, this checkout's tile.toml), second run."""
    python = args.python or sys.executable
    checkout = Path(__file__).resolve().parent.parent
    cache = root / "readme-cache"
    first = _tile_bench(python, checkout, cache, root / "readme-1", [])
    second = [_tile_bench(python, checkout, cache, root / f"readme-{i + 2}", [])
              for i in range(args.repeat)]  # fmt: skip
    print(f"README tile bench (tile-std): first run {first:.2f} s, then "
          f"{', '.join(f'{s:.2f}' for s in second)} s (best {min(second):.2f} s)")  # fmt: skip
    _print_parts("second run's", root / "readme-2")
    if args.readme_baseline:
        extra: list[str] = args.readme_baseline.split()
        no_args: list[str] = []
        runs: dict[str, list[float]] = {"plain": [], "baseline": []}
        for i in range(args.repeat):
            for side, side_extra in (("plain", no_args), ("baseline", extra)):
                out = root / f"readme-{side}-{i}"
                runs[side].append(_tile_bench(python, checkout, cache, out, side_extra))
        for side, walls in runs.items():
            label = "tile bench" if side == "plain" else f"tile bench {args.readme_baseline}"
            print(f"  in turns, {label}: {', '.join(f'{w:.2f}' for w in walls)} s "
                  f"(median {statistics.median(walls):.2f})")  # fmt: skip
            _print_parts(f"{side}'s first", root / f"readme-{side}-0")
        ratio = statistics.median(runs["plain"]) / statistics.median(runs["baseline"])
        print(f"  plain / baseline (medians): {ratio:.2f}x")


def _print_parts(what: str, run: Path) -> None:
    timing = _obj(_report(run).get("timing"))
    parts = _obj(timing.get("parts"))
    print(
        f"  {what} parts (tile's clock {timing.get('wall_s', 0):.2f} s): "
        + ", ".join(f"{k} {v:.2f}" for k, v in parts.items() if isinstance(v, int | float))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--runs", type=int, default=100, help="samples a case (kernel)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best counts")
    parser.add_argument("--python", help="interpreter that runs tile (default: this one)")
    parser.add_argument("--readme", action="store_true", help="also time `tile bench` of tile-std")
    parser.add_argument("--readme-baseline", help="arguments of a baseline README run, in turns")
    parser.add_argument("--no-sweep", action="store_true", help="only the README run")
    parser.add_argument("--medians", help="write each sweep case's median here (JSON)")
    parser.add_argument("--against-medians", help="compare each case's median with this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tile-sweep-") as tmp:
        root = Path(tmp)
        if not args.no_sweep:
            _sweep(args, root)
        if args.readme:
            _readme(args, root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
