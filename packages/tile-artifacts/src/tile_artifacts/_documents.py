"""The other JSON documents: artifact manifest, comparison and baseline."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Annotated, ClassVar, Final, Literal, Self

from pydantic import Field, StringConstraints, model_validator

import tile_stats
from tile_artifacts._base import (
    MEASURED,
    ArtifactModel,
    BasisSetting,
    Context,
    DeviceRecord,
    Producer,
    RunInfo,
    Status,
    Timer,
)
from tile_artifacts._campaign import CampaignPlan, CampaignReport
from tile_artifacts._case_log import CaseLogRecord
from tile_artifacts._diagnostics import JaxCacheDoc
from tile_artifacts._errors import ArtifactError
from tile_artifacts._models import (
    CaseRecord,
    ConfigRecord,
    OpRecord,
    Report,
    StatsRecord,
    check_round_sizes,
)
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


class Versions(ArtifactModel):
    """Software versions a baseline was measured with."""

    python: str | None = None
    jax: str | None = None
    jaxlib: str | None = None


class BaselineCase(ArtifactModel):
    """One case of a baseline: what a later comparison needs, raw samples included.

    `reference_interleaved`: as the report's `reference.interleaved`; `round_sizes` and
    `config` (the tunable values it ran with) and `op` as the report's. `run_sizes`: in a baseline pooled from several runs, how many of the samples
    each run gave, in order (None: one run).
    """

    added_keys: ClassVar[frozenset[str]] = frozenset(
        {"reference_interleaved", "round_sizes", "run_sizes", "config", "op"}
    )

    case_id: str
    kernel: str
    params: dict[str, str] = Field(default_factory=dict)
    status: Status
    timer: Timer | None = None
    cold: bool | None = None
    samples: list[float] = Field(default_factory=list[float])
    stats: StatsRecord | None = None
    reference_samples: list[float] = Field(default_factory=list[float])
    reference_interleaved: bool = False
    round_sizes: list[int] | None = None
    run_sizes: list[int] | None = None
    config: ConfigRecord | None = None
    op: OpRecord | None = None

    @model_validator(mode="after")
    def _rounds_add_up(self) -> Self:
        check_round_sizes(self.round_sizes, self.samples)
        check_round_sizes(self.run_sizes, self.samples, what="run_sizes")
        if self.round_sizes is not None and self.run_sizes is not None:
            run_cuts = set(itertools.accumulate(self.run_sizes))
            if not run_cuts <= set(itertools.accumulate(self.round_sizes)):
                raise ValueError("run_sizes must fall on round boundaries (whole rounds per run)")
        return self


class Baseline(ArtifactModel):
    """A baseline file (`tile.baseline`): a compact, committable copy of one run's timings."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"pinned_cpu", "run_ids"})

    schema_name: Literal["tile.baseline"] = "tile.baseline"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    label: str | None = None
    device: DeviceRecord = Field(default_factory=DeviceRecord)
    versions: Versions = Field(default_factory=Versions)
    git_head: str | None = None
    pinned_cpu: int | None = None  # the report's context.pinned_cpu
    run_ids: list[str] | None = None  # the runs pooled, when there were several
    cases: list[BaselineCase] = Field(default_factory=list[BaselineCase])


def baseline_from_report(report: Report, *, label: str | None = None) -> Baseline:
    """Keep what a comparison needs from a report; the envelope is the report's own run."""
    return baseline_from_reports([report], label=label)


def baseline_from_reports(reports: Sequence[Report], *, label: str | None = None) -> Baseline:
    """A baseline from one run, or pooled from several runs of the same code on one device.

    Pooled, a case's samples are those of every run that measured it, one run after the
    other, and `run_sizes` says how many each gave: a comparison then judges a change against
    how far the case moved between these runs (see `compare_runs`). The runs must share the
    device kind, and a case its timer and mode; the envelope is the last run's.
    """
    if not reports:
        raise ArtifactError("no runs to save a baseline from", hint="pass a run directory")
    last = reports[-1]
    kinds = {r.device.device_kind for r in reports}
    models = {f"{r.device.device_kind} ({r.device.model})" for r in reports if r.device.model}
    if len(kinds) > 1 or len(models) > 1:
        kinds = models if len(kinds) == 1 else kinds
        raise ArtifactError(
            f"the runs were made on different devices ({', '.join(sorted(map(str, kinds)))})",
            hint="pool only runs of one device kind (one CPU model) into a baseline",
        )
    ids = [r.run.run_id for r in reports]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ArtifactError(
            f"run {', '.join(f'`{i}`' for i in repeated)} is given more than once; pooled "
            "twice, its samples would make the spread between runs look smaller than it is",
            hint="pass each run directory once (different runs of the same code)",
        )
    by_case: dict[str, list[CaseRecord]] = {}
    for report in reports:
        for case in report.cases:
            by_case.setdefault(case.case_id, []).append(case)
    pinned = {r.context.pinned_cpu is not None for r in reports} == {True}
    return Baseline(
        producer=last.producer,
        run=last.run,
        label=label,
        device=last.device,
        versions=Versions(
            python=last.context.python,
            jax=last.context.jax_version,
            jaxlib=last.context.jaxlib_version,
        ),
        git_head=last.producer.git_head,
        pinned_cpu=last.context.pinned_cpu if pinned else None,
        run_ids=[r.run.run_id for r in reports] if len(reports) > 1 else None,
        cases=[_pooled(records) for records in by_case.values()],
    )


def _baseline_case(case: CaseRecord) -> BaselineCase:
    return BaselineCase(
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
        config=case.config,
        op=case.op,
    )


def _pooled(records: list[CaseRecord]) -> BaselineCase:
    """One case's runs as one baseline case; a case measured in one run only stays as it is."""
    measured = [c for c in records if c.status in MEASURED and c.samples]
    if len(measured) < 2:
        return _baseline_case(measured[0] if measured else records[-1])
    first = measured[0]
    for case in measured[1:]:
        if (case.timer, case.cold) != (first.timer, first.cold):
            raise ArtifactError(
                f"case `{first.case_id}` was timed differently in the runs "
                f"(timer {first.timer} vs {case.timer}, cold {first.cold} vs {case.cold})",
                hint="pool only runs made with the same [bench] timer and cold settings",
            )
    samples = [x for c in measured for x in c.samples]
    interleaved = all(c.reference is not None and c.reference.interleaved for c in measured)
    rounds = [c.round_sizes for c in measured]
    pooled = {
        "samples": samples,
        "stats": StatsRecord.from_summary(tile_stats.summarize(samples)),
        "reference_samples": [
            x for c in measured if c.reference is not None for x in c.reference.samples
        ]
        if interleaved
        else [],
        "reference_interleaved": interleaved,
        "round_sizes": [n for r in rounds if r is not None for n in r]
        if all(r is not None for r in rounds)
        else None,
        "run_sizes": [len(c.samples) for c in measured],
    }
    return BaselineCase.model_validate({**dict(_baseline_case(first)), **pooled})


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
