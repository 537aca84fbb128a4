"""How fast the CLI takes in a chatty runner: 200,000 protocol `log` lines through `tile bench`.

    uv run python benchmarks/stream_speed.py [--lines 200000] [--level info]

A fake runner (a Python script given as `[runner] python`) says hello, plans one case, writes
LINES `log` messages inside it as fast as a pipe takes them, sends the case's result and
`done`. The figure is the wall time of the whole `tile bench` process, start-up included,
and the lines per second it implies; the run directory must validate afterwards. Goal: under
5 s for 200,000 lines (issue #27: they took 67 s, decoding one line at a time and writing,
fsyncing and echoing an event per line). `--level warning` makes every line a diagnostic the
CLI keeps for the summary, the slower path.

This is not a timed test: speed depends on the machine, so the figure is printed for people
to read (exit 1 only when the run itself failed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_RUNNER = """#!{python}
import json, os, sys

sys.stdin.buffer.read()
out = sys.stdout
def send(obj):
    out.write(json.dumps(obj) + "\\n")

send({{"type": "hello", "protocol_version": 1, "protocol_minor": 4, "runner_version": "fake",
      "python_version": "3", "backend": "cpu", "timers": ["wall"], "pid": os.getpid(),
      "devices": [{{"id": 0, "platform": "cpu", "device_kind": "cpu"}}]}})
case = "speed/chatty[n=1]"
send({{"type": "plan", "command": "bench",
      "cases": [{{"case_id": case, "kernel": "speed/chatty", "params": {{"n": "1"}}}}]}})
send({{"type": "case_start", "case_id": case, "index": 0, "total": 1}})
line = json.dumps({{"type": "log", "level": "{level}", "case_id": case,
                   "message": "compiling: a line of chatter from a kernel"}}) + "\\n"
block = line * 1000
for _ in range({lines} // 1000):
    out.write(block)
out.write(line * ({lines} % 1000))
samples = [1e-3 + i * 1e-6 for i in range(10)]
stats = {{"n": 10, "min": samples[0], "max": samples[-1], "mean": sum(samples) / 10,
         "median": (samples[4] + samples[5]) / 2, "stdev": 3e-6, "mad": 2.5e-6,
         "q1": samples[2], "q3": samples[7], "p5": samples[0], "p95": samples[-1]}}
send({{"type": "bench_result", "case_id": case, "kernel": "speed/chatty",
      "params": {{"n": "1"}}, "timer": "wall", "samples": samples, "stats": stats}})
send({{"type": "done", "ok": True, "elapsed_s": 1.0}})
out.flush()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--level", default="info", choices=["debug", "info", "warning"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tile-stream-speed-") as tmp:
        root = Path(tmp)
        runner = root / "fake_runner.py"
        runner.write_text(_RUNNER.format(python=sys.executable, lines=args.lines, level=args.level))
        runner.chmod(0o755)
        (root / "tile.toml").write_text(f'[runner]\npython = "{runner}"\n')
        env = {**os.environ, "NO_COLOR": "1", "TILE_HISTORY_ENABLED": "false"}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tile_cli", "bench", "-o", str(root / "run")],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        check = subprocess.run(
            [sys.executable, "-m", "tile_cli", "schema-check", str(root / "run")],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    print(f"{args.lines} log lines ({args.level}): tile bench took {wall:.2f} s "
          f"({args.lines / wall:,.0f} lines/s), exit {done.returncode}; "
          f"schema-check exit {check.returncode}")  # fmt: skip
    if done.returncode != 0 or check.returncode != 0:
        print(done.stderr[-2000:], check.stdout[-2000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
