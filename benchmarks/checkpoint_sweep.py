"""What the checkpoints cost a real sweep: `tile bench` of N fast cases with the real runner,
with its checkpoints and without them.

    uv run --no-sync python benchmarks/checkpoint_sweep.py [--cases 1000] [--pairs 1]

Issue 39's target: the 1000-case real-runner sweep takes at most 1.3x the wall time of the
same sweep with the checkpoints off. The sweep is one trivial jnp kernel (`2x + 1` on a vector)
with a reference, one case per vector length, each case made cheap: one warm-up call, five
samples (`min_runs = max_runs = 5`), `max_time = 0.05`, the compile cache warm (a first run
fills it and is not counted), no history.

Both runs are the real `tile bench` command in a process of its own, started through a small
wrapper that sets `tile_harness._checkpoint.Checkpoints.taken` first: on, the run appends each
finished case to `cases.jsonl` and compacts report.json, summary.md and the manifest now and
then, as every run does; off, it writes them only when it ends (a run killed then keeps
nothing). It is the one thing that differs. `--no-fsync` makes `os.fsync` a no-op in both (not
what tile does: it tells how much of the difference is waiting for the disk). `--pairs N` runs N pairs, the order alternating
(on then off, off then on) so that a machine whose load drifts favours neither.

Printed for each run: its wall time, the CLI's own CPU time (the `tile` process without its
runner) and the CPU time of both; then each pair's wall ratio (on / off) and the ratio of the
summed walls. Each run directory must pass schema-check with every case a success.

This is not a timed test: speed depends on the machine, so figures are printed for people to
read (exit 1 only when a run fails or its directory does not validate).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tile_artifacts as ta

_KERNELS = """
import tile_runner as tile


def _ref(x):
    return 2.0 * x + 1.0


@tile.kernel(
    "sweep/axpy",
    inputs=lambda case, key: (tile.normal(key, (case.n,), "float32"),),
    reference=_ref,
    bench=tile.axes(n=[256], i=list(range({cases}))),
)
def axpy(x):
    return x * 2 + 1
"""

_TOML = """\
[project]
paths = ["sweep_kernels.py"]
plugins = []

[bench]
warmup_runs = 1
min_runs = 5
max_runs = 5
max_time = 0.05

[history]
enabled = false
"""

# `tile` with the checkpoints on or off (argv[1], `+nofsync`: fsync a no-op); the CLI's own
# CPU seconds go to argv[2].
_WRAPPER = """
import json, os, resource, sys
from tile_harness._checkpoint import Checkpoints

Checkpoints.taken = sys.argv[1].startswith("on")
if sys.argv[1].endswith("+nofsync"):
    os.fsync = lambda fd: None
from tile_cli.__main__ import main

try:
    main(sys.argv[3:])
finally:
    own = resource.getrusage(resource.RUSAGE_SELF)
    with open(sys.argv[2], "w") as fh:
        json.dump({"cpu_s": own.ru_utime + own.ru_stime}, fh)
"""


def _tile_bench(
    project: Path, cache: Path, out: Path, *, checkpoints: bool, fsync: bool = True
) -> dict[str, float]:
    """One `tile bench` process: its wall s, its own CPU s and its and its runner's CPU s."""
    own = out.parent / f"{out.name}.cpu.json"
    mode = ("on" if checkpoints else "off") + ("" if fsync else "+nofsync")
    argv = [sys.executable, "-c", _WRAPPER, mode, str(own), "bench", "-o", str(out)]
    env = {**os.environ, "NO_COLOR": "1", "TILE_CACHE_DIR": str(cache)}
    wall = time.perf_counter()
    process = subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)  # fmt: skip
    assert process.stderr is not None
    err = process.stderr.read()  # drained before wait4: a full pipe would block the child
    process.stderr.close()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - wall
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        said = err.decode(errors="replace")[-3000:]
        raise SystemExit(f"tile bench failed (exit {code}):\n{said}")
    cli = float(json.loads(own.read_text())["cpu_s"])
    return {"wall": wall, "cli_cpu": cli, "cpu": usage.ru_utime + usage.ru_stime}


def _valid(out: Path, n: int) -> bool:
    problems = ta.check.check_path(out)
    for problem in problems[:5]:
        print(f"  {problem}", file=sys.stderr)
    report = ta.read_report(out / ta.REPORT_JSON, metrics=False)
    ok = sum(c.status == "success" for c in report.cases) == n
    if not ok:
        print(f"  {out}: not every one of {n} cases is a success", file=sys.stderr)
    return not problems and ok


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=1, help="runs with and without, in turns")
    parser.add_argument("--no-fsync", action="store_true",
                        help="make fsync a no-op in both (what the disk's share is)")  # fmt: skip
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="tile-checkpoint-sweep-") as tmp:
        root = Path(tmp)
        project, cache = root / "project", root / "cache"
        project.mkdir()
        (project / "sweep_kernels.py").write_text(_KERNELS.format(cases=args.cases))
        (project / "tile.toml").write_text(_TOML)
        fill = _tile_bench(project, cache, root / "fill", checkpoints=True)
        print(f"{args.cases} cases; compile cache filled by a first run ({fill['wall']:.2f} s)"
              + ("; fsync a no-op in both" if args.no_fsync else ""))  # fmt: skip
        print(f"{'pair':>4}  {'checkpoints':<11} {'wall s':>8} {'CLI CPU s':>10} {'CPU s':>8}")
        walls = {True: 0.0, False: 0.0}
        for pair in range(args.pairs):
            order = (True, False) if pair % 2 == 0 else (False, True)
            got: dict[bool, float] = {}
            for on in order:
                out = root / f"run-{pair}-{'on' if on else 'off'}"
                fig = _tile_bench(project, cache, out, checkpoints=on, fsync=not args.no_fsync)
                ok = _valid(out, args.cases) and ok
                if (out / ta.CASES_JSONL).exists() != on:  # only checkpoints append to it
                    print(f"  {out.name}: checkpoints were not {'on' if on else 'off'}",
                          file=sys.stderr)  # fmt: skip
                    ok = False
                got[on] = fig["wall"]
                walls[on] += fig["wall"]
                print(f"{pair + 1:>4}  {'on' if on else 'off':<11} {fig['wall']:8.2f} "
                      f"{fig['cli_cpu']:10.2f} {fig['cpu']:8.2f}", flush=True)  # fmt: skip
            print(f"{pair + 1:>4}  wall on / off: {got[True] / got[False]:.3f}x", flush=True)
    print(f"all pairs: wall on / off {walls[True] / walls[False]:.3f}x (target <= 1.3x)")
    if not ok:
        print("a run directory did not validate or lost cases", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
