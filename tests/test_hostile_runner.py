"""A hostile or broken runner (a fake executable per fault) gets a clear answer from `tile`.

Every run here must end with the right exit code, an `error:`/`hint:` pair where the run
cannot go on, no traceback, and a run directory that `tile schema-check` accepts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_runner import fake_project
from support import TileRun, assert_schema_valid

ALL1, ALL2 = "fake/k[i=1]", "fake/k[i=2]"


def _report(root: Path) -> dict[str, Any]:
    return json.loads((root / "run" / "report.json").read_text())


def _assert_valid(tile: TileRun, root: Path) -> None:
    assert_schema_valid(root / "run")


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text


def test_invalid_result_makes_its_case_invalid_and_the_run_goes_on(
    tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(
        tmp_path / "p",
        """
        hello(); plan()
        start(ALL[0]); bench(ALL[0])
        # parts that do not add up to their total: the model refuses the record
        start(ALL[1], 1)
        bench(ALL[1], accounting={"sample_s": 1.0, "total_s": 5.0})
        # a negative time: impossible, whatever the model says
        start(ALL[2], 2)
        bench(ALL[2], samples=[1e-3, -2e-3, 1e-3, 1e-3, 1e-3])
        done()
        """,
    )
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 3, proc.stderr
    _no_traceback(proc.stderr)
    report = _report(root)
    statuses = [c["status"] for c in report["cases"]]
    assert statuses == ["success", "invalid", "invalid"]
    assert report["cases"][0]["samples"]  # measured before the bad ones: kept
    failures = {f["case_id"]: f for f in report["failures"]}
    # The stream's validator (tile_cli/_boundary.py) drops both before the recorder sees them.
    assert failures[ALL1]["exception_type"] == "InvalidMessage"
    assert "accounting parts add up to 1 s, not total_s 5" in failures[ALL1]["message"]
    assert failures[ALL1]["status"] == "invalid"
    assert "sample 1 is -0.002 s; a time must be finite and positive" in failures[ALL2]["message"]
    assert report["summary"]["counts"]["failed"] == 2
    assert "fake/k" in proc.stdout  # the good case's table is printed
    _assert_valid(tile, root)


def test_deeply_nested_line_is_reported_and_the_case_still_counts(
    tile: TileRun, tmp_path: Path
) -> None:
    root = fake_project(
        tmp_path / "p",
        """
        hello(); plan([ALL[0]])
        send({"type": "case_start", "case_id": ALL[0], "index": 0, "total": 1})
        raw(b'{"type":"log","message":' + b"[" * 200000 + b"]" * 200000 + b"}\\n")
        bench(ALL[0]); done()
        """,
    )
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc.stderr)
    assert [c["status"] for c in _report(root)["cases"]] == ["success"]
    events = (root / "run" / "events.jsonl").read_text()
    assert "protocol_noise" in events and "nested deeper than 64 levels" in events
    _assert_valid(tile, root)


def test_newer_hello_of_another_shape_is_a_version_mismatch(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(
        tmp_path / "p",
        """
        send({"type": "hello", "protocol_version": 99, "runner": {"name": "future"}})
        time.sleep(60)  # the CLI must not wait for more
        """,
    )
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "error: the runner speaks tile protocol 99.0" in proc.stderr
    assert "hint: upgrade the CLI" in proc.stderr
    _no_traceback(proc.stderr)
    _assert_valid(tile, root)
