"""The history keeps the configuration each case ran with (issue 34): a point shows it, a point
whose values differ from the one before is marked, a step there says so, and a row a hand
edit broke is refused, not shown."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import tile_artifacts as ta
from tile_report import (
    GitInfo,
    History,
    HistoryError,
    RunConfig,
    config_changes,
    config_text,
    step_config_change,
    trends,
)
from tile_report._trend import trend_plot

Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]
CASE = "k/a[n=1]"


def _git(i: int) -> GitInfo:
    return GitInfo(commit=f"{i:x}" * 40, branch="main", dirty=False,
                   commit_time=f"2026-01-0{i + 1}T00:00:00Z", subject=f"change {i}")  # fmt: skip


def _config(block: str, source: str = "default") -> ta.ConfigRecord:
    return ta.ConfigRecord.model_validate({"values": {"block": block}, "source": source})


def _fill(path: Path, make_case: Cases, make_report: Reports,
          runs: Sequence[tuple[float, ta.ConfigRecord | None]]) -> None:  # fmt: skip
    """One run per commit, of CASE at its median with its configuration."""
    with History(path) as history:
        for i, (median, config) in enumerate(runs):
            case = make_case(CASE, median, seed=i).model_copy(update={"config": config})
            history.add_run(make_report([case], git_head=_git(i).commit), git=_git(i))


def test_a_step_at_a_configuration_change_says_so(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    two, four = _config("2"), _config("4", "override")
    path = tmp_path / "h.sqlite"
    _fill(path, make_case, make_report, [(1e-3, two)] * 3 + [(1.5e-3, four)] * 3)
    with History(path) as history:
        [trend] = trends(history.series())
    points = trend.fit.points
    assert points[0].runs[0].config == RunConfig({"block": "2"}, "default")
    assert [config_text(p) for p in points] == ["block=2 (default)"] * 3 + [
        "block=4 (--tunable)"] * 3  # fmt: skip
    changed = "configuration changed: block=2 -> block=4"
    assert config_changes(trend.fit) == {3: changed}
    [step] = trend.fit.steps
    assert (step.index, step.kind) == (3, "regression")
    assert step_config_change(trend.fit, step) == changed
    # The HTML trend names each point's configuration and the change at the step.
    svg = trend_plot(trend.fit, "t", title=CASE)
    assert svg is not None and "config block=4 (--tunable)" in svg
    assert "configuration changed: block=2 -&gt; block=4" in svg


def test_the_source_alone_or_an_unrecorded_side_is_no_change(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    path = tmp_path / "h.sqlite"
    # Recorded before the history kept configurations (None), then default, then a tuning
    # file naming the same values: nothing is said to have changed.
    runs = [(1e-3, None), (1e-3, _config("2")), (1e-3, _config("2", "tuned"))]
    _fill(path, make_case, make_report, runs)
    with History(path) as history:
        [trend] = trends(history.series())
    assert [config_text(p) for p in trend.fit.points] == [
        "-", "block=2 (default)", "block=2 (project tuning)"]  # fmt: skip
    assert config_changes(trend.fit) == {}


def test_a_hand_edited_configuration_is_refused_naming_the_row(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    path = tmp_path / "h.sqlite"
    _fill(path, make_case, make_report, [(1e-3, _config("2"))])
    db = sqlite3.connect(path)
    db.execute("""UPDATE results SET config = '{"values": {"block": 2}}'""")
    db.commit()
    db.close()
    with History(path) as history, pytest.raises(HistoryError) as info:
        history.series()
    assert f"case `{CASE}` has config" in info.value.message
    assert "left as it is" in info.value.message and info.value.hint


def test_runs_of_two_configurations_at_one_commit_show_both(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    path = tmp_path / "h.sqlite"
    _fill(path, make_case, make_report, [(1e-3, _config("2"))])
    with History(path) as history:  # commit 1, run twice: once as before, once with block=4
        for seed, block in ((1, "2"), (2, "4")):
            case = make_case(CASE, 1e-3, seed=seed).model_copy(update={"config": _config(block)})
            history.add_run(make_report([case], git_head=_git(1).commit), git=_git(1))
        [trend] = trends(history.series())
    _, second = trend.fit.points
    assert len(second.runs) == 2
    assert config_text(second) == "block=2 (default) · block=4 (default)"
    assert config_changes(trend.fit) == {1: "configuration changed: block=2 -> block=2 / block=4"}
