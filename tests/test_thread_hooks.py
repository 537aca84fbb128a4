"""A kernel that sets a trace hook while it is traced (issue 39 item 5, found again by the
sweep of 2026-12-05): with compile-ahead it is traced on a pool thread, where a hook is the
thread's own and the process state guard of the main thread never saw it, so the case got
no finding. The pool now puts the hook back and the batch is traced again in its turns,
where the guard names the case."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support import tile_argv, tile_env

KERNELS = """\
import sys

import tile_runner as tile

AX = tile.axes(n=[64])


def _inputs(case, key):
    return (tile.normal(key, (case.n,), "float32"),)


def hooked(x):
    sys.settrace(lambda frame, event, arg: None)  # runs while the kernel is traced
    return x * 2


tile.kernel("hk/a_hooked", inputs=_inputs, reference=lambda x: 2 * x, bench=AX)(hooked)
tile.kernel("hk/b_plain", inputs=_inputs, reference=lambda x: 2 * x, bench=AX)(lambda x: x + x)
"""


def test_a_hook_set_while_traced_is_named_on_its_case(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "hooks.py").write_text(KERNELS)
    (tmp_path / "tile.toml").write_text(
        '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.02\n[history]\nenabled = false\n'
    )
    done = subprocess.run(tile_argv("bench"), cwd=tmp_path, env=tile_env(), capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = tmp_path / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    isolation = [f["title"] for f in report["findings"] if f["category"] == "isolation"]
    assert len(isolation) == 1 and isolation[0].startswith("hk/a_hooked"), isolation
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    [change] = [e["fields"] for e in events if e["event"] == "state_change"]
    assert change["case_id"].startswith("hk/a_hooked")
    assert [(d["kind"], d["name"], d["restored"]) for d in change["changes"]] == [
        ("trace_hooks", "sys.settrace", True)
    ]
