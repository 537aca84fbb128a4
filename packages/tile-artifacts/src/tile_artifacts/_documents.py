"""The other JSON documents: artifact manifest, comparison and baseline."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal

from pydantic import Field, StringConstraints

from tile_artifacts._base import (
    ArtifactModel,
    BasisSetting,
    Context,
    DeviceRecord,
    Producer,
    RunInfo,
    Status,
)
from tile_artifacts._baseline import (
    Baseline,
    BaselineCase,
    Versions,
    baseline_from_report,
    baseline_from_reports,
)
from tile_artifacts._campaign import CampaignPlan, CampaignReport
from tile_artifacts._case_log import CaseLogRecord
from tile_artifacts._diagnostics import JaxCacheDoc
from tile_artifacts._models import Report
from tile_artifacts._records import CommandRecord, ComparisonRow, EventRecord, MetricRecord

__all__ = [
    "DOCUMENT_MODELS",
    "RECORD_MODELS",
    "ArtifactEntry",
    "ArtifactKind",
    "Baseline",
    "BaselineCase",
    "ComparisonDoc",
    "ComparisonSide",
    "ComparisonSummary",
    "FalseDiscoveryControl",
    "ConfigSnapshot",
    "Document",
    "FingerprintPolicy",
    "InputFile",
    "JsonlRecord",
    "Manifest",
    "PathType",
    "PrimaryArtifacts",
    "Thresholds",
    "Versions",
    "baseline_from_report",
    "baseline_from_reports",
]

PathType = Literal["artifact_relative", "absolute_input"]
FingerprintPolicy = Literal["sha256", "metadata_only", "missing"]
ArtifactKind = Literal[
    "report",
    "summary",
    "events",
    "metrics",
    "commands",
    "config",
    "log",
    "output",
    "comparison",
    "baseline",
    "other",
]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class PrimaryArtifacts(ArtifactModel):
    """Run-relative paths of the files every run directory has."""

    report_json: str = "report.json"
    summary_markdown: str = "summary.md"
    events_jsonl: str = "events.jsonl"
    metrics_jsonl: str = "metrics.jsonl"


class ArtifactEntry(ArtifactModel):
    """One file of the run directory with its size and sha256."""

    path: str
    path_type: PathType = "artifact_relative"
    kind: ArtifactKind
    media_type: str
    size_bytes: Annotated[int, Field(ge=0)]
    sha256: Sha256
    description: str | None = None


class InputFile(ArtifactModel):
    """A file outside the run directory that the run read (kernel module, data, tile.toml)."""

    path: str
    path_type: PathType = "absolute_input"
    kind: str
    size_bytes: int | None = None
    sha256: Sha256 | None = None
    fingerprint_policy: FingerprintPolicy


class ConfigSnapshot(ArtifactModel):
    """A configuration file copied into the run directory, and where it came from."""

    path: str
    path_type: PathType = "artifact_relative"
    kind: str
    source_path: str | None = None
    description: str | None = None


class Manifest(ArtifactModel):
    """`artifact_manifest.json` (`tile.artifact_manifest`): written last, lists every file."""

    schema_name: Literal["tile.artifact_manifest"] = "tile.artifact_manifest"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    context: Context = Field(default_factory=Context)
    primary_artifacts: PrimaryArtifacts = Field(default_factory=PrimaryArtifacts)
    artifacts: list[ArtifactEntry] = Field(default_factory=list[ArtifactEntry])
    input_files: list[InputFile] = Field(default_factory=list[InputFile])
    config_snapshots: list[ConfigSnapshot] = Field(default_factory=list[ConfigSnapshot])
    notes: list[str] = Field(default_factory=list)


class ComparisonSide(ArtifactModel):
    """One side of a comparison."""

    label: str | None = None
    report_path: str | None = None
    run_id: str | None = None
    git_head: str | None = None
    device: DeviceRecord | None = None


class Thresholds(ArtifactModel):
    """The knobs a comparison was judged with; `basis` as asked (`auto` picks per row)."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"basis"})

    noise_floor_pct: float
    alpha: float
    metric: str
    basis: BasisSetting | None = None


class FalseDiscoveryControl(ArtifactModel):
    """How the verdicts of a comparison's many cases were held to few false discoveries.

    `method` `benjamini_hochberg`: each case was judged by its p-value adjusted over `cases`
    (Benjamini-Hochberg), so that among the cases called changed the expected share of false
    ones is at most the comparison's alpha; `cases` counts every case judged and every case
    of the baseline the current run did not measure (taken as unchanged).
    """

    method: Literal["benjamini_hochberg"]
    cases: int

    def describe(self) -> str:
        """`false discoveries held over 20 cases, Benjamini-Hochberg`: the phrase every view prints."""
        return f"false discoveries held over {self.cases} case{'s' if self.cases != 1 else ''}, Benjamini-Hochberg"


class ComparisonSummary(ArtifactModel):
    """Judgement counts of a comparison and its status.

    `false_discoveries`: how the cases' verdicts were controlled across the run; null in files
    written before tile controlled them (each case was then judged at alpha on its own).
    """

    added_keys: ClassVar[frozenset[str]] = frozenset({"false_discoveries"})

    status: Status
    regression_count: int = 0
    improvement_count: int = 0
    neutral_count: int = 0
    inconclusive_count: int = 0
    not_comparable_count: int = 0
    false_discoveries: FalseDiscoveryControl | None = None


class ComparisonDoc(ArtifactModel):
    """`comparisons.json` (`tile.comparison`): per-case judgements of current against baseline."""

    schema_name: Literal["tile.comparison"] = "tile.comparison"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    baseline: ComparisonSide
    current: ComparisonSide
    thresholds: Thresholds
    rows: list[ComparisonRow] = Field(default_factory=list[ComparisonRow])
    summary: ComparisonSummary


Document = (
    Report | Manifest | ComparisonDoc | Baseline | JaxCacheDoc | CampaignReport | CampaignPlan
)
JsonlRecord = EventRecord | MetricRecord | CommandRecord | CaseLogRecord

DOCUMENT_MODELS: Final[dict[str, type[Document]]] = {
    "tile.report": Report,
    "tile.campaign": CampaignReport,
    "tile.campaign_plan": CampaignPlan,
    "tile.artifact_manifest": Manifest,
    "tile.comparison": ComparisonDoc,
    "tile.baseline": Baseline,
    "tile.jax_cache": JaxCacheDoc,
}
RECORD_MODELS: Final[dict[str, type[JsonlRecord]]] = {
    "tile.event": EventRecord,
    "tile.metric": MetricRecord,
    "tile.command": CommandRecord,
    "tile.case": CaseLogRecord,
}
