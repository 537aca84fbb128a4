"""Wall time of the same `tile tune` in two checkouts of tile, alternating (issue #34's speed).

    uv run --no-sync python benchmarks/tune_speed.py OLD_CHECKOUT NEW_CHECKOUT \
        [--kernel std/softmax] [--pairs 3] [--set tune.rungs=4 ...]

Each checkout needs its own environment (`uv sync` in it). The runs alternate old, new, old,
new... so that a machine that slows down or speeds up over the minutes weighs on both; the
first pair fills the compile cache (shared, as the cache key does not depend on tile) and
does not count. For each run it prints the
wall time and how many runners the tune started (`runner_started` events), then each side's
median and new/old. A `tuning/` directory a tune writes into a checkout that had none is
removed at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def tune(checkout: Path, kernel: str, out: Path, settings: list[str]) -> tuple[float, int]:
    """One `tile tune` in `checkout`'s environment: (wall seconds, runners started)."""
    command = [str(checkout / ".venv" / "bin" / "tile"), "tune", "--kernel", kernel,
               "-o", str(out), *settings]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=checkout, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: tile tune exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    events = (out / "events.jsonl").read_text().splitlines()
    return wall, sum(json.loads(line)["event"] == "runner_started" for line in events)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--kernel", default="std/softmax")
    parser.add_argument("--pairs", type=int, default=3, help="counted old/new pairs")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for both")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"old": [], "new": []}
    written = [c / "tuning" for c in (args.old, args.new) if not (c / "tuning").exists()]
    with tempfile.TemporaryDirectory(prefix="tile-tune-speed-") as tmp:
        for pair in range(args.pairs + 1):  # pair 0 fills the compile cache
            for side in ("old", "new"):
                out = Path(tmp) / f"{side}-{pair}"
                wall, runners = tune(getattr(args, side), args.kernel, out, args.set)
                counted = pair > 0
                if counted:
                    walls[side].append(wall)
                note = "" if counted else " (fills the compile cache, not counted)"
                print(f"{side} wall {wall:.2f} s, {runners} runners{note}", flush=True)
    for path in written:
        shutil.rmtree(path, ignore_errors=True)
    old, new = statistics.median(walls["old"]), statistics.median(walls["new"])
    print(f"median old {old:.2f} s, new {new:.2f} s, new/old {new / old:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
