"""The runner's pipe is a trust boundary (issue #24), tried with a runner executable that
breaks the protocol on purpose (fixtures/fake_runner.py): every bad message is caught where
the stream is read, what was valid is kept, the run directory stays schema-valid, and a run
with work undone never exits 0."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, TileRun

A, B, C = "fake/a[n=1]", "fake/b[n=1]", "fake/c[n=1]"


def fake_project(tmp_path: Path, scenario: str) -> Path:
    """A project whose `[runner] python` is the fake runner, playing `scenario`."""
    root = tmp_path / f"proj-{scenario}"
    root.mkdir()
    wrapper = root / "fake-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIXTURES / "fake_runner.py"}"\n')
    wrapper.chmod(0o755)
    (root / "tile.toml").write_text(
        f'[runner]\npython = "{wrapper}"\ncase_timeout = 60\n'
        f'[runner.env]\nFAKE_SCENARIO = "{scenario}"\n'
        "[history]\nenabled = false\n"
    )
    return root


def report_of(root: Path) -> dict[str, Any]:
    return json.loads((root / ".tile" / "latest" / "report.json").read_text())


def cases_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["case_id"]: c for c in report["cases"]}


def assert_clean_exit(proc: Any, code: int, tile: TileRun, root: Path) -> None:
    """The exit code, no traceback, and a run directory `tile schema-check` accepts."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    check = tile("schema-check", str(root / ".tile" / "latest"), cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(
    ("scenario", "why"),
    [
        ("negative_sample", "runner sent an invalid bench_result: sample 1 is -2.0 s"),
        ("bad_round_sizes", "runner sent an invalid bench_result: round_sizes [1, 1]"),
        ("ref_mismatch", "2 interleaved reference samples for 3 samples"),
    ],
)
def test_an_impossible_result_marks_its_case_invalid_and_keeps_the_others(
    scenario: str, why: str, tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path, scenario)
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    assert why in proc.stderr
    assert "-2.00 s" not in proc.stdout  # never shown as a passing time
    report = report_of(root)
    cases = cases_of(report)
    assert cases[B]["status"] == "invalid" and cases[B]["samples"] == []
    for kept in (A, C):
        assert cases[kept]["status"] == "success" and len(cases[kept]["samples"]) == 3
    (failure,) = report["failures"]
    assert failure["case_id"] == B and failure["status"] == "invalid"
    assert failure["phase"] == "protocol" and why in failure["message"]
    assert report["summary"]["counts"] == {"cases": 3, "passed": 2, "failed": 1, "skipped": 0}
    assert "error: 1 of 3 cases are invalid" in proc.stderr


def test_a_second_result_for_a_case_is_not_believed(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "two_results")
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    assert f"case `{B}` already has its result; at most one per case" in proc.stderr
    assert "3 cases, 3 ok" in proc.stderr  # one result each, not "2 ok" for one case
    cases = cases_of(report_of(root))
    assert cases[B]["status"] == "invalid"
    assert cases[B]["samples"] == [1.0e-3, 1.1e-3, 0.9e-3]  # the first, valid one is kept
    assert cases[A]["status"] == cases[C]["status"] == "success"


def test_a_stream_without_hello_is_refused(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "no_hello")
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    assert "runner sent an invalid plan: it came before `hello`" in proc.stderr
    report = report_of(root)
    assert report["run"]["status"] == "invalid"
    assert report["cases"] == []  # nothing it said was believed


def test_a_result_for_an_unplanned_case_spoils_the_run_not_the_cases(
    tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path, "unplanned_case")
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    assert "case `fake/zzz[n=1]` is not in the plan" in proc.stderr
    report = report_of(root)
    assert report["run"]["status"] == "invalid"
    assert {c["status"] for c in report["cases"]} == {"success"}


def test_a_message_after_done_breaks_the_rules(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "after_done")
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    assert "runner sent an invalid log: it came after `done`" in proc.stderr
    assert {c["status"] for c in report_of(root)["cases"]} == {"success"}


@pytest.mark.parametrize("scenario", ["forged", "legacy", "good"])
def test_forged_lines_are_noise_and_older_runners_are_still_read(
    scenario: str, tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path, scenario)
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 0, tile, root)
    report = report_of(root)
    assert report["run"]["status"] == "success" and report["failures"] == []
    cases = cases_of(report)
    assert cases[B]["samples"] == [1.0e-3, 1.1e-3, 0.9e-3]  # not the forged 9 s
    events = [
        json.loads(line)
        for line in (root / ".tile" / "latest" / "events.jsonl").read_text().splitlines()
    ]
    noise = [e["message"] for e in events if e["event"] == "protocol_noise"]
    if scenario != "forged":
        assert noise == []
        return
    assert len(noise) == 4
    assert all("message the runner did not send" in m for m in noise)
    assert any("does not carry the token" in m for m in noise)
    assert any("comes from pid" in m for m in noise)
    assert any("sequence number 1 does not follow" in m for m in noise)


@pytest.mark.parametrize(
    ("command", "args", "done"),
    [
        ("bench", (), 1),
        ("test", (), 1),
        ("build", (), 1),
        ("bench", ("--launcher", "local", "--shards", "2"), 0),
        ("test", ("--isolate",), 0),
    ],
)
def test_work_left_undone_never_exits_0(
    command: str, args: tuple[str, ...], done: int, tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path, "early_done")
    proc = tile(command, *args, cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    undone = 3 - done
    assert f"error: {undone} of 3 planned cases were not run" in proc.stderr
    assert "planned case" in proc.stderr and "got no result" in proc.stderr  # the early done
    report = report_of(root)
    statuses = [c["status"] for c in report["cases"]]
    assert statuses.count("success") == done and statuses.count("skipped") == undone
    not_run = [f for f in report["failures"] if f["exception_type"] == "NotRun"]
    assert len(not_run) == undone
    assert report["run"]["status"] == "invalid"


def test_snap_with_work_left_undone_exits_3(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "early_done")
    proc = tile("snap", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: 2 of 3 planned cases were not run" in proc.stderr
    assert len(list((root / "snapshots").glob("*.mlir"))) == 1  # the one case that was done


def test_tune_with_units_left_undone_exits_3(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "early_done")
    proc = tile("tune", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "planned cases were not run" in proc.stderr
    assert "fake/a[n=1]{t=2}" in proc.stderr or "t=2" in proc.stderr
