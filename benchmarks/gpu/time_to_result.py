"""Time to result: where a default `tile bench` of tile-std spends its wall time, on a GPU.

In one call, each step a fresh process:

  new-cold   `tile bench` with an empty compile cache (a fresh machine)
  new-warm   the same again, the cache now filled (the second run of the day)
  one-case   `tile bench -k 'std/softmax[shape=4096x4096,dtype=float32]'` from the shell, warm
  floor      a hand-written loop over the same cases: jit, compile, then the CUPTI profiler
             with exactly the sample counts tile took (kernel and reference), nothing else
  old        `tile bench` with the code before this work (`--old SITE`), twice with a compile
             cache of its own (the second, warm, is the wall to set beside new-warm), for
             the wall time and the per-case medians the new code must reproduce (within 1%)

and prints one table: wall times, the per-phase sums of tile's accounting, the overhead ratio
(wall / (runner start + compile + sampled)), and per-case medians new/old.

`--pairs N` runs instead each side N times cold (its own compile, Triton and CUDA caches)
then warm, in ABBA order, and prints the medians of both sides' walls and accounting: the
same-machine comparison of two commits, cold included.

Usage: python benchmarks/gpu/time_to_result.py --new SITE [--old SITE] [--out DIR] [--pairs N]
(SITE: a directory of installed wheels put on PYTHONPATH; `--floor-only REPORT` is the
child mode that runs the floor loop.) On a CPU it runs as a dry run of itself (the floor
calls the functions instead of CUPTI); pass `--one-case 'std/softmax[shape=256x1024,...]'`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ONE_CASE = "std/softmax[shape=4096x4096,dtype=float32]"
LIMIT_S = 420
# As tile's cupti timer: measure(iterations=N) keeps all N outputs alive.
LIVE_BYTES = 2 * 1024**3


def _tile(
    site: str, cache: Path, args: list[str], log: Path, *, own_caches: bool = False
) -> tuple[float, int]:
    """Wall seconds and exit code of one `tile` process, its output kept in `log`.

    `own_caches`: Triton's and the CUDA driver's caches live under `cache` too (a side of
    `--pairs` shares no compiled code with the other)."""
    env = {**os.environ, "PYTHONPATH": site, "TILE_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    if own_caches:
        env |= {"TRITON_CACHE_DIR": str(cache / "triton"), "CUDA_CACHE_PATH": str(cache / "cuda")}
    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)  # what a user gets
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "tile_cli", "bench", *args],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            timeout=LIMIT_S,
            check=False,
        )
    return time.perf_counter() - t0, proc.returncode


def _report(run: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run / "report.json").read_text())
    except (OSError, ValueError):
        return None


def _floor(site: str, report: Path, log: Path) -> float:
    """Wall seconds of the floor loop (this script's child mode) in a fresh process."""
    env = {**os.environ, "PYTHONPATH": site}
    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
    t0 = time.perf_counter()
    with log.open("w") as fh:
        subprocess.run(
            [sys.executable, __file__, "--floor-only", str(report)],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            timeout=LIMIT_S,
            check=False,
        )
    return time.perf_counter() - t0


def _ready(tree: object) -> None:
    """Wait for every array in `tree` (jax.block_until_ready, which jax leaves untyped)."""
    import jax

    jax.block_until_ready(tree)  # pyright: ignore[reportUnknownMemberType]


def floor_loop(report_path: str) -> None:
    """jit + compile each case's kernel and reference, then CUPTI with tile's sample counts."""
    import jax

    import tile_runner as tile
    from tile_runner._check import upcast
    from tile_runner._compile import bind_static
    from tile_runner._tuning import bind_config

    measure = None
    if jax.default_backend() == "gpu":
        from jax.experimental.mosaic.gpu import profiler

        measure = profiler.measure
    report = json.loads(Path(report_path).read_text())
    tile.discover(plugins=["tile-std"])
    for case_rec in report["cases"]:
        if not case_rec.get("stats"):
            continue
        kernel = tile.get_kernel(case_rec["kernel"])
        case = next(c for c in tile.cases(kernel.name, "bench") if c.id == case_rec["case_id"])
        made: Any = kernel.inputs(case, tile.case_key(0, case.id))
        _ready(made)
        args = cast("tuple[Any, ...]", made) if isinstance(made, tuple) else (made,)
        ref: dict[str, Any] = case_rec.get("reference") or {}
        defaults = kernel.tunables.default if kernel.tunables is not None else {}
        pairs: list[tuple[Callable[..., Any], int]] = [(kernel.fn, case_rec["stats"]["n"])]
        if kernel.reference is not None and ref.get("stats"):
            pairs.append((kernel.reference, ref["stats"]["n"]))
        for fn, n in pairs:
            # Python values among the inputs (attention's `causal`) are static, as in tile.
            bound, dynamic = bind_static(bind_config(fn, defaults) if fn is kernel.fn else fn, args)
            # The stages' signatures name jaxlib's Device, which has no types.
            compiled = jax.jit(bound).lower(*dynamic).compile()  # pyright: ignore[reportUnknownMemberType]
            args_now = dynamic
            out = compiled(*args_now)
            nbytes = sum(x.nbytes for x in jax.tree.leaves(out))
            per = max(1, min(1000, LIVE_BYTES // max(1, nbytes)))
            del out
            left = n
            while left > 0:
                k = min(per, left)
                if measure is not None:
                    measure(compiled, iterations=k)(*args_now)
                else:  # a CPU dry run of this script: plain calls
                    _ready([compiled(*args_now) for _ in range(k)])
                left -= k
        if kernel.reference is not None:
            _ready(kernel.reference(*upcast(args)))  # the check's reference run
    print(f"floor: {len(report['cases'])} cases")


def _parts(report: dict[str, Any] | None) -> dict[str, float]:
    timing: dict[str, Any] = (report or {}).get("timing") or {}
    return {**(timing.get("parts") or {}), **{k: v for k, v in timing.items() if k != "parts"}}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--new", help="site dir of the code under test")
    parser.add_argument("--old", help="site dir of the code before (optional)")
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/ttr"))
    parser.add_argument("--one-case", default=ONE_CASE, help=f"default {ONE_CASE} (GPU shapes)")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor loop (40 s)")
    parser.add_argument("--pairs", type=int, default=0, metavar="N",
                        help="instead: N cold+warm runs of each side in ABBA order (needs --old)")  # fmt: skip
    parser.add_argument("--floor-only", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_only:
        floor_loop(args.floor_only)
        return 0
    if args.pairs and not args.old:
        parser.error(
            "--pairs compares two commits and has no code before to run\n"
            "hint: pass --old SITE (a directory of the earlier wheels, installed)"
        )
    if args.pairs:
        return pairs(args.new, args.old, args.pairs, Path(args.out))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ttr-"))
    cache = work / "cache"
    walls: dict[str, float] = {}
    reports: dict[str, dict[str, Any] | None] = {}
    for name, extra in (("new-cold", []), ("new-warm", []), ("one-case", ["-k", args.one_case])):
        run = work / name
        walls[name], rc = _tile(
            args.new, cache, ["-o", str(run), "-v", *extra], out / f"{name}.txt"
        )
        reports[name] = _report(run)
        fallbacks = sum(
            log.read_text(errors="replace").count("cupti session batch failed")
            for log in (run / "logs").glob("*.log")
        )
        print(f"== {name}: {walls[name]:.1f} s (exit {rc}; cupti session fallbacks: {fallbacks})",
              flush=True)  # fmt: skip
    if reports["new-warm"] is not None:
        shutil.copy(work / "new-warm" / "report.json", out / "new-warm-report.json")
    if reports["new-warm"] is not None and not args.no_floor:
        walls["floor"] = _floor(args.new, work / "new-warm" / "report.json", out / "floor.txt")
        print(f"== floor: {walls['floor']:.1f} s", flush=True)
    if args.old:
        # Twice: the first fills its own compile cache (though not Triton's, which the new
        # code's runs filled: no fair cold figure), the second is the warm run to set beside
        # new-warm, and the medians new/old compare.
        for name in ("old-first", "old"):
            walls[name], rc = _tile(args.old, work / "old-cache", ["-o", str(work / name)],
                                    out / f"{name}.txt")  # fmt: skip
            print(f"== {name}: {walls[name]:.1f} s (exit {rc})", flush=True)
        reports["old"] = _report(work / "old")
        if reports["old"] is not None:
            shutil.copy(work / "old" / "report.json", out / "old-report.json")
    _summary(walls, reports)
    return 0


PAIR_PARTS = ("runner_start_s", "inputs_s", "compile_s", "check_s", "warmup_s", "total_s", "wall_s")


def pairs(new: str, old: str, n: int, out: Path) -> int:
    """Old and new code, each run cold (empty compile, Triton and CUDA caches of its own) then
    warm, in ABBA order (old new new old ...), so that neither side always comes first on a
    machine whose files and clocks warm up as the call goes on; the cold run is the one a
    fresh machine gives only when it is the first process of all, which no side is here."""
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ttr-pairs-"))
    order = [side for i in range(n) for side in (("old", "new") if i % 2 == 0 else ("new", "old"))]
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    reports: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i, side in enumerate(order):
        site, cache = (old if side == "old" else new), work / f"cache-{i}"
        for kind in ("cold", "warm"):
            run = work / f"{side}-{kind}-{i}"
            wall, rc = _tile(site, cache, ["-o", str(run), "-v"], out / f"pair-{i}-{side}-{kind}.txt",
                             own_caches=True)  # fmt: skip
            report = _report(run)
            if report is not None:
                reports.setdefault((side, kind), []).append(report)
            parts = _parts(report)
            parts["shell_s"] = wall
            rows.setdefault((side, kind), []).append(parts)
            got = ", ".join(f"{k[:-2]} {parts[k]:.2f}" for k in PAIR_PARTS if k in parts)
            print(f"== {i} {side}-{kind}: {wall:.1f} s (exit {rc}; {got})", flush=True)
    keys = ("shell_s", *PAIR_PARTS)
    print(f"\n{'side':<10}" + "".join(f"{k:>15}" for k in keys) + "   (medians)")
    for kind in ("cold", "warm"):
        for side in ("old", "new"):
            got = rows.get((side, kind), [])
            cells = [statistics.median(r[k] for r in got) if got and all(k in r for r in got)
                     else None for k in keys]  # fmt: skip
            print(
                f"{side + '-' + kind:<10}"
                + "".join(f"{v:>15.3f}" if v is not None else f"{'-':>15}" for v in cells)
            )
    for kind in ("cold", "warm"):
        olds, news = reports.get(("old", kind), []), reports.get(("new", kind), [])
        if olds and news:
            print(f"\n{kind} runs' cases (medians over each side's runs)", end="")
            _case_medians(olds, news)
    return 0


def _summary(walls: dict[str, float], reports: dict[str, dict[str, Any] | None]) -> None:
    print("\nwall seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in walls.items()))
    keys = ["runner_start_s", "compile_s", "sampled_s", "inputs_s", "reference_compile_s",
            "check_s", "warmup_s", "sample_s", "reference_sample_s", "other_s", "total_s",
            "wall_s", "overhead_ratio"]  # fmt: skip
    print(f"{'':>22}" + "".join(f"{k:>12}" for k in ("new-cold", "new-warm", "one-case")))
    for key in keys:
        row = [_parts(reports.get(k)).get(key) for k in ("new-cold", "new-warm", "one-case")]
        print(f"{key:>22}" + "".join(f"{v:>12.3f}" if v is not None else f"{'-':>12}" for v in row))
    old, new = reports.get("old"), reports.get("new-warm")
    if old is not None and new is not None:
        _case_medians([old], [new])


def _case_medians(olds: list[dict[str, Any]], news: list[dict[str, Any]]) -> None:
    """Each case's median, old and new (the median over each side's runs), and new/old."""

    def medians(reports: list[dict[str, Any]]) -> dict[str, float]:
        seen: dict[str, list[float]] = {}
        for report in reports:
            for c in report["cases"]:
                if c.get("stats"):
                    seen.setdefault(c["case_id"], []).append(c["stats"]["median"])
        return {case_id: statistics.median(values) for case_id, values in seen.items()}

    before, after = medians(olds), medians(news)
    ratios: list[float] = []
    print(f"\n{'case':<55}{'old':>11}{'new':>11}{'new/old':>9}")
    for case_id, m in after.items():
        if case_id not in before:
            continue
        r = m / before[case_id]
        ratios.append(r)
        print(f"{case_id:<55}{before[case_id] * 1e6:>9.2f}us{m * 1e6:>9.2f}us{r:>9.4f}")
    if ratios:
        worst = max(ratios, key=lambda x: abs(x - 1))
        print(f"median new/old {statistics.median(ratios):.4f}, worst {worst:.4f}, "
              f"within 1%: {sum(abs(r - 1) <= 0.01 for r in ratios)}/{len(ratios)}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
