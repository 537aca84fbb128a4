"""Assemble report.json from a run's results, and close the run directory.

Each planned case becomes one record through tile-artifacts' typed converters, looked up by
case id in the results (no scan of every result per case).
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tile_harness._errors import USAGE_ERRORS
from tile_harness._undone import undone_reason
from tile_protocol import precision_on

if TYPE_CHECKING:
    import tile_artifacts as ta
    import tile_protocol as tp
    from tile_config import MachineConfig, ResolvedConfig
    from tile_harness._compare import CompareSettings
    from tile_harness._errors import CliError
    from tile_harness._results import RunResults
    from tile_harness._telemetry import ClockWatch

__all__ = [
    "RunSetup",
    "build_report",
    "case_counts",
    "case_records",
    "compare_run",
    "cases_status",
    "config_snapshots",
    "device_record",
    "write_final",
]


@dataclass(frozen=True)
class RunSetup:
    """What a run directory is made for: the command, its configuration, where it goes."""

    command: str
    resolved: ResolvedConfig
    writer: ta.ArtifactWriter
    run_dir: Path
    argv: list[str]
    paired_with: str | None = None
    """The run whose rounds took turns with this one's (`tile bench --against`)."""

    @property
    def run_id(self) -> str:
        return self.writer.run_id


def case_records(
    results: RunResults, *, interrupted: bool, only: Sequence[tp.CaseInfo] | None = None
) -> list[ta.CaseRecord]:
    """One record per planned case (or per case of `only`), in plan order."""
    from tile_harness._convert import case_record

    return [
        case_record(
            info,
            results.outcome(info.case_id),
            results.failure_of(info.case_id),
            interrupted=interrupted,
            invalid=info.case_id in results.invalid_cases,
        )
        for info in (results.planned if only is None else only)
    ]


def _run_status(
    results: RunResults, cases: list[ta.CaseRecord], interrupted: str | None, error: str | None
) -> tuple[ta.Status, str | None]:
    if interrupted is not None:
        return "interrupted", interrupted
    if error is not None:
        return "failed", error
    status, reason = _outcome(results, cases)
    # Work left undone is said with how much and why, whatever else the status says.
    undone = undone_reason(len(results.planned), results.failures)
    return status, "; ".join(r for r in (reason, undone) if r) or None


def _outcome(results: RunResults, cases: list[ta.CaseRecord]) -> tuple[ta.Status, str | None]:
    refused = next((f for f in results.failures if f.error_type in USAGE_ERRORS), None)
    if refused is not None:
        return "invalid", refused.message
    broken = [f for f in results.failures if f.case_id is None and f.status == "invalid"]
    if broken:  # the runner's stream itself broke the protocol: nothing in it is certain
        return "invalid", broken[0].message
    return cases_status(cases, more_failures=bool(results.failures))


def cases_status(
    cases: Sequence[ta.CaseRecord], *, more_failures: bool = False
) -> tuple[ta.Status, str | None]:
    """A run's status from its cases: every door (the `tile` command, tile-pytest) uses it.

    `more_failures`: something went wrong beside the cases (a runner crashed between them).
    """
    if not cases:
        return ("failed", "no case ran") if more_failures else ("skipped", "no case selected")
    good = sum(c.status == "success" for c in cases)
    if good == len(cases) and not more_failures:
        return "success", None
    if good == 0:
        timed = all(c.status == "timed_out" for c in cases)
        return ("timed_out" if timed else "failed"), f"none of the {len(cases)} cases succeeded"
    return "partial", f"{len(cases) - good} of {len(cases)} cases did not succeed"


def case_counts(cases: Sequence[ta.CaseRecord]) -> ta.Counts:
    """How many cases passed, failed (or timed out, or were invalid) and were skipped: the
    rule readers use when they merge a killed run's case log (`tile_artifacts.count_cases`)."""
    import tile_artifacts as ta

    return ta.count_cases(cases)


def _failures(results: RunResults, run_dir: Path) -> list[ta.FailureRecord]:
    from tile_harness._convert import failure_record

    records: list[ta.FailureRecord] = []
    for number, failure in enumerate(results.failures, start=1):
        launch = results.failure_launch.get(number)
        records.append(
            failure_record(
                number,
                failure,
                stderr_log=os.path.relpath(launch.stderr_log, run_dir) if launch else None,
                command_id=f"C{launch.index:03d}" if launch else None,
            )
        )
    return records


def _context(setup: RunSetup, results: RunResults) -> ta.Context:
    import tile_artifacts as ta

    hello = results.hello
    root = setup.resolved.project_root
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
        slurm_job_id=results.slurm_job_id or os.environ.get("SLURM_JOB_ID"),
        argv=list(setup.argv),
        seed=setup.resolved.config.test.seed,
        paired_with=setup.paired_with,
    )


def _device(setup: RunSetup, results: RunResults) -> ta.DeviceRecord:
    hello = results.hello
    return device_record(
        hello.backend if hello else None,
        hello.devices if hello else [],
        setup.resolved.config.machine,
    )


def device_record(
    backend: str | None, devices: Sequence[tp.DeviceInfo], machine: MachineConfig | None
) -> ta.DeviceRecord:
    """The report's device, from the devices a runner (or tile-pytest's process) described
    and the `[machine]` settings (None: none set): its peaks when set there, its L2 over the
    table's."""
    import tile_artifacts as ta

    first, m = (devices[0] if devices else None), machine
    peaks = ta.Peaks()
    if m is not None and (m.peak_bandwidth_gbps is not None or m.peak_tflops):
        peaks = ta.Peaks(bandwidth_gbps=m.peak_bandwidth_gbps, tflops=dict(m.peak_tflops),
                         source="config")  # fmt: skip
    return ta.DeviceRecord(
        backend=backend,
        device_kind=first.device_kind if first else None,
        model=first.model if first else None,
        count=len(devices) if backend is not None else None,
        memory_bytes=first.memory_bytes if first else None,
        l2_bytes=(m.l2_bytes if m else None) or (first.l2_bytes if first else None),
        peaks=peaks,
    )


def build_report(
    setup: RunSetup,
    results: RunResults,
    *,
    interrupted: str | None,
    error: str | None,
    cases: list[ta.CaseRecord] | None = None,
) -> ta.Report:
    """Everything the run measured, as a `tile.report` document (`cases`: records already
    built, one per planned case, as a checkpoint keeps them)."""
    import tile_artifacts as ta

    if cases is None:
        cases = case_records(results, interrupted=interrupted is not None)
    status, reason = _run_status(results, cases, interrupted, error)
    counts = case_counts(cases)
    metrics = [
        m for i, c in enumerate(cases) for m in ta.case_metrics(c, run_id=setup.run_id, index=i)
    ]
    headline = results.headline()
    config_file = setup.resolved.config_file
    return ta.Report(
        producer=setup.writer.producer,
        run=setup.writer.run_info(status, reason),
        context=_context(setup, results),
        configuration={
            "command": setup.command,
            "config_file": str(config_file) if config_file else None,
            "profile": setup.resolved.profile,
            # What the precision flags of summary.md are judged against: the runner's target.
            "target_precision": precision_on(
                setup.resolved.config.bench.target_precision,
                results.hello.backend if results.hello else None,
            ),
        },
        device=_device(setup, results),
        summary=ta.ReportSummary(
            title=f"tile {setup.command}",
            status=status,
            headline=headline,
            counts=counts,
            agent_summary=ta.AgentSummary(one_sentence=headline),
        ),
        cases=cases,
        metrics=metrics,
        diagnostics=[
            ta.Diagnostic(level=d.level, message=d.message, case_id=d.case_id, phase="runner")
            for d in results.diagnostics
        ],
        failures=_failures(results, setup.run_dir),
        findings=list(results.findings),
        timing=results.timing(),
    )


def compare_run(
    setup: RunSetup, results: RunResults, report: ta.Report, settings: CompareSettings | None
) -> tuple[ta.compare.ComparisonDoc | None, CliError | None]:
    """The run against its baseline when one is asked for, or why it could not be compared
    (said after the run directory is complete)."""
    from tile_harness._errors import CliError

    if settings is None:
        return None, None
    try:
        return _compare(setup, results, report, settings), None
    except CliError as exc:
        return None, exc


def _compare(
    setup: RunSetup, results: RunResults, report: ta.Report, settings: CompareSettings
) -> ta.compare.ComparisonDoc:
    """The run against its baseline (for comparisons.json). A filtered run is compared on the
    cases it selected: the baseline's others were not asked for, so they are not missing."""
    import tile_artifacts as ta
    from tile_harness._compare import load_side, pick_baseline

    base_file = pick_baseline(settings.path, report.device.device_kind)
    base, base_path = load_side(base_file)
    if results.filtered:
        planned = {c.case_id for c in results.planned}
        base = base.model_copy(update={"cases": [c for c in base.cases if c.case_id in planned]})
    comparison = ta.compare.compare_runs(
        base,
        report,
        noise_floor_pct=settings.noise_floor_pct,
        alpha=settings.alpha,
        basis=settings.basis,
        baseline_label=str(base_file),
        current_label=setup.run_id,
        baseline_path=str(base_path.absolute()),
        current_path="report.json",
    )
    return comparison


def config_snapshots(resolved: ResolvedConfig) -> list[ta.ConfigSnapshot]:
    """The configuration files a run directory holds (`_telemetry.write_snapshots` writes them)."""
    import tile_artifacts as ta

    snapshots = [ta.ConfigSnapshot(path="config/resolved_tool.json", kind="resolved_config")]
    if resolved.config_file is not None and resolved.raw_text is not None:
        snapshots.append(ta.ConfigSnapshot(path="config/tile.toml", kind="config_source",
                                           source_path=str(resolved.config_file)))  # fmt: skip
    return snapshots


def write_final(
    setup: RunSetup,
    results: RunResults,
    report: ta.Report,
    comparison: ta.compare.ComparisonDoc | None,
    clocks: ClockWatch | None = None,
) -> ta.Report:
    """Write comparisons.json, report.json with tile's findings, summary.md and the manifest
    last; return the report as written. Nothing is decided here."""
    import tile_artifacts as ta
    from tile_harness._findings import add_findings

    w = setup.writer
    # After the comparison: a regression is one of the findings.
    report = add_findings(report, comparison, resolved=setup.resolved, command=setup.command,
                          clocks=clocks)  # fmt: skip
    if comparison is not None:
        w.write_json("comparisons.json", comparison)
    w.write_json("report.json", report)
    w.write_summary(report, comparison)
    resolved = setup.resolved
    inputs = [ta.fingerprint_input(path, "download") for path in results.input_files.values()]
    if resolved.config_file is not None:
        inputs.append(ta.fingerprint_input(resolved.config_file, "config"))
    w.finalize(
        status=report.run.status,
        status_reason=report.run.status_reason,
        context=report.context,
        input_files=inputs,
        config_snapshots=config_snapshots(resolved),
    )
    return report
