"""The history database on real files: layout, round trip, concurrent writers, bad files."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tile_artifacts as ta
from tile_report import SCHEMA_VERSION, GitInfo, History, HistoryError

GIT = GitInfo(commit="a" * 40, branch="main", dirty=False, commit_time="2026-01-02T03:04:05Z")
Reports = Callable[..., ta.Report]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def _report(make_case: Callable[..., ta.CaseRecord], make_report: Reports) -> Reports:
    """Three cases (one failed) at commit aaaa...; `_report(seed, device=...)`."""

    def build(seed: int = 0, **kwargs: object) -> ta.Report:
        cases = [
            make_case("k/a[n=1]", 1e-3, seed=seed),
            make_case("k/b[n=1]", 2e-3, seed=seed + 1),
            make_case("k/bad[n=1]", 3e-3, status="failed"),
        ]
        return make_report(cases, git_head="a" * 40, **kwargs)

    return build


def test_a_new_history_has_its_version_table_and_runs_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "history.sqlite"
    with History(path):
        pass
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_runs_go_in_once_with_only_their_measured_cases(tmp_path: Path, _report: Reports) -> None:
    report = _report()
    with History(tmp_path / "h.sqlite") as history:
        added = history.add_run(report, git=GIT, run_dir="/runs/1")
        again = history.add_run(report, git=GIT)
        series = history.series()
        assert history.run_count() == 1
    assert (added.cases, added.already) == (2, False)
    assert (again.cases, again.already) == (0, True)
    assert sorted(s.case_id for s in series) == ["k/a[n=1]", "k/b[n=1]"]  # the failed one is not
    point = series[0].points[0]
    a = report.cases[0].stats
    assert a is not None
    assert (point.median_s, point.ci_low_s, point.ci_high_s) == (a.median, a.ci_low, a.ci_high)
    assert (point.commit, point.branch, point.dirty) == ("a" * 40, "main", False)
    assert (series[0].device_kind, series[0].timer, series[0].cold) == (
        "NVIDIA H200",
        "cupti",
        False,
    )


def test_the_view_gives_one_row_per_run_and_case(tmp_path: Path, _report: Reports) -> None:
    path = tmp_path / "h.sqlite"
    with History(path) as history:
        history.add_run(_report(), git=GIT)
        history.add_run(_report(seed=5), git=GIT)
    db = sqlite3.connect(path)
    rows = db.execute("SELECT case_id, git_commit, branch FROM history ORDER BY case_id").fetchall()
    db.close()
    assert rows == [("k/a[n=1]", "a" * 40, "main")] * 2 + [("k/b[n=1]", "a" * 40, "main")] * 2


def test_series_are_filtered_and_split_by_device(tmp_path: Path, _report: Reports) -> None:
    with History(tmp_path / "h.sqlite") as history:
        history.add_run(_report(), git=GIT)
        history.add_run(_report(device="NVIDIA A100"), git=GIT)
        assert len(history.series()) == 4
        assert {s.device_kind for s in history.series(device="NVIDIA A100")} == {"NVIDIA A100"}
        assert [s.case_id for s in history.series(filters=["k/b"], device="NVIDIA A100")] == [
            "k/b[n=1]"
        ]
        assert history.series(filters=["k/*"], branch="other") == []


_WRITER = textwrap.dedent(
    """
    import sys, time
    import tile_artifacts as ta
    from tile_report import GitInfo, History

    report = ta.read_report(sys.argv[2])
    while time.time() < float(sys.argv[3]):  # every writer opens the new file at once
        time.sleep(0.001)
    with History(sys.argv[1]) as history:
        history.add_run(report, git=GitInfo(commit=report.producer.git_head))
    """
)


def test_concurrent_writers_all_land_even_while_the_file_is_created(
    tmp_path: Path, _report: Reports
) -> None:
    path = tmp_path / "h.sqlite"
    files: list[Path] = []
    for i in range(8):
        target = tmp_path / f"r{i}.json"
        target.write_text(_report(seed=i).model_dump_json())
        files.append(target)
    # Opening together is the hard case: SQLite answers a switch to WAL that meets another
    # opener's with "locked" at once (1 run in 15 of 10 openers failed so before the retry).
    start = str(time.time() + 2.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(f), start], stderr=subprocess.PIPE
        )
        for f in files
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    with History(path) as history:
        assert history.run_count() == 8
        assert {len(s.points) for s in history.series()} == {8}


def test_garbage_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is not a database\n" * 200)
    before = _digest(path)
    with pytest.raises(HistoryError) as info:
        History(path)
    assert "not a readable tile run history" in info.value.message
    assert info.value.hint and "mv " in info.value.hint
    assert _digest(path) == before


def test_a_damaged_page_is_refused_and_left_as_it_is(tmp_path: Path, _report: Reports) -> None:
    path = tmp_path / "h.sqlite"
    with History(path) as history:
        for seed in range(40):
            history.add_run(_report(seed=seed), git=GIT)
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[2 * page : len(data) - page] = b"\xff" * (len(data) - 3 * page)
    path.write_bytes(bytes(data))
    before = _digest(path)
    with pytest.raises(HistoryError) as info, History(path) as history:
        history.series()
        history.add_run(_report(seed=99), git=GIT)
    assert "not a readable tile run history" in info.value.message
    assert _digest(path) == before


def test_a_newer_schema_is_refused_and_left_as_it_is(tmp_path: Path, _report: Reports) -> None:
    path = tmp_path / "h.sqlite"
    with History(path) as history:
        history.add_run(_report(), git=GIT)
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    before = _digest(path)
    with pytest.raises(HistoryError) as info:
        History(path)
    assert f"schema {SCHEMA_VERSION + 1}, newer than" in info.value.message
    assert info.value.hint and "upgrade" in info.value.hint
    assert _digest(path) == before


def test_another_programs_database_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('keep me')")
    db.commit()
    db.close()
    before = _digest(path)
    with pytest.raises(HistoryError) as info:
        History(path)
    assert "not a tile run history" in info.value.message
    assert _digest(path) == before


def test_a_missing_history_is_an_error_when_reading(tmp_path: Path) -> None:
    with pytest.raises(HistoryError) as info:
        History(tmp_path / "none.sqlite", create=False)
    assert info.value.hint and "tile history add" in info.value.hint
    assert not (tmp_path / "none.sqlite").exists()


def test_a_directory_in_the_way_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError) as info:
        History(tmp_path)
    assert str(tmp_path) in info.value.message


@pytest.mark.parametrize("median", ["'fast'", "-0.001", "0"])
def test_a_hand_edited_median_is_refused_not_drawn(
    tmp_path: Path, _report: Reports, median: str
) -> None:
    """Issue 39, item 11: a string median ended `history show` in a TypeError, and a negative
    one was drawn as a time."""
    path = tmp_path / "h.sqlite"
    with History(path) as history:
        history.add_run(_report(), git=GIT)
    db = sqlite3.connect(path)
    db.execute(f"UPDATE results SET median_s = {median} WHERE case_id = 'k/a[n=1]'")
    db.commit()
    db.close()
    with History(path) as history, pytest.raises(HistoryError) as info:
        history.series()
    assert "k/a[n=1]" in info.value.message and "not a positive time" in info.value.message


def test_a_dropped_results_table_is_refused_not_already_there(
    tmp_path: Path, _report: Reports
) -> None:
    """Issue 39, item 11: with `results` dropped, adding a run said it was already there."""
    path = tmp_path / "h.sqlite"
    with History(path) as history:
        history.add_run(_report(), git=GIT)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE results")
    db.commit()
    db.close()
    before = _digest(path)
    with pytest.raises(HistoryError) as info:
        History(path)
    assert "`results` table is missing" in info.value.message
    assert _digest(path) == before
