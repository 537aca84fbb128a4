"""The sinks in front of a run's recorder: results checked once, then recorded, then `--json`.

A real `RunRecorder` on a real run directory; the `--json` stream is a binary stream that looks
at the directory each time a line is written to it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import QuietDisplay, RunRecorder, open_run, recording, resolve_config

_DEVICE = tp.DeviceInfo(id=0, platform="cpu", device_kind="cpu")
GOOD, BAD = "s/k[n=1]", "s/k[n=2]"


def _result(case_id: str, samples: list[float]) -> tp.BenchResult:
    lo, hi, mid = min(samples), max(samples), sorted(samples)[len(samples) // 2]
    stats = tp.Stats(n=len(samples), min=lo, max=hi, mean=mid, median=mid, stdev=1e-6,
                     mad=1e-6, q1=lo, q3=hi, p5=lo, p95=hi)  # fmt: skip
    return tp.BenchResult(case_id=case_id, kernel="s/k", params={"n": case_id[-2]},
                          timer="wall", samples=samples, stats=stats)  # fmt: skip


class _Watching(io.BytesIO):
    """A `--json` stream that notes, for each result line, whether its case was on disk."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.on_disk: dict[str, bool] = {}

    def write(self, data: bytes, /) -> int:  # type: ignore[override]
        message = json.loads(data)
        if message["type"] in ("bench_result", "failure"):
            report = ta.read_report(self.run_dir / ta.REPORT_JSON)
            done = {c.case_id for c in report.cases if c.status != "incomplete"}
            self.on_disk[message["case_id"]] = message["case_id"] in done
        return super().write(data)


def _run(tmp_path: Path) -> tuple[RunRecorder, _Watching]:
    out = tmp_path / "run"
    setup = open_run("bench", resolve_config(None, {}, cwd=tmp_path), out, ["tile", "bench"])
    recorder = RunRecorder(setup, ui=QuietDisplay())
    stream = _Watching(out)
    sink = recording(recorder, json_lines=stream)
    sink.on_hello(tp.Hello(protocol_version=1, runner_version="test", python_version="3",
                           backend="cpu", devices=[_DEVICE]))  # fmt: skip
    cases = [tp.CaseInfo(case_id=c, kernel="s/k", params={"n": c[-2]}) for c in (GOOD, BAD)]
    sink.on_plan(tp.Plan(command="bench", cases=cases))
    for index, case_id in enumerate((GOOD, BAD)):
        sink.on_case_start(tp.CaseStart(case_id=case_id, index=index, total=2))
    sink.on_message(_result(GOOD, [1e-3 + k * 1e-6 for k in range(8)]))
    sink.on_message(_result(BAD, [-1e-3 + k * 1e-6 for k in range(8)]))  # negative times
    return recorder, stream


def test_json_lines_carry_what_was_recorded_after_it_was_recorded(tmp_path: Path) -> None:
    recorder, stream = _run(tmp_path)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [m["type"] for m in lines] == [
        "hello", "plan", "case_start", "case_start", "bench_result", "failure",
    ]  # fmt: skip
    # The invalid result reaches the stream as the failure the recorder kept, not as itself.
    failure = lines[-1]
    assert failure["case_id"] == BAD and failure["status"] == "invalid"
    assert [f.case_id for f in recorder.results.failures] == [BAD]
    assert stream.on_disk == {GOOD: True, BAD: True}


def test_without_json_nothing_is_written_and_the_result_is_still_checked(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = tmp_path / "run"
    setup = open_run("bench", resolve_config(None, {}, cwd=tmp_path), out, ["tile", "bench"])
    recorder = RunRecorder(setup, ui=QuietDisplay())
    sink = recording(recorder)
    sink.on_plan(tp.Plan(command="bench", cases=[tp.CaseInfo(case_id=BAD, kernel="s/k")]))
    sink.on_message(_result(BAD, [-1e-3 + k * 1e-6 for k in range(8)]))
    assert [f.status for f in recorder.results.failures] == ["invalid"]
    assert capsysbinary.readouterr().out == b""
