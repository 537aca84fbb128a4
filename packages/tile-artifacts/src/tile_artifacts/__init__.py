"""tile-artifacts: Artifact Format v1 models, crash-safe writer, validator and comparison;
run directories and campaign directories (one run directory per unit under `units/`).

The top level holds what reading and writing a run directory needs; comparing runs, campaigns,
checking artifacts, the compile cache's diagnostics and the per-kernel breakdown and the
implementations of one op have their namespaces: `tile_artifacts.compare`, `.campaign`,
`.check`, `.cache`, `.kernels`, `.ops`.

Every name is imported when first used (PEP 562), so that a program that needs one of them
pays for that one: the CLI's console needs only `Redactor`, and `tile config` took 0.3 s
importing the whole package for it. The same scheme as tile-harness': the imports under
`TYPE_CHECKING` are what type checkers read, `_HOME` says the same for the runtime, and
`tests/test_lazy_packages.py` holds the two equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tile_artifacts import cache, campaign, check, compare, kernels, ops
    from tile_artifacts._base import (
        RUN_ID_PATTERN,
        SCHEMA_VERSION,
        STATUSES,
        STDERR_EXCERPT_LIMIT,
        Aggregation,
        ArtifactModel,
        Bound,
        Context,
        DeviceRecord,
        Envelope,
        Level,
        Peaks,
        PeakSource,
        Producer,
        RunInfo,
        Status,
        StopReason,
        Timer,
        Unit,
        UtcDatetime,
        WorkSource,
        failure_id,
        utc_now,
    )
    from tile_artifacts._case_log import CaseLogRecord
    from tile_artifacts._documents import (
        ArtifactEntry,
        ArtifactKind,
        ConfigSnapshot,
        Document,
        FingerprintPolicy,
        InputFile,
        JsonlRecord,
        Manifest,
        PathType,
        PrimaryArtifacts,
    )
    from tile_artifacts._durable import replace_file
    from tile_artifacts._errors import (
        ArtifactError,
        ArtifactReadError,
        ArtifactWriteError,
        SchemaVersionError,
    )
    from tile_artifacts._live import unless_live
    from tile_artifacts._merge import count_cases, merge_case_log
    from tile_artifacts._metrics import STANDARD_METRICS, MetricSpec, case_metrics
    from tile_artifacts._models import (
        Accounting,
        AgentSummary,
        CaseRecord,
        CheckRecord,
        ConfigRecord,
        Counts,
        Diagnostic,
        FailureRecord,
        Finding,
        Phases,
        RecommendedAction,
        ReferenceRecord,
        Report,
        ReportSummary,
        Roofline,
        RunTiming,
        StatsRecord,
        SummaryLike,
        Throughput,
        Work,
    )
    from tile_artifacts._paths import (
        CASES_JSONL,
        COMMANDS_JSONL,
        COMPARISONS_JSON,
        EVENTS_JSONL,
        INCOMPLETE_REASON,
        JAX_CACHE_JSON,
        MANIFEST_JSON,
        METRICS_JSONL,
        REPORT_JSON,
        REQUIRED_FILES,
        RUN_LAYOUT,
        SUMMARY_MD,
        Layout,
    )
    from tile_artifacts._provenance import (
        fingerprint_input,
        new_run_id,
        producer_info,
        read_git,
    )
    from tile_artifacts._read import (
        complete_lines,
        iter_jsonl,
        load_document,
        read_case_log,
        read_jsonl,
        read_manifest,
        read_report,
    )
    from tile_artifacts._records import (
        CommandRecord,
        EventRecord,
        MetricRecord,
        MetricSource,
    )
    from tile_artifacts._redact import (
        REDACTED,
        Redactor,
        is_secret_name,
        redact_environment,
    )
    from tile_artifacts._summary import render_summary_markdown
    from tile_artifacts._writer import ArtifactWriter

_HOME: dict[str, str] = {
    "cache": "tile_artifacts.cache",
    "campaign": "tile_artifacts.campaign",
    "check": "tile_artifacts.check",
    "compare": "tile_artifacts.compare",
    "kernels": "tile_artifacts.kernels",
    "ops": "tile_artifacts.ops",
    "RUN_ID_PATTERN": "tile_artifacts._base",
    "SCHEMA_VERSION": "tile_artifacts._base",
    "STATUSES": "tile_artifacts._base",
    "STDERR_EXCERPT_LIMIT": "tile_artifacts._base",
    "Aggregation": "tile_artifacts._base",
    "ArtifactModel": "tile_artifacts._base",
    "Bound": "tile_artifacts._base",
    "Context": "tile_artifacts._base",
    "DeviceRecord": "tile_artifacts._base",
    "Envelope": "tile_artifacts._base",
    "Level": "tile_artifacts._base",
    "Peaks": "tile_artifacts._base",
    "PeakSource": "tile_artifacts._base",
    "Producer": "tile_artifacts._base",
    "RunInfo": "tile_artifacts._base",
    "Status": "tile_artifacts._base",
    "StopReason": "tile_artifacts._base",
    "Timer": "tile_artifacts._base",
    "Unit": "tile_artifacts._base",
    "UtcDatetime": "tile_artifacts._base",
    "WorkSource": "tile_artifacts._base",
    "failure_id": "tile_artifacts._base",
    "utc_now": "tile_artifacts._base",
    "CaseLogRecord": "tile_artifacts._case_log",
    "ArtifactEntry": "tile_artifacts._documents",
    "ArtifactKind": "tile_artifacts._documents",
    "ConfigSnapshot": "tile_artifacts._documents",
    "Document": "tile_artifacts._documents",
    "FingerprintPolicy": "tile_artifacts._documents",
    "InputFile": "tile_artifacts._documents",
    "JsonlRecord": "tile_artifacts._documents",
    "Manifest": "tile_artifacts._documents",
    "PathType": "tile_artifacts._documents",
    "PrimaryArtifacts": "tile_artifacts._documents",
    "replace_file": "tile_artifacts._durable",
    "ArtifactError": "tile_artifacts._errors",
    "ArtifactReadError": "tile_artifacts._errors",
    "ArtifactWriteError": "tile_artifacts._errors",
    "SchemaVersionError": "tile_artifacts._errors",
    "unless_live": "tile_artifacts._live",
    "count_cases": "tile_artifacts._merge",
    "merge_case_log": "tile_artifacts._merge",
    "STANDARD_METRICS": "tile_artifacts._metrics",
    "MetricSpec": "tile_artifacts._metrics",
    "case_metrics": "tile_artifacts._metrics",
    "Accounting": "tile_artifacts._models",
    "AgentSummary": "tile_artifacts._models",
    "CaseRecord": "tile_artifacts._models",
    "CheckRecord": "tile_artifacts._models",
    "ConfigRecord": "tile_artifacts._models",
    "Counts": "tile_artifacts._models",
    "Diagnostic": "tile_artifacts._models",
    "FailureRecord": "tile_artifacts._models",
    "Finding": "tile_artifacts._models",
    "Phases": "tile_artifacts._models",
    "RecommendedAction": "tile_artifacts._models",
    "ReferenceRecord": "tile_artifacts._models",
    "Report": "tile_artifacts._models",
    "ReportSummary": "tile_artifacts._models",
    "Roofline": "tile_artifacts._models",
    "RunTiming": "tile_artifacts._models",
    "StatsRecord": "tile_artifacts._models",
    "SummaryLike": "tile_artifacts._models",
    "Throughput": "tile_artifacts._models",
    "Work": "tile_artifacts._models",
    "CASES_JSONL": "tile_artifacts._paths",
    "COMMANDS_JSONL": "tile_artifacts._paths",
    "COMPARISONS_JSON": "tile_artifacts._paths",
    "EVENTS_JSONL": "tile_artifacts._paths",
    "INCOMPLETE_REASON": "tile_artifacts._paths",
    "JAX_CACHE_JSON": "tile_artifacts._paths",
    "MANIFEST_JSON": "tile_artifacts._paths",
    "METRICS_JSONL": "tile_artifacts._paths",
    "REPORT_JSON": "tile_artifacts._paths",
    "REQUIRED_FILES": "tile_artifacts._paths",
    "RUN_LAYOUT": "tile_artifacts._paths",
    "SUMMARY_MD": "tile_artifacts._paths",
    "Layout": "tile_artifacts._paths",
    "fingerprint_input": "tile_artifacts._provenance",
    "new_run_id": "tile_artifacts._provenance",
    "producer_info": "tile_artifacts._provenance",
    "read_git": "tile_artifacts._provenance",
    "complete_lines": "tile_artifacts._read",
    "iter_jsonl": "tile_artifacts._read",
    "load_document": "tile_artifacts._read",
    "read_case_log": "tile_artifacts._read",
    "read_jsonl": "tile_artifacts._read",
    "read_manifest": "tile_artifacts._read",
    "read_report": "tile_artifacts._read",
    "CommandRecord": "tile_artifacts._records",
    "EventRecord": "tile_artifacts._records",
    "MetricRecord": "tile_artifacts._records",
    "MetricSource": "tile_artifacts._records",
    "REDACTED": "tile_artifacts._redact",
    "Redactor": "tile_artifacts._redact",
    "is_secret_name": "tile_artifacts._redact",
    "redact_environment": "tile_artifacts._redact",
    "render_summary_markdown": "tile_artifacts._summary",
    "ArtifactWriter": "tile_artifacts._writer",
}
"""Where each public name is defined."""

__version__ = "0.1.0"

__all__ = [
    # namespaces
    "cache",
    "campaign",
    "check",
    "compare",
    "kernels",
    "ops",
    # errors
    "ArtifactError",
    "ArtifactReadError",
    "ArtifactWriteError",
    "SchemaVersionError",
    # closed value sets and constants
    "RUN_ID_PATTERN",
    "SCHEMA_VERSION",
    "STATUSES",
    "STDERR_EXCERPT_LIMIT",
    "Aggregation",
    "ArtifactKind",
    "Bound",
    "FingerprintPolicy",
    "Level",
    "PathType",
    "PeakSource",
    "Status",
    "StopReason",
    "Timer",
    "Unit",
    "UtcDatetime",
    "WorkSource",
    # envelope and shared records
    "ArtifactModel",
    "Context",
    "DeviceRecord",
    "Envelope",
    "Peaks",
    "Producer",
    "RunInfo",
    # report
    "Accounting",
    "AgentSummary",
    "CaseRecord",
    "CheckRecord",
    "ConfigRecord",
    "Counts",
    "Diagnostic",
    "FailureRecord",
    "Finding",
    "Phases",
    "RecommendedAction",
    "ReferenceRecord",
    "Report",
    "ReportSummary",
    "Roofline",
    "RunTiming",
    "StatsRecord",
    "SummaryLike",
    "Throughput",
    "Work",
    # JSONL records and metrics
    "STANDARD_METRICS",
    "CaseLogRecord",
    "CommandRecord",
    "EventRecord",
    "MetricRecord",
    "MetricSource",
    "MetricSpec",
    "case_metrics",
    # manifest
    "ArtifactEntry",
    "ConfigSnapshot",
    "Document",
    "InputFile",
    "JsonlRecord",
    "Manifest",
    "PrimaryArtifacts",
    # run directory layout
    "CASES_JSONL",
    "Layout",
    "RUN_LAYOUT",
    "COMMANDS_JSONL",
    "COMPARISONS_JSON",
    "EVENTS_JSONL",
    "INCOMPLETE_REASON",
    "JAX_CACHE_JSON",
    "MANIFEST_JSON",
    "METRICS_JSONL",
    "REPORT_JSON",
    "REQUIRED_FILES",
    "SUMMARY_MD",
    # writing
    "REDACTED",
    "ArtifactWriter",
    "Redactor",
    "is_secret_name",
    "failure_id",
    "fingerprint_input",
    "new_run_id",
    "producer_info",
    "read_git",
    "redact_environment",
    "replace_file",
    "unless_live",
    "utc_now",
    # reading
    "complete_lines",
    "count_cases",
    "iter_jsonl",
    "load_document",
    "merge_case_log",
    "read_case_log",
    "read_jsonl",
    "read_manifest",
    "read_report",
    # summary.md
    "render_summary_markdown",
]


def __getattr__(name: str) -> object:
    """Import a public name's module on first use: the CLI's console must not pay for all of them."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(module)
    if not module.endswith(f".{name}"):
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
