"""The real runner: what kernels start ends with it, a kernel's own KeyboardInterrupt is its
failure, and a FIFO among kernel files is named at once instead of stalling the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import MakeProject, TileRun, assert_schema_valid, tile_argv, tile_env, wait_for

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ends(pid: int, limit: float = 30.0) -> bool:
    """Whether `pid` is gone within `limit` seconds (SIGKILL lands when it is next scheduled)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)  # polling another process's state, not synchronizing threads
    return False


def _project(project: MakeProject, pids: Path) -> Path:
    pids.mkdir()
    return project(["hostile.py"], FAST + f'[runner]\nenv = {{ HOSTILE_PIDS = "{pids}" }}\n')


@pytest.mark.slow
def test_kernels_processes_end_with_the_run_and_keyboard_interrupt_is_a_failure(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    root = _project(project, pids)
    proc = tile("bench", "-o", "run", cwd=root, timeout=600)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads((root / "run" / "report.json").read_text())
    statuses = {c["kernel"]: c["status"] for c in report["cases"]}
    assert statuses == {
        "hostile/a_good": "success",
        "hostile/b_keyboard_interrupt": "failed",
        "hostile/c_daemon": "success",
        "hostile/d_good": "success",  # the runner went on after the KeyboardInterrupt
    }
    (failure,) = [f for f in report["failures"] if f["case_id"]]
    assert failure["exception_type"] == "KeyboardInterrupt"
    assert "raised by the code itself" in failure["message"]
    daemon = int((pids / "daemon").read_text())
    assert _ends(daemon), "the kernel's daemon (its own session) outlived tile"


@pytest.mark.slow
def test_a_kernels_child_ends_when_the_cli_is_killed(project: MakeProject, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    root = _project(project, pids)
    proc = subprocess.Popen(
        tile_argv("bench", "-o", "run", "-k", "e_child_then_hang"),
        cwd=root,
        env=tile_env({"HOSTILE_HANG": "1"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(pids / "child", "", proc, limit=300)
        while not (pids / "child").read_text():  # written in one go, but not atomically
            time.sleep(0.01)
        child = int((pids / "child").read_text())
        assert _alive(child)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert _ends(child), "the kernel's child outlived the CLI killed with SIGKILL"


@pytest.mark.slow
def test_a_fifo_among_kernel_files_is_named_not_waited_on(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST + "[runner]\ncase_timeout = 600\n")
    os.mkfifo(root / "kernels" / "stuck.py")
    proc = tile("bench", "-o", "run", "-k", "fx/scale", cwd=root, timeout=600)
    assert proc.returncode == 3, proc.stderr
    assert "stuck.py` is a FIFO, not a Python file: skipped" in proc.stderr
    report = json.loads((root / "run" / "report.json").read_text())
    assert {c["status"] for c in report["cases"]} == {"success"}
    assert_schema_valid(root / "run")
