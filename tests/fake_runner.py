"""Fake runner executables: one small script per protocol fault, given as `[runner] python`.

The CLI starts `PYTHON -m tile_runner`; a fake is an executable script that ignores those
arguments, reads the request from stdin and writes whatever stream the test wants, good or
hostile. Its prelude gives the script `send(obj)` (one JSON line), `raw(bytes)`, the case
ids the CLI asked for (`CASES`, `REQUEST`), and builders for well-formed messages.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

_PRELUDE = """#!{python}
import json, os, sys, time

REQUEST = json.loads(sys.stdin.buffer.read() or b"{{}}")
ALL = ["fake/k[i=0]", "fake/k[i=1]", "fake/k[i=2]"]
CASES = REQUEST.get("case_ids") or ALL
OUT = sys.stdout.buffer

def raw(data):
    OUT.write(data)
    OUT.flush()

def send(obj):
    raw(json.dumps(obj).encode() + b"\\n")

def hello(**extra):
    send({{"type": "hello", "protocol_version": 1, "protocol_minor": 4, "runner_version": "fake",
          "python_version": "3", "backend": "cpu", "timers": ["wall"], "pid": os.getpid(),
          "devices": [{{"id": 0, "platform": "cpu", "device_kind": "cpu"}}], **extra}})

def info(case_id):
    return {{"case_id": case_id, "kernel": "fake/k", "params": {{"i": case_id[-2]}}}}

def plan(case_ids=None, command="bench"):
    send({{"type": "plan", "command": command, "cases": [info(c) for c in (case_ids or ALL)]}})

def start(case_id, index=0):
    send({{"type": "case_start", "case_id": case_id, "index": index, "total": len(ALL)}})

def stats(samples):
    xs = sorted(samples)
    n = len(xs)
    return {{"n": n, "min": xs[0], "max": xs[-1], "mean": sum(xs) / n, "median": xs[n // 2],
            "stdev": 0.0, "mad": 0.0, "q1": xs[n // 4], "q3": xs[3 * n // 4], "p5": xs[0],
            "p95": xs[-1]}}

def bench(case_id, samples=None, **extra):
    samples = samples or [1e-3 * (1 + i / 100) for i in range(10)]
    send({{"type": "bench_result", "case_id": case_id, "kernel": "fake/k",
          "params": {{"i": case_id[-2]}}, "timer": "wall", "samples": samples,
          "stats": stats(samples), **extra}})

def done(ok=True):
    send({{"type": "done", "ok": ok, "elapsed_s": 0.1}})

"""


def fake_runner(directory: Path, body: str, name: str = "fake_runner") -> Path:
    """Write an executable fake runner whose stream is `body` (Python, after the prelude)."""
    path = directory / name
    path.write_text(_PRELUDE.format(python=sys.executable) + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def fake_project(directory: Path, body: str, extra_toml: str = "", runner_toml: str = "") -> Path:
    """A project directory whose tile.toml runs the fake runner `body`; returns the directory.

    `runner_toml` adds lines to `[runner]`, `extra_toml` tables after it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    runner = fake_runner(directory, body)
    (directory / "tile.toml").write_text(
        f'[runner]\npython = "{runner}"\n{runner_toml}[history]\nenabled = false\n{extra_toml}'
    )
    return directory
