"""Signals sent in bursts, and at start-up: tile finalizes once and says so, never a traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_runner import fake_project
from support import assert_schema_valid, tile_argv, tile_env, wait_for

HANGS_IN_SECOND_CASE = """
hello(); plan()
start(ALL[0]); bench(ALL[0])
start(ALL[1], 1)
time.sleep(3600)
"""

# Signals that arrive together are taken in signal-number order (SIGINT before SIGTERM), so a
# mixed burst may end as either; what matters is that it ends once, finalized.
BURSTS = {
    "three-ctrl-c": ([signal.SIGINT] * 3, {130}),
    "ten-ctrl-c": ([signal.SIGINT] * 10, {130}),
    "three-sigterm": ([signal.SIGTERM] * 3, {143}),
    "term-then-ints": ([signal.SIGTERM, signal.SIGINT, signal.SIGINT], {130, 143}),
}


@pytest.mark.parametrize(("burst", "codes"), list(BURSTS.values()), ids=list(BURSTS))
def test_a_burst_of_signals_finalizes_the_run_once(
    burst: list[signal.Signals], codes: set[int], tmp_path: Path
) -> None:
    root = fake_project(tmp_path / "p", HANGS_IN_SECOND_CASE)
    out = root / "run"
    proc = subprocess.Popen(
        tile_argv("bench", "-o", str(out)),
        cwd=root,
        env=tile_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The second case has started (the first one's result is recorded before that).
    wait_for(out / "events.jsonl", '"message":"fake/k[i=1]"', proc, limit=120)
    for sig in burst:  # back to back, no pause: the burst lands in the middle of the stop
        proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode in codes, stderr
    assert "Traceback" not in stderr, stderr
    assert "tile bench: 3 cases, 1 ok" in stderr  # the end-of-run summary was printed
    assert "fake/k" in stdout  # and the measured case's table
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["status"] == "interrupted"
    assert [c["status"] for c in report["cases"]] == ["success", "interrupted", "interrupted"]
    assert (out / "artifact_manifest.json").exists()
    assert_schema_valid(out)


def _catches_sigterm(pid: int) -> bool:
    """Whether tile's own handlers are in place (Python alone does not catch SIGTERM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:"))[7:], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def test_ctrl_c_during_start_up_is_an_interruption_not_a_traceback(tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", HANGS_IN_SECOND_CASE)
    proc = subprocess.Popen(
        tile_argv("bench", "-o", str(root / "run")),
        cwd=root,
        env=tile_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Polling another process's state, not synchronizing threads: send the signals as soon
    # as tile's handlers are in place, while it is still importing its modules.
    while not _catches_sigterm(proc.pid):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr, stderr
    if (root / "run").exists():  # the signal came after the run directory was made
        assert_schema_valid(root / "run")


LOST_IN_A_FINALIZER = """
import os, signal, sys
from tile_harness import signals

signals.install()

class Dropped:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs here, inside the finalizer
            pass

Dropped()
print("went on")
signals.raise_pending()
print("raise_pending: nothing")
with signals.held():
    signals.raise_unheeded()
print("held: nothing")
try:
    signals.raise_unheeded()
except KeyboardInterrupt:
    print("raised again")
"""


def test_a_ctrl_c_that_a_finalizer_dropped_is_raised_before_the_run_starts() -> None:
    # Python drops an exception raised inside `__del__` ("Exception ignored"): the Ctrl-C
    # counts as raised, so without `raise_unheeded` tile measured on and took the burst after
    # it as an echo. A real interpreter, a real signal, a real finalizer.
    done = subprocess.run(
        [sys.executable, "-c", LOST_IN_A_FINALIZER],
        env=tile_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split("\n") == [
        "went on",
        "raise_pending: nothing",
        "held: nothing",
        "raised again",
        "",
    ], done.stderr
    assert "Exception ignored" in done.stderr and "KeyboardInterrupt" in done.stderr
