"""The other JSON documents: artifact manifest, comparison and baseline."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from tile_artifacts._base import (
    ArtifactModel,
    BasisSetting,
    Context,
    DeviceRecord,
    Producer,
    RunInfo,
    Status,
    Timer,
)
from tile_artifacts._models import Report, StatsRecord, check_round_sizes
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
    artifacts: list[ArtifactEntry] = Field(default_factory=list)
    input_files: list[InputFile] = Field(default_factory=list)
    config_snapshots: list[ConfigSnapshot] = Field(default_factory=list)
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


class ComparisonSummary(ArtifactModel):
    """Judgement counts of a comparison and its status."""

    status: Status
    regression_count: int = 0
    improvement_count: int = 0
    neutral_count: int = 0
    inconclusive_count: int = 0
    not_comparable_count: int = 0


class ComparisonDoc(ArtifactModel):
    """`comparisons.json` (`tile.comparison`): per-case judgements of current against baseline."""

    schema_name: Literal["tile.comparison"] = "tile.comparison"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    baseline: ComparisonSide
    current: ComparisonSide
    thresholds: Thresholds
    rows: list[ComparisonRow] = Field(default_factory=list)
    summary: ComparisonSummary


class Versions(ArtifactModel):
    """Software versions a baseline was measured with."""

    python: str | None = None
    jax: str | None = None
    jaxlib: str | None = None


class BaselineCase(ArtifactModel):
    """One case of a baseline: what a later comparison needs, raw samples included.

    `reference_interleaved`: as the report's `reference.interleaved`; `round_sizes` as the
    report's.
    """

    added_keys: ClassVar[frozenset[str]] = frozenset({"reference_interleaved", "round_sizes"})

    case_id: str
    kernel: str
    params: dict[str, str] = Field(default_factory=dict)
    status: Status
    timer: Timer | None = None
    cold: bool | None = None
    samples: list[float] = Field(default_factory=list)
    stats: StatsRecord | None = None
    reference_samples: list[float] = Field(default_factory=list)
    reference_interleaved: bool = False
    round_sizes: list[int] | None = None

    @model_validator(mode="after")
    def _rounds_add_up(self) -> Self:
        check_round_sizes(self.round_sizes, self.samples)
        return self


class Baseline(ArtifactModel):
    """A baseline file (`tile.baseline`): a compact, committable copy of one run's timings."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"pinned_cpu"})

    schema_name: Literal["tile.baseline"] = "tile.baseline"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    label: str | None = None
    device: DeviceRecord = Field(default_factory=DeviceRecord)
    versions: Versions = Field(default_factory=Versions)
    git_head: str | None = None
    pinned_cpu: int | None = None  # the report's context.pinned_cpu
    cases: list[BaselineCase] = Field(default_factory=list)


def baseline_from_report(report: Report, *, label: str | None = None) -> Baseline:
    """Keep what a comparison needs from a report; the envelope is the report's own run."""
    cases = [
        BaselineCase(
            case_id=case.case_id,
            kernel=case.kernel,
            params=case.params,
            status=case.status,
            timer=case.timer,
            cold=case.cold,
            samples=case.samples,
            stats=case.stats,
            reference_samples=case.reference.samples if case.reference else [],
            reference_interleaved=case.reference.interleaved if case.reference else False,
            round_sizes=case.round_sizes,
        )
        for case in report.cases
    ]
    return Baseline(
        producer=report.producer,
        run=report.run,
        label=label,
        device=report.device,
        versions=Versions(
            python=report.context.python,
            jax=report.context.jax_version,
            jaxlib=report.context.jaxlib_version,
        ),
        git_head=report.producer.git_head,
        pinned_cpu=report.context.pinned_cpu,
        cases=cases,
    )


Document = Report | Manifest | ComparisonDoc | Baseline
JsonlRecord = EventRecord | MetricRecord | CommandRecord

DOCUMENT_MODELS: Final[dict[str, type[Report | Manifest | ComparisonDoc | Baseline]]] = {
    "tile.report": Report,
    "tile.artifact_manifest": Manifest,
    "tile.comparison": ComparisonDoc,
    "tile.baseline": Baseline,
}
RECORD_MODELS: Final[dict[str, type[EventRecord | MetricRecord | CommandRecord]]] = {
    "tile.event": EventRecord,
    "tile.metric": MetricRecord,
    "tile.command": CommandRecord,
}
