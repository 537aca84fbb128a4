"""An unlucky environment or a bad flag gets an `error:` and a `hint:` with the right exit code.

Full disk (a real 96 KiB tmpfs in a private mount namespace), an ASCII-only terminal, paths
that cannot be written, a silent runner, a runner that cannot start, a stale `.tile/latest`,
escape codes in case ids: none may end in a traceback, lose what was measured or leave a run
directory that does not validate (or read as incomplete).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_runner import fake_project
from support import MakeProject, TileRun, assert_schema_valid, tile_argv, tile_env

GOOD_RUN = """
hello(); plan(CASES)
for i, case in enumerate(CASES):
    start(case, i); bench(case)
done()
"""


def _clean(proc: subprocess.CompletedProcess[str]) -> None:
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text and "internal error" not in text, text


def test_full_disk_mid_run_prints_the_results_and_reports_the_first_failed_write(
    tmp_path: Path,
) -> None:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(8) for a private tmpfs")
    root = fake_project(
        tmp_path / "p",
        """
        hello(); plan()
        start(ALL[0], 0); bench(ALL[0])
        start(ALL[1], 1)
        for i in range(3000):  # ~500 KB of events: more than the disk holds
            send({"type": "log", "level": "info", "case_id": ALL[1],
                  "message": f"compiling step {i} " + "x" * 100})
        bench(ALL[1])
        start(ALL[2], 2); bench(ALL[2])
        done()
        """,
    )
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    script = f"""
        mount -t tmpfs -o size=96k tmpfs {disk} || exit 97
        cd {root}
        {" ".join(tile_argv("bench", "-o", str(disk / "run")))} >{out}/stdout 2>{out}/stderr
        echo $? >{out}/rc
        {" ".join(tile_argv("schema-check", str(disk / "run")))} >{out}/check 2>&1
        echo $? >{out}/check_rc
        cp {disk}/run/artifact_manifest.json {disk}/run/report.json {out}/
    """
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        env=tile_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode == 97 or not (out / "rc").exists():
        pytest.skip(f"no private tmpfs here: {done.stderr.strip()}")
    stdout, stderr = (out / "stdout").read_text(), (out / "stderr").read_text()
    assert (out / "rc").read_text().strip() == "3", stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert "is incomplete: cannot write" in stderr and "No space left on device" in stderr
    assert "hint: " in stderr and "report.json holds every result above" in stderr
    for i in range(3):  # every case measured is printed, though none could be saved
        assert f"[i={i}]" in stdout, stdout
    # The last checkpoint's manifest stays, so the directory validates and reads as
    # incomplete; report.json (rewritten once the failed batch was cut off) keeps every case.
    assert (out / "check_rc").read_text().strip() == "0", (out / "check").read_text()
    manifest = json.loads((out / "artifact_manifest.json").read_text())
    assert manifest["run"]["status"] == "incomplete"
    report = json.loads((out / "report.json").read_text())
    assert [c["status"] for c in report["cases"]] == ["success"] * 3
    assert "run directory incomplete: cannot write" in report["run"]["status_reason"]


def test_ascii_only_output_escapes_what_it_cannot_encode(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(
        tmp_path / "p",
        """
        hello(); plan(CASES, command="test")
        for i, case in enumerate(CASES):
            start(case, i)
            send({"type": "test_result", "case_id": case, "kernel": "fake/k",
                  "params": {"i": case[-2]}, "check": {"passed": True}})
        done()
        """,
    )
    proc = tile("test", "-o", "run", cwd=root, env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    _clean(proc)
    assert "\\u2713" in proc.stdout  # the ✓ of each passing case, escaped


def test_baseline_save_to_an_unusable_directory(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", GOOD_RUN)
    assert tile("bench", "-o", "run", cwd=root).returncode == 0
    proc = tile("baseline", "save", "run", "--dir", "/dev/null/baselines", cwd=root)
    assert proc.returncode == 2, proc.stderr
    _clean(proc)
    assert "error: cannot write the baseline to `/dev/null/baselines`: Not a directory" in (
        proc.stderr
    )
    assert "hint: choose a writable directory with `--dir`" in proc.stderr


def test_pooling_the_same_run_twice_is_refused(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", GOOD_RUN)
    assert tile("bench", "-o", "run", cwd=root).returncode == 0
    proc = tile("baseline", "save", "run", "run/report.json", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "is given more than once" in proc.stderr and "hint:" in proc.stderr


def test_calibration_cache_that_cannot_be_written(tile: TileRun, tmp_path: Path) -> None:
    proc = tile("device", "--calibrate", env={"TILE_CACHE_DIR": "/dev/null/cache"})
    assert proc.returncode == 2, proc.stderr
    _clean(proc)
    assert "cannot cache the calibration in `/dev/null/cache/calibration`" in proc.stderr
    assert "hint: set TILE_CACHE_DIR" in proc.stderr


def test_unknown_dtype_override_is_a_usage_error_before_any_run(
    tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path / "p", GOOD_RUN)
    proc = tile("bench", "-a", "dtype=float32,notadtype", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "`notadtype` is not a dtype name" in proc.stderr and "hint:" in proc.stderr
    assert not (root / ".tile").exists()  # refused before a run directory was made


def test_offline_flag_that_is_not_a_boolean(tile: TileRun, tmp_path: Path) -> None:
    proc = tile("fetch", env={"TILE_OFFLINE": "maybe"})
    assert proc.returncode == 2, proc.stderr
    assert "TILE_OFFLINE='maybe' is not a boolean" in proc.stderr and "hint:" in proc.stderr


def test_runner_timeout_bounds_a_silent_start(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", "time.sleep(3600)\n", runner_toml="timeout = 1\n")
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 3, proc.stderr
    _clean(proc)
    assert "no message from the runner for 1 s (`[runner] timeout`)" in proc.stderr
    assert_schema_valid(root / "run")


def test_runner_that_cannot_start_says_why(tile: TileRun, tmp_path: Path) -> None:
    # A real interpreter without site-packages: `python -m tile_runner` fails as it would
    # in an environment where tile-runner is not installed.
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    bare.chmod(0o755)
    root = tmp_path / "p"
    root.mkdir()
    (root / "tile.toml").write_text(f'[runner]\npython = "{bare}"\n[history]\nenabled = false\n')
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 3, proc.stderr
    _clean(proc)
    assert "runner exited with code 1 before finishing: " in proc.stderr
    assert "No module named tile_runner" in proc.stderr
    assert "hint: the runner did not start" in proc.stderr
    assert_schema_valid(root / "run")


def test_bad_xla_flags_are_named_as_the_reason_the_runner_did_not_start(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], "[history]\nenabled = false\n")
    proc = tile("bench", "-o", "run", cwd=root, env={"XLA_FLAGS": "--xla_no_such_flag=1"})
    assert proc.returncode == 3, proc.stderr
    _clean(proc)
    assert "Unknown flag in XLA_FLAGS: --xla_no_such_flag=1" in proc.stderr  # XLA's own words
    assert "hint: the runner did not start" in proc.stderr and "XLA_FLAGS" in proc.stderr
    assert_schema_valid(root / "run")


def test_latest_that_is_a_directory_is_said_and_left_clean(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", GOOD_RUN)
    (root / ".tile" / "latest").mkdir(parents=True)
    (root / ".tile" / "latest" / "mine.txt").write_text("not a run")
    proc = tile("bench", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "latest` was not updated (is a directory, not a link)" in proc.stderr
    assert [p.name for p in (root / ".tile").iterdir() if p.name.startswith(".latest")] == []
    (run,) = (root / ".tile" / "runs").iterdir()
    assert_schema_valid(run)


def test_escape_codes_in_case_ids_are_printed_escaped(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(
        tmp_path / "p",
        """
        evil = "fake/k[i=\\x1b]0;pwned\\x07\\x1b[2J]"
        hello()
        send({"type": "plan", "command": "bench",
              "cases": [{"case_id": evil, "kernel": "fake/k", "params": {}}]})
        start(evil)
        send({"type": "failure", "case_id": evil, "phase": "run", "error_type": "E",
              "message": "boom \\x1b[31mred"})
        done(False)
        """,
    )
    proc = subprocess.run(
        tile_argv("bench", "-o", "run"),
        cwd=root,
        env=tile_env(),
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 3
    assert b"\x1b" not in proc.stdout + proc.stderr
    assert b"fake/k[i=\\x1b]0;pwned" in proc.stderr and b"boom \\x1b[31mred" in proc.stderr
    report = json.loads((root / "run" / "report.json").read_text())
    assert report["cases"][0]["case_id"] == "fake/k[i=\x1b]0;pwned\x07\x1b[2J]"  # data kept exact


def test_output_keep_prunes_the_oldest_runs_and_nothing_else(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", GOOD_RUN, extra_toml="[output]\nkeep = 2\n")
    runs = root / ".tile" / "runs"
    runs.mkdir(parents=True)
    (runs / "notes").mkdir()  # not a run directory: never touched
    old = runs / "bench-20000101T000000Z-00000000"
    old.mkdir()
    (old / "events.jsonl").write_text("")
    for _ in range(3):
        assert tile("bench", cwd=root).returncode == 0
    kept = sorted(p.name for p in runs.iterdir())
    assert "notes" in kept and old.name not in kept
    assert len(kept) == 3  # notes + the two newest runs
    latest = (root / ".tile" / "latest").resolve()
    assert latest.name in kept


# Waits, after its plan, until the test opens the FIFO named by $KEEP_TEST_GATE and closes it.
GATED_RUN = """
hello(); plan(CASES)
if os.environ.get("KEEP_TEST_GATE"):
    with open(os.environ["KEEP_TEST_GATE"]) as gate:
        gate.read()
for i, case in enumerate(CASES):
    start(case, i); bench(case)
done()
"""


def test_output_keep_leaves_a_run_that_is_still_going_alone(tile: TileRun, tmp_path: Path) -> None:
    # Two overlapping `tile bench` in one project: the second used to prune the first's
    # directory while it was being written; the first then passed and failed schema-check.
    root = fake_project(tmp_path / "p", GATED_RUN, extra_toml="[output]\nkeep = 1\n")
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    first = subprocess.Popen(
        tile_argv("bench", "--json"), cwd=root, env=tile_env({"KEEP_TEST_GATE": str(gate)}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert first.stdout is not None
    try:
        # `--json` writes the plan once it is on disk: the first run is under way (or, if
        # it died, this reads the end of its output and fails).
        assert first.stdout.readline().startswith('{"type":"hello"')
        assert first.stdout.readline().startswith('{"type":"plan"')
        assert tile("bench", cwd=root).returncode == 0
        with gate.open("w"):  # lets the first run's runner go on
            pass
        _, err = first.communicate(timeout=300)
    finally:
        first.kill()
        first.wait()
    assert first.returncode == 0, err
    runs = sorted((root / ".tile" / "runs").iterdir())
    assert len(runs) == 2  # the second run kept the first, which was still going
    for run in runs:
        assert_schema_valid(run)
