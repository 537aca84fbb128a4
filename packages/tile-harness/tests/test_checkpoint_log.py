"""The case log and rare compactions: a run killed at any moment reads with every finished case,
and the whole report is rewritten O(log n) times over n cases, not n times.

Real run directories written by a real `RunRecorder`; the kills are real SIGKILLs of a
process feeding one. (Run as a script, this file is that process.)
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import QuietDisplay, RunRecorder, open_run, resolve_config

_DEVICE = tp.DeviceInfo(id=0, platform="cpu", device_kind="cpu")


def _stats(samples: list[float]) -> tp.Stats:
    lo, hi = min(samples), max(samples)
    mid = sorted(samples)[len(samples) // 2]
    return tp.Stats(n=len(samples), min=lo, max=hi, mean=mid, median=mid, stdev=1e-6,
                    mad=1e-6, q1=lo, q3=hi, p5=lo, p95=hi)  # fmt: skip


def _plan(n: int) -> list[tp.CaseInfo]:
    return [tp.CaseInfo(case_id=f"log/k[n={i}]", kernel="log/k", params={"n": str(i)})
            for i in range(n)]  # fmt: skip


def _start(project: Path, out: Path, n: int) -> tuple[RunRecorder, list[tp.CaseInfo]]:
    setup = open_run("bench", resolve_config(None, {}, cwd=project), out, ["tile", "bench"])
    recorder = RunRecorder(setup, ui=QuietDisplay())
    recorder.on_hello(tp.Hello(protocol_version=1, runner_version="test", python_version="3",
                               backend="cpu", devices=[_DEVICE]))  # fmt: skip
    cases = _plan(n)
    recorder.on_plan(tp.Plan(command="bench", cases=cases))
    return recorder, cases


def _feed(recorder: RunRecorder, info: tp.CaseInfo, i: int) -> None:
    """Case i: every 7th fails (with a warning before it), the others are measured."""
    recorder.on_case_start(tp.CaseStart(case_id=info.case_id, index=i, total=-1))
    if i % 7 == 6:
        recorder.on_message(tp.Log(level="warning", message=f"slow {i}", case_id=info.case_id))
        recorder.on_message(tp.Failure(case_id=info.case_id, phase="run",
                                       error_type="RuntimeError", message=f"boom {i}"))  # fmt: skip
        return
    samples = [1e-3 + i * 1e-6 + k * 1e-8 for k in range(8)]
    recorder.on_message(tp.BenchResult(case_id=info.case_id, kernel=info.kernel,
                                       params=dict(info.params), timer="wall", samples=samples,
                                       stats=_stats(samples)))  # fmt: skip


def _finished(report: ta.Report) -> set[str]:
    return {c.case_id for c in report.cases if c.status != "incomplete"}


def _metric_cases(out: Path) -> set[str]:
    lines = (out / ta.METRICS_JSONL).read_text().splitlines()
    return {json.loads(line)["case_id"] for line in lines}


def test_a_recorder_stopped_without_finalize_reads_with_every_finished_case(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    recorder, cases = _start(tmp_path, out, 60)
    for i, info in enumerate(cases[:45]):
        _feed(recorder, info, i)
    # Left as it is: what SIGKILL leaves after case 45 (the last compaction was at 32).
    assert ta.check.check_path(out) == []
    raw = ta.Report.model_validate_json((out / ta.REPORT_JSON).read_text())
    assert len(_finished(raw)) == 32  # report.json itself lags behind...
    report = ta.read_report(out / ta.REPORT_JSON)
    done = {c.case_id for c in cases[:45]}
    assert _finished(report) == done  # ...the reader does not
    assert _metric_cases(out) <= done
    failed = {c.case_id for i, c in enumerate(cases[:45]) if i % 7 == 6}
    assert {c.case_id for c in report.cases if c.status == "failed"} == failed
    assert {f.case_id for f in report.failures} == failed
    assert [d.message for d in report.diagnostics] == [f"slow {i}" for i in range(6, 45, 7)]
    counts = report.summary.counts
    assert (counts.cases, counts.passed, counts.failed) == (60, 45 - len(failed), len(failed))
    assert ta.load_document(out / ta.REPORT_JSON) == report


def test_the_merged_report_is_the_report_a_compaction_would_write(tmp_path: Path) -> None:
    out = tmp_path / "run"
    recorder, cases = _start(tmp_path, out, 30)
    for i, info in enumerate(cases[:27]):
        _feed(recorder, info, i)
    merged = ta.read_report(out / ta.REPORT_JSON)
    recorder.checkpoints.compact()
    written = ta.read_report(out / ta.REPORT_JSON)
    for key in ("cases", "failures", "diagnostics", "findings"):
        assert getattr(merged, key) == getattr(written, key), key
    assert merged.summary.counts == written.summary.counts
    assert sorted(merged.metrics, key=repr) == sorted(written.metrics, key=repr)


@pytest.mark.parametrize("n", [100, 300])
def test_the_report_is_rewritten_log_n_times_over_n_cases(tmp_path: Path, n: int) -> None:
    recorder, cases = _start(tmp_path, tmp_path / "run", n)
    for i, info in enumerate(cases):
        _feed(recorder, info, i)
    # At the start, at the plan, then at 1, 2, 4, ... finished cases.
    assert recorder.checkpoints.compactions == 2 + n.bit_length()
    log = ta.read_case_log(tmp_path / "run" / ta.CASES_JSONL)
    assert [line.case.case_id for line in log] == [c.case_id for c in cases]
    recorder.finalize()
    assert ta.check.check_path(tmp_path / "run") == []
    manifest = ta.read_manifest(tmp_path / "run" / ta.MANIFEST_JSON)
    assert ta.CASES_JSONL in {a.path for a in manifest.artifacts}  # the log stays, listed


def test_the_old_rule_rewrites_after_every_case(tmp_path: Path) -> None:
    recorder, _ = _start(tmp_path, tmp_path / "run", 0)  # compacted once: an empty plan
    recorder.checkpoints.every_case = True  # the rule before the case log
    cases = _plan(20)
    recorder.on_plan(tp.Plan(command="bench", cases=cases))
    for i, info in enumerate(cases):
        _feed(recorder, info, i)
    assert recorder.checkpoints.compactions == 1 + 1 + 20


def test_a_damaged_case_log_line_is_named_with_its_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    recorder, cases = _start(tmp_path, out, 10)
    for i, info in enumerate(cases[:6]):
        _feed(recorder, info, i)
    log = out / ta.CASES_JSONL
    lines = log.read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace('"samples":[', '"samples":["fast",', 1)
    log.write_text("".join(lines))
    problems = [str(p) for p in ta.check.check_path(out)]
    assert any(p.startswith("cases.jsonl:5: case.samples") for p in problems), problems
    with pytest.raises(ta.ArtifactReadError, match=r"cases\.jsonl:5"):
        ta.read_report(out / ta.REPORT_JSON)


def test_an_impossible_case_in_the_log_is_named_with_its_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    recorder, cases = _start(tmp_path, out, 10)
    for i, info in enumerate(cases[:6]):
        _feed(recorder, info, i)
    log = out / ta.CASES_JSONL
    lines = log.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace('"samples":[0.', '"samples":[-0.', 1)
    log.write_text("".join(lines))
    problems = [str(p) for p in ta.check.check_path(out)]
    assert any(p.startswith("cases.jsonl:6: case `log/k[n=5]`: samples") for p in problems), (
        problems
    )


# ---------------------------------------------------------------- real SIGKILLs


def _child(out: str, n: str) -> None:
    """Feed n cases into `out`, saying each on stdout once the recorder took it, until killed."""
    recorder, cases = _start(Path(out).parent, Path(out), int(n))
    for i, info in enumerate(cases):
        _feed(recorder, info, i)
        print(i, flush=True)
    print("end", flush=True)
    signal.pause()  # never finalized: the parent kills it


@pytest.mark.parametrize("moment", sorted(random.Random(39).sample(range(1, 120), 3)))
def test_sigkill_at_any_moment_leaves_every_finished_case(tmp_path: Path, moment: int) -> None:
    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, __file__, str(out), "120"],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None
    said = 0
    for line in child.stdout:
        said += line.strip() != "end"
        if said == moment:
            break
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)
    assert ta.check.check_path(out) == []
    report = ta.read_report(out / ta.REPORT_JSON)
    finished = _finished(report)
    assert {f"log/k[n={i}]" for i in range(moment)} <= finished
    assert _metric_cases(out) <= finished


if __name__ == "__main__":
    _child(*sys.argv[1:3])
