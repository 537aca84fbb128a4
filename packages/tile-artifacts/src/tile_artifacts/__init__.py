"""tile-artifacts: Artifact Format v1 models, crash-safe writer, validator and comparison;
run directories and campaign directories (one run directory per unit under `units/`).

The top level holds what reading and writing a run directory needs; comparing runs, campaigns,
checking artifacts, the compile cache's diagnostics and the per-kernel breakdown and the
implementations of one op have their namespaces: `tile_artifacts.compare`, `.campaign`,
`.check`, `.cache`, `.kernels`, `.ops`.

Every name is imported when first used (PEP 562), so that a program that needs one of them
pays for that one: the CLI's console needs only `Redactor`, and `tile config` took 0.3 s
importing the whole package for it. The imports under `TYPE_CHECKING` are the one list of
where each name lives; `_PLACES` repeats it for the runtime, and a test holds the two equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
    from tile_artifacts._provenance import fingerprint_input, new_run_id, producer_info
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

_PLACES: dict[str, tuple[str, ...]] = {  # module ("": a namespace of its own): names
    "": (
        "cache",
        "campaign",
        "check",
        "compare",
        "kernels",
        "ops",
    ),
    "_base": (
        "RUN_ID_PATTERN",
        "SCHEMA_VERSION",
        "STATUSES",
        "STDERR_EXCERPT_LIMIT",
        "Aggregation",
        "ArtifactModel",
        "Bound",
        "Context",
        "DeviceRecord",
        "Envelope",
        "Level",
        "Peaks",
        "PeakSource",
        "Producer",
        "RunInfo",
        "Status",
        "StopReason",
        "Timer",
        "Unit",
        "UtcDatetime",
        "WorkSource",
        "failure_id",
        "utc_now",
    ),
    "_case_log": ("CaseLogRecord",),
    "_documents": (
        "ArtifactEntry",
        "ArtifactKind",
        "ConfigSnapshot",
        "Document",
        "FingerprintPolicy",
        "InputFile",
        "JsonlRecord",
        "Manifest",
        "PathType",
        "PrimaryArtifacts",
    ),
    "_durable": ("replace_file",),
    "_errors": (
        "ArtifactError",
        "ArtifactReadError",
        "ArtifactWriteError",
        "SchemaVersionError",
    ),
    "_live": ("unless_live",),
    "_merge": (
        "count_cases",
        "merge_case_log",
    ),
    "_metrics": (
        "STANDARD_METRICS",
        "MetricSpec",
        "case_metrics",
    ),
    "_models": (
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
    ),
    "_paths": (
        "CASES_JSONL",
        "COMMANDS_JSONL",
        "COMPARISONS_JSON",
        "EVENTS_JSONL",
        "INCOMPLETE_REASON",
        "JAX_CACHE_JSON",
        "MANIFEST_JSON",
        "METRICS_JSONL",
        "REPORT_JSON",
        "REQUIRED_FILES",
        "RUN_LAYOUT",
        "SUMMARY_MD",
        "Layout",
    ),
    "_provenance": (
        "fingerprint_input",
        "new_run_id",
        "producer_info",
    ),
    "_read": (
        "complete_lines",
        "iter_jsonl",
        "load_document",
        "read_case_log",
        "read_jsonl",
        "read_manifest",
        "read_report",
    ),
    "_records": (
        "CommandRecord",
        "EventRecord",
        "MetricRecord",
        "MetricSource",
    ),
    "_redact": (
        "REDACTED",
        "Redactor",
        "is_secret_name",
        "redact_environment",
    ),
    "_summary": ("render_summary_markdown",),
    "_writer": ("ArtifactWriter",),
}
_HOMES = {name: module for module, names in _PLACES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    """Import `name` from where it lives on first use, then keep it on the package."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tile_artifacts' has no attribute {name!r}")
    if not home:  # a namespace: the submodule itself
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
