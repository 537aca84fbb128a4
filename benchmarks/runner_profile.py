"""Where does the runner spend a warm one-case `tile bench`? A cProfile of the runner process.

Runs `tile bench -k CASE` twice in fresh processes with one compile cache (the first fills it)
and profiles the second run's runner: a generated `sitecustomize` starts cProfile in the
process started as `python -m tile_runner` and writes its stats when the runner exits (by
`sys.exit` or `os._exit`). Prints each run's wall time, the second run's accounting, and the
profile's top functions by cumulative and by own time.

    python benchmarks/runner_profile.py [CASE | all] [--top 30]

On a GPU the default case is issue #38's one-case figure; on a CPU pass a CPU case id. `all`
profiles a warm run of every default case (issue #38's warm figure; on a CPU, where a run
has two runner processes, the profile is the last one's).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GPU_CASE = "std/softmax[shape=4096x4096,dtype=float32]"

SITECUSTOMIZE = """\
import os, sys
if os.environ.get("PROBE_PROFILE") and sys.orig_argv[1:3] == ["-m", "tile_runner"]:
    import cProfile
    _probe = cProfile.Profile()
    _real_exit = os._exit

    def _dump():
        _probe.disable()
        _probe.dump_stats(os.environ["PROBE_PROFILE"])

    def _exit(code):
        _dump()
        _real_exit(code)

    import atexit
    atexit.register(_dump)
    os._exit = _exit
    _probe.enable()
"""


def bench(case: str | None, out: Path, env: dict[str, str]) -> float:
    """Wall seconds of one `tile bench -k CASE -o OUT` process (every default case when `case`
    is None); exit 2 with its output's tail when it fails (a case id that matches nothing)."""
    t0 = time.perf_counter()
    argv = [sys.executable, "-m", "tile_cli", "bench", *(["-k", case] if case else []),
            "-o", str(out)]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or not (out / "report.json").exists():
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
        print(f"error: `tile bench -k {case}` exited {done.returncode}", file=sys.stderr)
        print("hint: pass a case id of this device (`tile list`); on a CPU the default GPU "
              "case does not exist", file=sys.stderr)  # fmt: skip
        sys.exit(2)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "case", nargs="?", default=GPU_CASE, help="a case id, or `all` for every default case"
    )
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--after-full",
        action="store_true",
        help="first a default run of every case in the same cache, as time_to_result.py's "
        "one-case run follows its warm run",
    )
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "site").mkdir()
        (root / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        path = os.pathsep.join(p for p in (str(root / "site"), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "TILE_CACHE_DIR": str(root / "cache")}
        env["NO_COLOR"] = "1"
        if opts.after_full:
            print(f"full default run first: {bench(None, root / 'full', env):.2f} s")
        case = None if opts.case == "all" else opts.case
        first = bench(case, root / "run1", env)
        prof = root / "runner.prof"
        second = bench(case, root / "run2", {**env, "PROBE_PROFILE": str(prof)})
        print(f"wall: first (cache cold) {first:.2f} s, second (warm, profiled) {second:.2f} s")
        report = json.loads((root / "run2" / "report.json").read_text())
        timing = report["timing"]
        parts = {k: round(v, 3) for k, v in timing["parts"].items()}
        print(f"runner start {timing['runner_start_s']:.3f} s, wall {timing['wall_s']:.3f} s")
        print("parts:", parts)
        if not prof.exists():
            print("no profile was written (the runner did not exit through sys.exit/os._exit)")
            return
        stats = pstats.Stats(str(prof))
        stats.sort_stats("cumulative").print_stats(opts.top)
        stats.sort_stats("tottime").print_stats(opts.top // 2)
        # Where making the inputs goes (the GPU's one-case runs spent ~1 s there).
        stats.sort_stats("cumulative").print_callees(r"_inputs\.py.*\((make|draw|_make)")


if __name__ == "__main__":
    main()
