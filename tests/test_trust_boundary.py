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
from support import FIXTURES, TileRun, assert_schema_valid

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
    assert_schema_valid(root / ".tile" / "latest")


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
    assert "3 cases, 2 ok, 1 failure" in proc.stderr  # b has a kept result but is not ok
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


@pytest.mark.parametrize(
    ("scenario", "why"),
    [
        ("after_done", "runner sent an invalid log: it came after `done`"),
        ("two_hellos", "runner sent an invalid hello: a second hello; a stream has exactly one"),
        ("case_before_plan", f"runner sent an invalid case_start: case `{A}` came before the plan"),
    ],
)
def test_a_message_out_of_order_spoils_the_run_and_keeps_every_result(
    scenario: str, why: str, tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path, scenario)
    proc = tile("bench", cwd=root)
    assert_clean_exit(proc, 3, tile, root)
    assert why in proc.stderr
    assert f"error: the runner's stream broke the protocol: {why}" in proc.stderr
    report = report_of(root)
    assert report["run"]["status"] == "invalid" and why in report["run"]["status_reason"]
    cases = cases_of(report)
    assert {c["status"] for c in cases.values()} == {"success"}
    assert all(c["samples"] == [1.0e-3, 1.1e-3, 0.9e-3] for c in cases.values())


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
    warned = "warning: lines the runner did not send reached its pipe" in proc.stderr
    assert warned is (scenario == "forged")
    if scenario != "forged":
        assert noise == []
        return
    assert len(noise) == 4
    assert all("message the runner did not send" in m for m in noise)
    assert any("does not carry the token" in m for m in noise)
    assert any("comes from pid" in m for m in noise)
    assert any("sequence number 1 does not follow" in m for m in noise)


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("bench", ()),
        ("test", ()),
        ("build", ()),
        ("bench", ("--launcher", "local", "--shards", "2")),
        ("test", ("--isolate",)),
    ],
)
def test_work_left_undone_never_exits_0(
    command: str, args: tuple[str, ...], tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(tmp_path, "early_done")
    proc = tile(command, *args, cwd=root)
    assert_undone(proc, command, tile, root)


@pytest.mark.slow
def test_work_left_undone_through_srun_exits_3(
    tile: TileRun, tmp_path: Path, slurm_gres: str
) -> None:
    root = fake_project(tmp_path, "early_done")
    with (root / "tile.toml").open("a") as toml:
        toml.write(f'[launcher]\ngres = "{slurm_gres}"\ntime_limit = "10"\n')
    # A busy or broken queue fails the test instead of hanging it.
    args = ("--launcher", "slurm", "--shards", "2", "--slurm-arg=--immediate=120")
    proc = tile("bench", *args, cwd=root, timeout=600)
    assert_undone(proc, "bench", tile, root)


def assert_undone(proc: Any, command: str, tile: TileRun, root: Path) -> None:
    """Case a was run, cases b and c were not: exit 3, and the run says how many and why."""
    assert_clean_exit(proc, 3, tile, root)
    # How many and why, on stderr and in the run directory.
    assert "error: 2 of 3 planned cases were not run (" in proc.stderr
    assert "planned case" in proc.stderr and "got no result" in proc.stderr  # the early done
    assert "RunnerCrash" not in proc.stderr  # case a was answered: nothing crashed on it
    report = report_of(root)
    assert report["run"]["status"] == "invalid"
    assert "2 of 3 planned cases were not run (" in report["run"]["status_reason"]
    summary = (root / ".tile" / "latest" / "summary.md").read_text()
    assert "2 of 3 planned cases were not run (" in summary
    cases = cases_of(report)
    assert cases[A]["status"] == "success"  # what was done is kept
    if command == "bench":
        assert cases[A]["samples"] == [1.0e-3, 1.1e-3, 0.9e-3]
    assert cases[B]["status"] == cases[C]["status"] == "skipped"
    not_run = [f["case_id"] for f in report["failures"] if f["exception_type"] == "NotRun"]
    assert sorted(not_run) == [B, C]


def test_snap_with_work_left_undone_exits_3(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "early_done")
    proc = tile("snap", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: 2 of 3 planned cases were not run" in proc.stderr
    assert "RunnerCrash" not in proc.stderr  # the early `done` ended case a, it did not crash
    (kept,) = (root / "snapshots").glob("*.mlir")  # the one case that was done
    assert kept.read_text().count("fake/a[n=1]") >= 1


def test_tune_with_units_left_undone_exits_3(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path, "early_done")
    proc = tile("tune", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: 1 of 2 planned cases were not run" in proc.stderr
    assert "got no result (first `fake/a[n=1]{t=2}`)" in proc.stderr
    assert "fake/a[n=1]: {t=1}" in proc.stdout + proc.stderr  # the unit that ran is kept
    assert_schema_valid(root / ".tile" / "latest")
