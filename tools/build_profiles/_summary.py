"""The profiles as an Artifact Format v1 report (`summary.json`) and a side-by-side table.

A report, not a new document type: `tile schema-check summary.json` validates it, and each
profile is a case (`tiny[profile=release]`) whose figures are metric records.
"""

from __future__ import annotations

import platform
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from pydantic import JsonValue

import tile_artifacts as ta
from tile_protocol.format import format_seconds
from tools.build_profiles._measure import ProfileResult
from tools.build_profiles._target import Target

__all__ = ["METRICS", "build_report", "render_markdown", "run_status"]

# metric name, unit, row title in summary.md, attribute of ProfileResult
METRICS: Final[tuple[tuple[str, ta.Unit, str, str], ...]] = (
    ("clean_build_s", "s", "clean build", "clean_build_s"),
    ("noop_rebuild_s", "s", "no-op rebuild", "noop_rebuild_s"),
    ("incremental_rebuild_s", "s", "rebuild after touching {touch}", "incremental_rebuild_s"),
    ("extension_bytes", "bytes", "extension size", "extension_bytes"),
    ("extension_stripped_bytes", "bytes", "extension size, stripped", "extension_stripped_bytes"),
    ("import_s", "s", "`import {module}` (median of {runs})", "import_s"),
    ("engine_s", "s", "engine: `{speed}` ({key}, best of its repeats)", "engine_s"),
)
_AGGREGATION: Final[dict[str, ta.Aggregation]] = {"import_s": "median", "engine_s": "min"}


def run_status(results: Sequence[ProfileResult]) -> ta.Status:
    """success when every profile measured, partial when some did, failed when none did."""
    good = sum(r.ok for r in results)
    return "success" if good == len(results) else "partial" if good else "failed"


def case_id(target: Target, label: str) -> str:
    """A profile's case id, e.g. `tile-stats[profile=release]`."""
    return f"{target.name}[profile={label}]"


def _metrics(
    target: Target, results: Sequence[ProfileResult], run_id: str
) -> list[ta.MetricRecord]:
    records: list[ta.MetricRecord] = []
    for index, result in enumerate(results):
        for name, unit, _, attribute in METRICS:
            value = getattr(result, attribute)
            records.append(
                ta.MetricRecord(
                    run_id=run_id,
                    case_id=case_id(target, result.label),
                    metric_name=name,
                    value=None if value is None else float(value),
                    unit=unit,
                    aggregation=_AGGREGATION.get(name, "exact"),
                    higher_is_better=False,
                    dimensions={"profile": result.label, "target": target.name},
                    source=ta.MetricSource(
                        artifact_path="summary.json", json_pointer=f"/cases/{index}"
                    ),
                )
            )
    return records


def _failures(target: Target, results: Sequence[ProfileResult]) -> list[ta.FailureRecord]:
    failures: list[ta.FailureRecord] = []
    for result in results:
        if result.failure is None:
            continue
        failures.append(
            ta.FailureRecord(
                failure_id=ta.failure_id(len(failures) + 1),
                case_id=case_id(target, result.label),
                phase=result.failed_step or "build",
                status="timed_out" if "timed out" in result.failure else "failed",
                message=result.failure,
                stderr_excerpt=result.stderr_tail,
                command_id=result.failed_command,
                stderr_log=result.failed_log,
            )
        )
    return failures


def _reason(status: ta.Status, failures: Sequence[ta.FailureRecord]) -> str | None:
    if status == "interrupted":
        return "stopped by Ctrl-C before every profile was measured"
    if failures:
        return "; ".join(f"{f.case_id}: {f.message}" for f in failures)
    return None


def build_report(
    writer: ta.ArtifactWriter,
    target: Target,
    results: Sequence[ProfileResult],
    configuration: dict[str, JsonValue],
    *,
    interrupted: bool = False,
) -> ta.Report:
    """The whole run as a `tile.report`: one case per profile, figures as metric records."""
    status: ta.Status = "interrupted" if interrupted else run_status(results)
    good = [r for r in results if r.ok]
    failures = _failures(target, results)
    labels = ", ".join(r.label for r in results)
    headline = f"{len(good)} of {len(results)} Cargo profiles of {target.name} measured ({labels})"
    cases = [
        ta.CaseRecord(
            case_id=case_id(target, r.label),
            kernel=f"build-profiles/{target.name}",
            params={"profile": r.label, "target_dir": str(r.target_dir)},
            status="success" if r.ok else "failed",
        )
        for r in results
    ]
    return ta.Report(
        producer=writer.producer,
        run=writer.run_info(status, _reason(status, failures)),
        context=ta.Context(
            project_root=str(target.root),
            cwd=str(Path.cwd()),
            hostname=socket.gethostname(),
            platform=platform.platform(),
            python=platform.python_version(),
            argv=list(sys.argv),
        ),
        configuration=configuration,
        summary=ta.ReportSummary(
            title=f"Rust build profiles: {target.name}",
            status=status,
            headline=headline,
            primary_metric="clean_build_s",
            counts=ta.Counts(cases=len(results), passed=len(good), failed=len(results) - len(good)),
        ),
        cases=cases,
        metrics=_metrics(target, results, writer.run_id),
        failures=failures,
    )


def _bytes(value: float | None) -> str:
    if value is None:
        return "—"
    for unit in ("B", "KiB", "MiB"):
        if value < 1024 or unit == "MiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def render_markdown(target: Target, report: ta.Report, results: Sequence[ProfileResult]) -> str:
    """`summary.md`: the profiles side by side, then failures and where the logs are."""
    module = target.import_name
    speed = " ".join([target.speed_script.name, *target.speed_args])
    runs = max((len(r.import_samples) for r in results), default=0)
    lines = [
        f"# {report.summary.title}",
        "",
        f"Status: **{report.run.status}**. {report.summary.headline}.",
        "",
        "| | " + " | ".join(f"`{r.label}`" for r in results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    touch = (
        target.touch.relative_to(target.root)
        if target.touch.is_relative_to(target.root)
        else target.touch
    )
    for _, unit, title, attribute in METRICS:
        show: Callable[[float | None], str] = _bytes if unit == "bytes" else format_seconds
        row = title.format(
            touch=f"`{touch}`", module=module, runs=runs, speed=speed, key=target.speed_key
        )
        cells = [show(getattr(r, attribute)) for r in results]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    config = report.configuration
    lines += [
        "",
        f"Each profile builds `{target.package}` from `{target.manifest.name}` into its own "
        f"`--target-dir` ({config.get('target_root')}/<label>/). Times are wall-clock seconds "
        f"of one run each on {config.get('cpus')} CPU(s); {config.get('cargo')}, "
        f"{config.get('rustc')}.",
    ]
    if report.failures:
        lines += ["", "## Failures", ""]
        for failure in report.failures:
            lines.append(f"- `{failure.case_id}` ({failure.phase}): {failure.message}"
                         + (f" — see `{failure.stderr_log}`" if failure.stderr_log else ""))  # fmt: skip
    lines += ["", "Every command, with its arguments and times: `commands/commands.jsonl`.", ""]
    return "\n".join(lines)
