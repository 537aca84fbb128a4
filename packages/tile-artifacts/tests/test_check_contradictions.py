"""schema-check finds what a file says against itself or its neighbours, not only what its
hash says: a metric pointing where its value is not, summary.md that is not UTF-8, an exit
code that contradicts the status, and a key written twice in one JSON object (issue #39)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tile_artifacts.check import check_path

MakeRun = Callable[..., Path]


def _messages(run: Path) -> list[str]:
    # The manifest's size and hash catch any edit after the run; the checks below must not
    # lean on them (tile itself may write the contradiction).
    return [
        f"{p.file}: {p.message}" for p in check_path(run) if "artifact_manifest" not in p.message
    ]


def test_a_metric_that_points_where_its_value_is_not_is_named(make_run: MakeRun) -> None:
    run = make_run()
    lines = (run / "metrics.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["source"]["json_pointer"] = "/cases/99/stats/median"
    (run / "metrics.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    problems = _messages(run)
    assert any(
        m.startswith("metrics.jsonl: ") and "points to report.json#/cases/99/stats/median" in m
        for m in problems
    ), problems


def test_summary_md_must_be_utf8(make_run: MakeRun) -> None:
    run = make_run()
    with (run / "summary.md").open("ab") as f:
        f.write(b"\xff\xfe")
    assert any(m.startswith("summary.md: not UTF-8 text") for m in _messages(run))


def test_a_nonzero_exit_code_contradicts_a_success(make_run: MakeRun) -> None:
    run = make_run()
    report = json.loads((run / "report.json").read_text())
    report["summary"]["exit_code"] = 1
    (run / "report.json").write_text(json.dumps(report))
    assert any("summary.exit_code is 1 but run.status is `success`" in m for m in _messages(run))


def test_a_key_written_twice_is_refused(make_run: MakeRun) -> None:
    run = make_run()
    text = (run / "report.json").read_text()
    (run / "report.json").write_text(
        text.replace('"schema_name"', '"schema_name": "x", "schema_name"', 1)
    )
    assert "report.json: key `schema_name` is written twice in one object" in _messages(run)


def test_a_run_as_written_has_none_of_these(make_run: MakeRun) -> None:
    assert _messages(make_run()) == []
