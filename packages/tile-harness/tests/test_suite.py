"""`Suite`, the run both `tile bench` and `tile_harness.run` go through: how a session's end,
interruption or failure leaves the run directory. Real directories; the sessions are small
stand-ins that feed the suite's sink as a runner would, then end one way or another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import CliError, ExitCode, QuietDisplay, Selection, Suite, resolve_config

CASE = "s/k[n=1]"


class _Session:
    """Plans one case, then ends as told: normally (the case never reported), on Ctrl-C, or
    with an error of its own."""

    def __init__(self, suite: Suite, ending: BaseException | None) -> None:
        self.suite, self.ending, self.stopped = suite, ending, False

    def run(self) -> bool:
        self.suite.sink.on_plan(tp.Plan(command="bench", cases=[tp.CaseInfo(case_id=CASE,
                                                                             kernel="s/k")]))  # fmt: skip
        if self.ending is not None:
            raise self.ending
        return True

    def stop(self) -> None:
        self.stopped = True


def _suite(tmp_path: Path) -> Suite:
    resolved = resolve_config(None, {}, cwd=tmp_path)
    return Suite("bench", resolved, Selection(case_ids=[CASE]), output_dir=tmp_path / "run",
                 argv=["tile", "bench"], display=QuietDisplay())  # fmt: skip


def _status(run_dir: Path) -> str:
    return json.loads((run_dir / ta.MANIFEST_JSON).read_text())["run"]["status"]


def test_a_session_that_ends_leaves_no_planned_case_unaccounted_for(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    assert suite.drive(_Session(suite, None)) is None
    [failure] = suite.recorder.results.failures
    assert failure.case_id == CASE and "no runner reported it" in failure.message
    finished = suite.finish(None)
    assert finished.outcome.code != 0
    assert ta.check.check_path(suite.run_dir) == []


def test_ctrl_c_stops_the_session_and_the_directory_is_finalized(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    session = _Session(suite, KeyboardInterrupt())
    assert suite.drive(session) == "interrupted by Ctrl-C"
    assert session.stopped
    suite.finish("interrupted by Ctrl-C")
    assert ta.check.check_path(suite.run_dir) == []
    assert _status(suite.run_dir) != "incomplete"


def test_an_error_in_the_session_finalizes_the_directory_then_goes_on_up(tmp_path: Path) -> None:
    # tile_harness.run used to leave the directory `incomplete` here (only the CLI finalized).
    suite = _suite(tmp_path)
    with pytest.raises(RuntimeError, match="launcher broke"):
        suite.drive(_Session(suite, RuntimeError("launcher broke")))
    assert ta.check.check_path(suite.run_dir) == []
    assert _status(suite.run_dir) == "failed"
    report = json.loads((suite.run_dir / ta.REPORT_JSON).read_text())
    assert "launcher broke" in json.dumps(report)


class _Built(_Session):
    """Plans one case of a build and reports it built."""

    def run(self) -> bool:
        plan = tp.Plan(command="build", cases=[tp.CaseInfo(case_id=CASE, kernel="s/k")])
        self.suite.sink.on_plan(plan)
        self.suite.sink.on_message(tp.BuildResult(case_id=CASE, kernel="s/k", ok=True))
        return True


def test_an_error_the_command_ends_with_is_the_outcome_its_report_states(tmp_path: Path) -> None:
    # `tile profile --ncu` whose counters are refused after every case built: the command
    # exits 2, and report.json must not say 0 (it did: the refusal came after the outcome).
    resolved = resolve_config(None, {}, cwd=tmp_path)
    suite = Suite("build", resolved, Selection(case_ids=[CASE]), output_dir=tmp_path / "run",
                  argv=["tile", "profile"], display=QuietDisplay())  # fmt: skip
    assert suite.drive(_Built(suite, None)) is None
    refused = CliError("ncu may not read the GPU's performance counters", code=ExitCode.USAGE)
    finished = suite.finish(None, refused=refused)
    assert finished.outcome.code == 2
    summary = json.loads((suite.run_dir / ta.REPORT_JSON).read_text())["summary"]
    assert summary["exit_code"] == 2 and "performance counters" in summary["exit_reason"]
    assert _status(suite.run_dir) != "success"
    assert ta.check.check_path(suite.run_dir) == []
