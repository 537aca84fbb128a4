"""`tile tune` a user can trust (issue 34): a budgeted tune still writes what it decided, a
SIGTERM saves the run directory, results stay in the project unless the user cache is asked
for, and every case shows the configuration it ran with and where it came from."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from support import MakeProject, TileRun, tile_argv, tile_env, wait_for

FAST = (
    "[bench]\nmax_time = 0.1\nmin_runs = 5\nwarmup_runs = 1\n"
    "[tune]\nmin_runs = 3\nmax_time = 0.02\n"
)


def _entries(path: Path) -> dict[str, dict[str, object]]:
    doc = json.loads(path.read_text())
    return {e["case_id"]: e for e in doc["entries"]}


def test_a_budget_spent_mid_tune_still_writes_the_decision_and_names_the_case(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable_slow.py"], FAST)
    out = tmp_path / "run"
    # Seven configurations of 2.5 s tracing each outlast the 15 s the estimate fits in.
    proc = tile("tune", "--kernel", "fx/slow_trace", "--budget", "15", "-o", str(out), cwd=root)
    assert "--budget 15 s spent after rung 0" in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    entry = _entries(root / "tuning" / "cpu.json")["fx/slow_trace[n=64]"]
    assert entry["values"]["k"] in {str(k) for k in range(1, 8)}
    assert "not tuned to the end: fx/slow_trace[n=64]: decided on rung 0's timings" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    [cut] = [f for f in report["findings"] if "not tuned to the end" in f["title"]]
    assert cut["evidence"][0].startswith("fx/slow_trace[n=64]: decided on rung 0")


def test_sigterm_saves_the_tune_run_directory(tmp_path: Path, project: MakeProject) -> None:
    root = project(["tunable_slow.py"], FAST)
    out = tmp_path / "run"
    proc = subprocess.Popen(
        tile_argv("tune", "--kernel", "fx/slow_trace", "-o", str(out)),
        cwd=root,
        env=tile_env({"FX_TRACE_S": "30"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(out / "events.jsonl", "fx/slow_trace[n=64]{k=1}", proc, limit=120)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["status"] == "interrupted"
    assert (out / "artifact_manifest.json").exists()
