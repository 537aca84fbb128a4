"""Assemble report.json from what a recorder saw, and close the run directory."""

from __future__ import annotations

import os
import platform
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

import tile_protocol as tp
from tile_cli._errors import USAGE_ERRORS
from tile_cli._invalid import INVALID_RESULT
from tile_cli._undone import undone_reason

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_cli._compare import CompareSettings
    from tile_cli._record import RunRecorder

__all__ = [
    "Result",
    "build_report",
    "case_record",
    "config_snapshots",
    "result_record",
    "write_final",
]

# A protocol failure status as a case status in the report.
_CASE_STATUS = {"failed": "failed", "timed_out": "timed_out", "skipped": "skipped",
                "unsupported": "unsupported", "success": "failed",
                "invalid": "invalid"}  # fmt: skip
_TIMERS = ("cupti", "wall", "batched")
_PEAK_SOURCES = ("config", "builtin", "calibrated")


def _bench_case(result: tp.BenchResult) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(result)
    for key in ("type", "seed", "peak_memory_bytes", "pid", "seq", "token"):
        data.pop(key, None)
    # The runner says which table row it used (`builtin:NVIDIA H200`); the format keeps the kind.
    source = (data["roofline"].get("peak_source") or "").split(":")[0]
    data["roofline"]["peak_source"] = source if source in _PEAK_SOURCES else None
    if data["timer"] not in _TIMERS:
        data["timer"] = None
    ok = result.check is None or result.check.passed
    return {**data, "status": "success" if ok else "failed"}


Result = tp.BenchResult | tp.TestResult | tp.BuildResult


def result_record(info: tp.CaseInfo, result: Result) -> ta.CaseRecord:
    """The report's record of a case from the runner's result for it; ValueError (pydantic's
    ValidationError among them) when the result does not make a valid record."""
    import tile_artifacts as ta

    base: dict[str, Any] = {"case_id": info.case_id, "kernel": info.kernel, "params": info.params}
    if isinstance(result, tp.BenchResult):
        return ta.CaseRecord.model_validate(_bench_case(result))
    if isinstance(result, tp.TestResult):
        return ta.CaseRecord.model_validate(
            {
                **base,
                "check": msgspec.to_builtins(result.check),
                "status": "success" if result.check.passed else "failed",
                "accounting": msgspec.to_builtins(result.accounting) if result.accounting else None,
                "config": msgspec.to_builtins(result.config) if result.config else None,
            }
        )
    status = "success" if result.ok else "failed"
    phases = msgspec.to_builtins(result.phases)
    return ta.CaseRecord.model_validate({**base, "phases": phases, "status": status})


def case_record(info: tp.CaseInfo, rec: RunRecorder, *, interrupted: bool) -> ta.CaseRecord:
    """The report's record of one planned case, from whatever the runner said about it.

    A case the runner sent an invalid message about (tile_cli/_boundary.py) is `invalid`,
    with whatever valid result it had kept beside that status.
    """
    record = _case_record(info, rec, interrupted=interrupted)
    if any(f.case_id == info.case_id and f.status == "invalid" for f in rec.failures):
        return record.model_copy(update={"status": "invalid"})
    return record


def _case_record(info: tp.CaseInfo, rec: RunRecorder, *, interrupted: bool) -> ta.CaseRecord:
    import tile_artifacts as ta

    case_id = info.case_id
    base: dict[str, Any] = {"case_id": case_id, "kernel": info.kernel, "params": info.params}
    results: list[Result] = [*rec.bench_results, *rec.test_results, *rec.build_results]
    for result in results:
        if result.case_id == case_id:
            return result_record(info, result)
    if case_id in rec.invalid:
        return ta.CaseRecord.model_validate({**base, "status": "invalid"})
    for f in rec.failures:
        if f.case_id == case_id:
            return ta.CaseRecord.model_validate({**base, "status": _CASE_STATUS[f.status]})
    return ta.CaseRecord.model_validate(
        {**base, "status": "interrupted" if interrupted else "skipped"}
    )


def _run_status(
    rec: RunRecorder, cases: list[ta.CaseRecord], interrupted: str | None, error: str | None
) -> tuple[str, str | None]:
    if interrupted is not None:
        return "interrupted", interrupted
    if error is not None:
        return "failed", error
    status, reason = _outcome(rec, cases)
    # Work left undone is said with how much and why, whatever else the status says.
    undone = undone_reason(len(rec.planned), rec.failures)
    return status, "; ".join(r for r in (reason, undone) if r) or None


def _outcome(rec: RunRecorder, cases: list[ta.CaseRecord]) -> tuple[str, str | None]:
    refused = next((f for f in rec.failures if f.error_type in USAGE_ERRORS), None)
    if refused is not None:
        return "invalid", refused.message
    broken = [f for f in rec.failures if f.case_id is None and f.status == "invalid"]
    if broken:  # the runner's stream itself broke the protocol: nothing in it is certain
        return "invalid", broken[0].message
    if not cases:
        return ("failed", "no case ran") if rec.failures else ("skipped", "no case selected")
    good = sum(c.status == "success" for c in cases)
    if good == len(cases) and not rec.failures:
        return "success", None
    if good == 0:
        timed = all(c.status == "timed_out" for c in cases)
        return ("timed_out" if timed else "failed"), f"none of the {len(cases)} cases succeeded"
    return "partial", f"{len(cases) - good} of {len(cases)} cases did not succeed"


def _failures(rec: RunRecorder) -> list[ta.FailureRecord]:
    import tile_artifacts as ta

    records: list[ta.FailureRecord] = []
    for i, f in enumerate(rec.failures, start=1):
        launch = rec.failure_launch.get(i)
        excerpt = f.traceback[-ta.STDERR_EXCERPT_LIMIT :] if f.traceback else None
        records.append(
            ta.FailureRecord(
                failure_id=ta.failure_id(i),
                case_id=f.case_id,
                phase=f.phase,
                status="invalid"  # type: ignore[arg-type]
                if f.case_id in rec.invalid and f.error_type == INVALID_RESULT
                else _CASE_STATUS.get(f.status, "failed"),
                message=f.message,
                exception_type=f.error_type,
                stderr_excerpt=excerpt,
                stderr_log=os.path.relpath(launch.stderr_log, rec.run_dir) if launch else None,
                command_id=f"C{launch.index:03d}" if launch else None,
            )
        )
    return records


def _context(rec: RunRecorder) -> ta.Context:
    import tile_artifacts as ta

    hello = rec.hello
    root = rec.resolved.project_root
    return ta.Context(
        project_root=str(root) if root else None,
        cwd=str(Path.cwd()),
        hostname=socket.gethostname(),
        platform=platform.platform(),
        python=hello.python_version if hello else sys.version.split()[0],
        jax_version=hello.jax_version if hello else None,
        jaxlib_version=hello.jaxlib_version if hello else None,
        xla_flags=os.environ.get("XLA_FLAGS"),
        pinned_cpu=hello.pinned_cpu if hello else None,
        slurm_job_id=rec.slurm_job_id or os.environ.get("SLURM_JOB_ID"),
        argv=list(rec.argv),
        seed=rec.resolved.config.test.seed,
    )


def _device(rec: RunRecorder) -> ta.DeviceRecord:
    import tile_artifacts as ta

    hello = rec.hello
    first = hello.devices[0] if hello and hello.devices else None
    m = rec.resolved.config.machine
    peaks = ta.Peaks()
    if m.peak_bandwidth_gbps is not None or m.peak_tflops:
        peaks = ta.Peaks(bandwidth_gbps=m.peak_bandwidth_gbps, tflops=dict(m.peak_tflops),
                         source="config")  # fmt: skip
    return ta.DeviceRecord(
        backend=hello.backend if hello else None,
        device_kind=first.device_kind if first else None,
        count=len(hello.devices) if hello else None,
        memory_bytes=first.memory_bytes if first else None,
        peaks=peaks,
    )


def build_report(
    rec: RunRecorder,
    *,
    interrupted: str | None,
    error: str | None,
    cases: list[ta.CaseRecord] | None = None,
) -> ta.Report:
    """Everything the run measured, as a `tile.report` document (`cases`: records already
    built, one per planned case, as a checkpoint keeps them)."""
    import tile_artifacts as ta

    if cases is None:
        cases = [case_record(i, rec, interrupted=interrupted is not None) for i in rec.planned]
    status, reason = _run_status(rec, cases, interrupted, error)
    counts = ta.Counts(
        cases=len(cases),
        passed=sum(c.status == "success" for c in cases),
        failed=sum(c.status in ("failed", "timed_out", "invalid") for c in cases),
        skipped=sum(c.status in ("skipped", "interrupted", "unsupported") for c in cases),
    )
    metrics = [
        m for i, c in enumerate(cases) for m in ta.case_metrics(c, run_id=rec.run_id, index=i)
    ]
    headline = rec.headline()
    config_file = rec.resolved.config_file
    return ta.Report(
        producer=rec.writer.producer,
        run=rec.writer.run_info(status, reason),  # type: ignore[arg-type]
        context=_context(rec),
        configuration={
            "command": rec.command,
            "config_file": str(config_file) if config_file else None,
            "profile": rec.resolved.profile,
            # What the precision flags of summary.md are judged against.
            "target_precision": rec.resolved.config.bench.target_precision,
        },
        device=_device(rec),
        summary=ta.ReportSummary(
            title=f"tile {rec.command}",
            status=status,  # type: ignore[arg-type]
            headline=headline,
            counts=counts,
            agent_summary=ta.AgentSummary(one_sentence=headline),
        ),
        cases=cases,
        metrics=metrics,
        diagnostics=[
            ta.Diagnostic(level=d.level, message=d.message, case_id=d.case_id, phase="runner")
            for d in rec.diagnostics
        ],
        failures=_failures(rec),
        findings=list(rec.findings),
        timing=rec.timing(),
    )


def _compare(
    rec: RunRecorder, report: ta.Report, compare_with: CompareSettings
) -> ta.ComparisonDoc:
    """The run against its baseline. A filtered run is compared on the cases it selected: the
    baseline's others were not asked for, so they are not missing."""
    import tile_artifacts as ta
    from tile_cli._compare import load_side, pick_baseline

    base_file = pick_baseline(compare_with.path, report.device.device_kind)
    base, base_path = load_side(base_file)
    if rec.filtered:
        planned = {c.case_id for c in rec.planned}
        kept = [c for c in base.cases if c.case_id in planned]
        base = base.model_copy(update={"cases": kept})
    return ta.compare_runs(
        base,
        report,
        noise_floor_pct=compare_with.noise_floor_pct,
        alpha=compare_with.alpha,
        basis=compare_with.basis,
        baseline_label=str(base_file),
        current_label=rec.run_id,
        baseline_path=str(base_path.absolute()),
        current_path="report.json",
    )


def write_final(
    rec: RunRecorder,
    report: ta.Report,
    compare_with: CompareSettings | None,
    *,
    interrupted: str | None = None,
    judge: bool = False,
) -> tuple[ta.Report, ta.ComparisonDoc | None]:
    """Compare if asked, decide the outcome (`judge`), then write report.json, summary.md,
    comparisons.json and the manifest last; return the report as written.

    The outcome is decided before anything is written so that report.json and summary.md
    state the exit code the command leaves with. A baseline that cannot be used is raised
    only after the run directory is complete.
    """
    import tile_artifacts as ta
    from tile_cli._errors import CliError
    from tile_cli._findings import add_findings
    from tile_cli._outcome import Outcome, apply_outcome, run_outcome

    w = rec.writer
    comparison: ta.ComparisonDoc | None = None
    problem: CliError | None = None
    if compare_with is not None:
        try:
            comparison = _compare(rec, report, compare_with)
        except CliError as exc:
            problem = exc
    if judge:
        outcome = run_outcome(
            rec, interrupted=interrupted, comparison=comparison, settings=compare_with
        )
        if problem is not None and outcome.code == 0:
            outcome = Outcome(int(problem.code), problem.message)
        rec.outcome = outcome
        report = apply_outcome(report, outcome, comparison)
    # After the comparison: a regression is one of the findings.
    report = add_findings(rec, report, comparison)
    if comparison is not None:
        w.write_json("comparisons.json", comparison)
    w.write_json("report.json", report)
    w.write_summary(report, comparison)
    rec._event("info", "run", "run_finished", f"status {report.run.status}")
    snapshots = config_snapshots(rec)
    inputs = [ta.fingerprint_input(path, "download") for path in rec.input_files.values()]
    if rec.resolved.config_file is not None:
        inputs.append(ta.fingerprint_input(rec.resolved.config_file, "config"))
    w.finalize(
        status=report.run.status,
        status_reason=report.run.status_reason,
        context=report.context,
        input_files=inputs,
        config_snapshots=snapshots,
    )
    if problem is not None:
        raise problem
    return report, comparison


def config_snapshots(rec: RunRecorder) -> list[ta.ConfigSnapshot]:
    """The config files a run directory keeps: the resolved config, and tile.toml when read."""
    import tile_artifacts as ta

    snapshots = [ta.ConfigSnapshot(path="config/resolved_tool.json", kind="resolved_config")]
    if rec.resolved.config_file is not None and rec.resolved.raw_text is not None:
        snapshots.append(
            ta.ConfigSnapshot(
                path="config/tile.toml",
                kind="config_source",
                source_path=str(rec.resolved.config_file),
            )
        )
    return snapshots
