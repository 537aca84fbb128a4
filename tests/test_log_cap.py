"""A runner that floods its log is kept to a bound: each case keeps its first lines, the rest
are counted and said once, and events.jsonl stays the size of the bound (issue #39)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_runner import fake_project
from support import TileRun

from tile_harness._logcap import PER_CASE


def test_a_flooding_case_keeps_its_first_lines_and_says_how_many_went(
    tile: TileRun, tmp_path: Path
) -> None:
    flood = PER_CASE + 2500
    root = fake_project(
        tmp_path / "p",
        f"""
        hello(); plan()
        start(ALL[0])
        for i in range({flood}):
            send({{"type": "log", "level": "info", "message": f"line {{i}}", "case_id": ALL[0]}})
        bench(ALL[0])
        start(ALL[1], 1)
        send({{"type": "log", "level": "info", "message": "quiet", "case_id": ALL[1]}})
        bench(ALL[1])
        start(ALL[2], 2); bench(ALL[2])
        done()
        """,
    )
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in (root / "run" / "events.jsonl").read_text().splitlines()]
    logged = [e for e in events if e["event"] == "log"]
    first = [e for e in logged if e["fields"].get("case_id") == "fake/k[i=0]"]
    assert len(first) == PER_CASE and first[-1]["message"] == f"line {PER_CASE - 1}"
    assert [e["message"] for e in logged if e["fields"].get("case_id") == "fake/k[i=1]"] == [
        "quiet"
    ]
    (dropped,) = [e for e in events if e["event"] == "log_dropped"]
    assert dropped["fields"]["dropped"] == 2500 and dropped["fields"]["case_id"] == "fake/k[i=0]"
    assert "2500 log line(s) of case `fake/k[i=0]` dropped" in dropped["message"]
    assert "2500 log line(s) of case `fake/k[i=0]` dropped" in proc.stderr
    check = tile("schema-check", str(root / "run"), cwd=root)
    assert check.returncode == 0, check.stdout
