"""Pipes and devices where tile expects a file (issue 39): a clear `error:` and `hint:` (exit
2), never a command blocked on a FIFO nobody writes or hashing `/dev/zero` forever.

Every `tile` call here has a timeout only so that the old hang fails the test instead of
stalling the suite; nothing waits on time.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from fake_runner import fake_project
from support import TileRun, assert_schema_valid

GOOD_RUN = """
hello(); plan(CASES)
for i, case in enumerate(CASES):
    start(case, i); bench(case)
done()
"""

# A runner whose case says it read `/dev/zero` and a FIFO (`tile.data` sends `input_file`).
DEVICE_INPUTS = """
hello(); plan(CASES)
send({"type": "input_file", "name": "zeros", "path": "/dev/zero"})
send({"type": "input_file", "name": "pipe", "path": os.path.abspath("pipe")})
for i, case in enumerate(CASES):
    start(case, i); bench(case)
done()
"""

HANG_GUARD = 120


def _refused(proc: subprocess.CompletedProcess[str], path: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert f"`{path}` is a named pipe (FIFO), not a regular file" in proc.stderr, proc.stderr
    assert "hint:" in proc.stderr and "Traceback" not in proc.stderr


def test_a_fifo_in_place_of_a_run_or_baseline_is_refused(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", GOOD_RUN)
    assert tile("bench", "-o", "run", cwd=root).returncode == 0
    os.mkfifo(root / "pipe")
    _refused(tile("compare", "pipe", "run", cwd=root, timeout=HANG_GUARD), "pipe")
    _refused(tile("compare", "run", "pipe", cwd=root, timeout=HANG_GUARD), "pipe")
    _refused(tile("baseline", "save", "pipe", cwd=root, timeout=HANG_GUARD), "pipe")
    bench = tile("bench", "--compare", "pipe", "-o", "second", cwd=root, timeout=HANG_GUARD)
    _refused(bench, "pipe")
    assert_schema_valid(root / "second")  # what it measured stays


def test_a_runner_input_that_is_a_device_or_fifo_is_not_hashed(
    tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path / "p", DEVICE_INPUTS)
    os.mkfifo(root / "pipe")
    proc = tile("bench", "-o", "run", cwd=root, timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((root / "run" / "artifact_manifest.json").read_text())
    inputs = {f["path"]: f for f in manifest["input_files"] if f["kind"] == "download"}
    for path in ("/dev/zero", str(root / "pipe")):
        assert inputs[path]["fingerprint_policy"] == "metadata_only"
        assert inputs[path]["sha256"] is None
    assert_schema_valid(root / "run")
