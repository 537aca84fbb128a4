"""`report.json` (`tile.report`) and its parts: summary, cases, failures, findings."""

from __future__ import annotations

import itertools
from typing import Annotated, Any, ClassVar, Literal, Protocol, Self

from pydantic import Field, JsonValue, StringConstraints, model_validator

from tile_artifacts._accounting import Accounting, RunTiming, Seconds
from tile_artifacts._base import (
    STDERR_EXCERPT_LIMIT,
    ArtifactModel,
    Bound,
    Context,
    DeviceRecord,
    FailureId,
    Level,
    PeakSource,
    Producer,
    RunInfo,
    Status,
    StopReason,
    Timer,
    WorkSource,
)
from tile_artifacts._records import ComparisonRow, MetricRecord

__all__ = [
    "Accounting",
    "AgentSummary",
    "CaseRecord",
    "CheckRecord",
    "ConfigRecord",
    "Counts",
    "Diagnostic",
    "FailureRecord",
    "Finding",
    "KernelRecord",
    "OpRecord",
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
]


class Counts(ArtifactModel):
    """Case counts of a run."""

    cases: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0


class AgentSummary(ArtifactModel):
    """A summary written for an automated reader."""

    one_sentence: str | None = None
    key_observations: list[str] = Field(default_factory=list)
    risks: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)


class ReportSummary(ArtifactModel):
    """The report's headline."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"exit_code", "exit_reason"})

    title: str
    status: Status
    headline: str
    primary_metric: str = "time_s"
    counts: Counts = Field(default_factory=Counts)
    agent_summary: AgentSummary = Field(default_factory=AgentSummary)
    exit_code: int | None = None
    """The exit code the command left with (null: written by something else than a command)."""
    exit_reason: str | None = None
    """Why that code: the check, gate or crash that decided it (null with exit code 0)."""


_Seconds = Seconds
_Count = Annotated[int, Field(ge=0)]


class Phases(ArtifactModel):
    """Build phase timings (seconds) and JAX compilation cache behaviour of one case.

    The runner's `Phases` message carries the same numbers; here they are validated as what
    they are (no negative time or count), as a record read back from disk must be.
    """

    trace_s: _Seconds | None = None
    lower_s: _Seconds | None = None
    compile_s: _Seconds | None = None
    cache_hit: bool | None = None
    compile_count: _Count | None = None
    cache_hit_count: _Count | None = None
    cache_miss_count: _Count | None = None


class SummaryLike(Protocol):
    """What `StatsRecord.from_summary` reads: the attributes of `tile_stats.Summary`."""

    @property
    def n(self) -> int: ...
    @property
    def min(self) -> float: ...
    @property
    def max(self) -> float: ...
    @property
    def mean(self) -> float: ...
    @property
    def median(self) -> float: ...
    @property
    def stdev(self) -> float | None: ...
    @property
    def mad(self) -> float | None: ...
    @property
    def q1(self) -> float | None: ...
    @property
    def q3(self) -> float | None: ...
    @property
    def p5(self) -> float | None: ...
    @property
    def p95(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def outliers_mild(self) -> int: ...
    @property
    def outliers_severe(self) -> int: ...


class StatsRecord(ArtifactModel):
    """Summary statistics of raw samples (seconds); the CI is a bootstrap CI of the median."""

    n: int
    min: float
    max: float
    mean: float
    median: float
    stdev: float | None = None
    mad: float | None = None
    q1: float | None = None
    q3: float | None = None
    p5: float | None = None
    p95: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    outliers_mild: int = 0
    outliers_severe: int = 0
    stop_reason: StopReason | None = None

    @classmethod
    def from_summary(
        cls, summary: SummaryLike, *, stop_reason: StopReason | None = None
    ) -> StatsRecord:
        """Build from a `tile_stats.Summary` (or anything with the same attributes)."""
        names = [name for name in cls.model_fields if name != "stop_reason"]
        values: dict[str, Any] = {name: getattr(summary, name) for name in names}
        return cls(**values, stop_reason=stop_reason)


class Work(ArtifactModel):
    """Bytes moved and FLOPs done by one call; `cost_analysis` marks an XLA estimate."""

    bytes: float | None = None
    flops: float | None = None
    source: WorkSource | None = None


class Throughput(ArtifactModel):
    """Throughput computed from the median time."""

    gbps: float | None = None
    tflops: float | None = None


class Roofline(ArtifactModel):
    """Roofline position of one case and which peak it was measured against."""

    intensity: float | None = None
    pct_peak_bw: float | None = None
    pct_peak_flops: float | None = None
    bound: Bound = "unknown"
    peak_source: PeakSource | None = None


class ReferenceRecord(ArtifactModel):
    """The reference implementation timed on the same inputs; speedup = ref median / median.

    `interleaved`: the samples were taken turn about with the case's own, as many and in the
    same order (sample i of each close together in time), so the ratios pair up.
    """

    added_keys: ClassVar[frozenset[str]] = frozenset({"interleaved"})

    samples: list[float] = Field(default_factory=list[float])
    stats: StatsRecord | None = None
    speedup: float | None = None
    interleaved: bool = False


class CheckRecord(ArtifactModel):
    """Correctness check of a kernel's output against its reference."""

    passed: bool
    max_abs_err: float | None = None
    rel_l2_err: float | None = None
    tol: float | None = None
    worst_index: list[int] | None = None
    message: str | None = None


class ConfigRecord(ArtifactModel):
    """The tunable values a case ran with, and where they came from.

    `source`: `default` (the kernel's), `tuned` (the project's tuning file), `user_cache` (the
    user cache's tuning file), `shipped` (a tuning file the kernel's package ships), `override`
    (`--tunable`), `tune` (a configuration `tile tune` timed). `note`: why these values when
    that is not plain (a default the constraint rules out, a tuning entry not used).
    """

    added_keys: ClassVar[frozenset[str]] = frozenset({"note"})

    values: dict[str, str] = Field(default_factory=dict)
    source: Literal["default", "tuned", "user_cache", "shipped", "override", "tune"] = "default"
    signature: str | None = None
    note: str | None = None


class KernelRecord(ArtifactModel):
    """One device kernel of a case's call (the `cupti` timer's breakdown).

    `name` as launched, `short` a readable form, `origin` the HLO fusion or custom call it
    came from where the optimized HLO names it; `launches` per call; `stats` its time per
    call (seconds, all its launches); `share` its median over the case's median.
    """

    name: str
    short: str
    origin: str | None = None
    launches: Annotated[int, Field(ge=1)] = 1
    stats: StatsRecord
    share: Annotated[float, Field(ge=0)]


class OpRecord(ArtifactModel):
    """The op a case's kernel implements (`@tile.kernel(op=...)`): `impl` labels this
    implementation; `baseline` marks the one the op's others are timed against."""

    name: Annotated[str, StringConstraints(min_length=1)]
    impl: Annotated[str, StringConstraints(min_length=1)]
    baseline: bool = False


def check_round_sizes(
    sizes: list[int] | None, samples: list[float], *, what: str = "round_sizes"
) -> None:
    """Rounds (or runs) are positive sample counts that add up to the samples, or a ValueError."""
    if sizes is None:
        return
    if any(n < 1 for n in sizes) or sum(sizes) != len(samples):
        raise ValueError(
            f"{what} {sizes} must be positive counts adding up to the {len(samples)} samples"
        )


def check_within(outer: list[int] | None, inner: list[int] | None, *, what: str) -> None:
    """Groups `outer` (runs, processes) end where a group of `inner` (rounds) ends, or a
    ValueError: a round is never split between two processes."""
    if outer is None or inner is None:
        return
    if not set(itertools.accumulate(outer)) <= set(itertools.accumulate(inner)):
        raise ValueError(f"{what} {outer} must fall on round boundaries (whole rounds each)")


class CaseRecord(ArtifactModel):
    """One case of a bench or test run: timings with raw samples, work, roofline, check.

    `round_sizes`: with `[bench] rounds` > 1, how many of `samples` (and of the interleaved
    reference's) each round took, in order; None when the case was timed in one go.
    `process_sizes`: with `[bench] processes` > 1, how many each runner process took, in order
    (a process's rounds lie within it); None when one process timed the case.
    `captured`: `MODULE:FUNCTION` of a program whose call of the kernel this case is (`--from`).
    """

    added_keys: ClassVar[frozenset[str]] = frozenset(
        {"round_sizes", "accounting", "config", "kernels", "op", "captured", "process_sizes"}
    )

    case_id: str
    kernel: str
    params: dict[str, str] = Field(default_factory=dict)
    status: Status
    phases: Phases = Field(default_factory=Phases)
    timer: Timer | None = None
    cold: bool | None = None
    samples: list[float] = Field(default_factory=list[float])
    stats: StatsRecord | None = None
    work: Work = Field(default_factory=Work)
    throughput: Throughput = Field(default_factory=Throughput)
    roofline: Roofline = Field(default_factory=Roofline)
    reference: ReferenceRecord | None = None
    check: CheckRecord | None = None
    round_sizes: list[int] | None = None
    accounting: Accounting | None = None
    config: ConfigRecord | None = None
    kernels: list[KernelRecord] | None = None
    op: OpRecord | None = None
    captured: str | None = None
    process_sizes: list[int] | None = None

    @model_validator(mode="after")
    def _rounds_add_up(self) -> Self:
        check_round_sizes(self.round_sizes, self.samples)
        check_round_sizes(self.process_sizes, self.samples, what="process_sizes")
        check_within(self.process_sizes, self.round_sizes, what="process_sizes")
        return self


class FailureRecord(ArtifactModel):
    """A failure of the run or of one case; long stderr lives in `stderr_log`."""

    failure_id: FailureId
    case_id: str | None = None
    phase: str
    status: Status
    message: str
    exception_type: str | None = None
    stderr_excerpt: Annotated[str, StringConstraints(max_length=STDERR_EXCERPT_LIMIT)] | None = None
    stderr_log: str | None = None
    command_id: str | None = None


class Finding(ArtifactModel):
    """An observation about the run with its evidence."""

    finding_id: str
    severity: Literal["info", "low", "medium", "high", "critical"]
    category: str
    title: str
    evidence: list[str] = Field(default_factory=list)
    interpretation: str | None = None


class RecommendedAction(ArtifactModel):
    """Something the user should do next."""

    action_id: str
    priority: Literal["high", "medium", "low"]
    description: str


class Diagnostic(ArtifactModel):
    """A warning or note raised during the run that is not a failure."""

    level: Level
    message: str
    case_id: str | None = None
    phase: str | None = None


class Report(ArtifactModel):
    """`report.json` (`tile.report`): everything a run measured, with raw samples."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"timing"})

    schema_name: Literal["tile.report"] = "tile.report"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    context: Context = Field(default_factory=Context)
    configuration: dict[str, JsonValue] = Field(default_factory=dict)
    device: DeviceRecord = Field(default_factory=DeviceRecord)
    summary: ReportSummary
    cases: list[CaseRecord] = Field(default_factory=list[CaseRecord])
    metrics: list[MetricRecord] = Field(default_factory=list[MetricRecord])
    comparisons: list[ComparisonRow] = Field(default_factory=list[ComparisonRow])
    diagnostics: list[Diagnostic] = Field(default_factory=list[Diagnostic])
    failures: list[FailureRecord] = Field(default_factory=list[FailureRecord])
    findings: list[Finding] = Field(default_factory=list[Finding])
    recommended_actions: list[RecommendedAction] = Field(default_factory=list[RecommendedAction])
    timing: RunTiming | None = None
