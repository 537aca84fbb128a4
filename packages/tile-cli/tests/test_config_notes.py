"""The lines under a table that say why a case ran the values it did: one per distinct note,
so a device a package ships no tuning for does not print one line per case."""

from __future__ import annotations

import tile_protocol as tp
from tile_cli.terminal._tables import config_notes

ELSEWHERE = "its package ships tuning for NVIDIA H100, none for cpu: the default runs"


def _result(case_id: str, note: str | None) -> tp.BenchResult:
    config = tp.ConfigInfo(values={"block_rows": "auto"}, note=note)
    stats = tp.Stats(n=3, min=1e-3, max=1e-3, mean=1e-3, median=1e-3, stdev=0.0, mad=0.0,
                     q1=1e-3, q3=1e-3, p5=1e-3, p95=1e-3)  # fmt: skip
    kernel = case_id.partition("[")[0]
    return tp.BenchResult(case_id=case_id, kernel=kernel, timer="wall", stats=stats, config=config)


def test_cases_that_share_a_note_share_one_line_naming_their_kernels() -> None:
    results = [
        _result("std/softmax[n=1]", ELSEWHERE),
        _result("std/rmsnorm[n=1]", ELSEWHERE),
        _result("std/softmax[n=2]", ELSEWHERE),
        _result("std/copy[n=1]", None),
        _result("fx/reps[n=512]", "reps=3 is ruled out by the constraint: reps=8 runs"),
    ]
    assert config_notes(results) == [
        f"* 3 cases of std/softmax, std/rmsnorm: {ELSEWHERE}",
        "* fx/reps[n=512]: reps=3 is ruled out by the constraint: reps=8 runs",
    ]


def test_a_run_without_notes_prints_none() -> None:
    assert config_notes([_result("std/copy[n=1]", None)]) == []
