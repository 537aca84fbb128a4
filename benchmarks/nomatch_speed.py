"""How long `tile bench -k TYPO` takes to say "no case matches", with the kept plan
(`.tile/plans.json`) and without it (issue 40: 10-24 s of runner start on a 2-core VM).

    uv run --no-sync python benchmarks/nomatch_speed.py [--repeat 3]

It writes a fixture project (tests/fixtures/good.py) to a temporary directory, runs one whole
`tile bench` there (which keeps the plan), then times `tile bench -k sqare` `--repeat` times
with the plan kept and as many times with `.tile/plans.json` removed before each (the runner
starts, plans nothing, and is asked for every case to suggest names). It prints each side's
median wall time and their ratio; every run must exit 2 with the same message.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "good.py"
TOML = '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n'
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}


def _tile(root: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tile_cli", *args],
        cwd=root,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return time.perf_counter() - start, done


def _refusal(root: Path) -> tuple[float, str]:
    took, done = _tile(root, "bench", "-k", "sqare")
    if done.returncode != 2:
        raise SystemExit(f"expected exit 2, got {done.returncode}:\n{done.stderr}")
    message = next(line for line in done.stderr.splitlines() if line.startswith("error:"))
    return took, message


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        (root / "kernels").mkdir(parents=True)
        shutil.copy(FIXTURE, root / "kernels" / "good.py")
        (root / "tile.toml").write_text(TOML)
        _tile(root, "bench")
        plans = root / ".tile" / "plans.json"
        if not plans.is_file():
            raise SystemExit("the whole bench kept no plan")
        kept_plan = plans.read_bytes()
        kept: list[float] = []
        messages: set[str] = set()
        for _ in range(args.repeat):
            took, message = _refusal(root)
            kept.append(took)
            messages.add(message)
        cold: list[float] = []
        for _ in range(args.repeat):
            plans.unlink(missing_ok=True)
            took, message = _refusal(root)
            cold.append(took)
            messages.add(message)
        plans.write_bytes(kept_plan)
    if len(messages) != 1:
        raise SystemExit(f"the two paths said different things: {sorted(messages)}")
    with_plan, without = statistics.median(kept), statistics.median(cold)
    print(f"`tile bench -k sqare` ({messages.pop()}), median of {args.repeat}:")
    print(f"  kept plan:    {with_plan:6.2f} s")
    print(f"  runner start: {without:6.2f} s")
    print(f"  ratio:        {without / with_plan:6.1f}x faster with the kept plan")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
