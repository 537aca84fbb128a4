"""Campaign documents: the plan (`tile.campaign_plan`) and the report (`tile.campaign`).

A campaign directory holds one ordinary run directory per unit attempt under `units/`; these
two documents say what was planned (units, their cases, their estimated cost) and what came of
it (each unit's attempts, estimated against actual time, variants compared case by case).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from tile_artifacts._base import ArtifactModel, Judgement, Producer, RunInfo, Status, UtcDatetime
from tile_artifacts._models import ConfigRecord

__all__ = [
    "AttemptRecord",
    "BudgetRecord",
    "CampaignAccounting",
    "CampaignCounts",
    "CampaignPlan",
    "CampaignReport",
    "CampaignSummary",
    "CaseEstimate",
    "ComparisonRef",
    "EstimateBasis",
    "PlannedUnit",
    "SelectorKind",
    "SelectorMatch",
    "TimeSplit",
    "UnitRecord",
    "VariantCell",
    "VariantRow",
]

_Seconds = Annotated[float, Field(ge=0)]

EstimateBasis = Literal["seen", "seen_other_settings", "guess", "default"]
"""Where a case's estimate came from: earlier runs of it with the same sampling settings, with
other settings (sampling capped at the new budget), the mean of the cases that were seen (a
guess), or the sampling budget alone when nothing was seen on that device kind."""
SelectorKind = Literal["kernel", "filter", "axis", "plugin"]


class CaseEstimate(ArtifactModel):
    """The expected wall time of one case in one unit, and what it is based on."""

    case_id: str
    seconds: _Seconds
    basis: EstimateBasis
    runs_seen: int = 0


class TimeSplit(ArtifactModel):
    """A unit's wall time in parts: runner start-up, the cases, and everything around them."""

    start_s: _Seconds
    cases_s: _Seconds
    overhead_s: _Seconds
    total_s: _Seconds


class PlannedUnit(ArtifactModel):
    """One unit of a plan: a variant on a machine over the selected cases, as one `tile bench`.

    `args` are the `tile bench` arguments without the output directory; the unit directory's
    own report records the exact command line it ran with.
    """

    unit_id: str
    variant: str
    machine: str
    device_kind: str | None = None
    shards: int = 1
    case_ids: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    estimate: TimeSplit
    cases: list[CaseEstimate] = Field(default_factory=list[CaseEstimate])


class SelectorMatch(ArtifactModel):
    """What one selector of `[select]` matched: kernels and cases (never nothing)."""

    kind: SelectorKind
    selector: str
    where: str | None = None
    kernels: list[str] = Field(default_factory=list)
    case_count: int = 0


class BudgetRecord(ArtifactModel):
    """The plan's cost against the campaign's budget."""

    wall_time_s: float | None = None
    max_cases: int | None = None
    estimated_s: _Seconds
    case_runs: int
    over: bool
    reasons: list[str] = Field(default_factory=list)


class CampaignPlan(ArtifactModel):
    """`plan.json` (`tile.campaign_plan`): every unit, its cases and estimate, and the budget."""

    schema_name: Literal["tile.campaign_plan"] = "tile.campaign_plan"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    campaign: str
    source: str | None = None
    smoke: bool = False
    listed_device_kind: str | None = None
    variants: list[str] = Field(default_factory=list)
    machines: list[str] = Field(default_factory=list)
    baseline_variant: str
    selectors: list[SelectorMatch] = Field(default_factory=list[SelectorMatch])
    units: list[PlannedUnit] = Field(default_factory=list[PlannedUnit])
    budget: BudgetRecord
    estimate_method: str


class AttemptRecord(ArtifactModel):
    """One try at a unit: a run directory under `units/`, complete or not.

    `complete`: the directory passed schema-check; `done`: it is the unit's result (complete,
    made with the plan's arguments, on the expected device, without a crash or timeout).
    `estimate` is what the plan expected when the attempt started, `actual` what it took.
    """

    attempt: int
    path: str
    log: str | None = None
    run_id: str | None = None
    status: Status
    status_reason: str | None = None
    complete: bool
    done: bool
    matches_plan: bool
    manifest_sha256: str | None = None
    device_kind: str | None = None
    exit_code: int | None = None
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime | None = None
    wall_s: float | None = None
    estimate: TimeSplit | None = None
    actual: TimeSplit | None = None


class UnitRecord(ArtifactModel):
    """A unit and all its attempts; `estimate` and `actual` of its result (else the current
    plan's estimate and no actual)."""

    unit_id: str
    variant: str
    machine: str
    in_plan: bool
    case_count: int
    status: Status
    status_reason: str | None = None
    result_attempt: int | None = None
    estimate: TimeSplit | None = None
    actual: TimeSplit | None = None
    error_pct: float | None = None
    attempts: list[AttemptRecord] = Field(default_factory=list[AttemptRecord])


class VariantCell(ArtifactModel):
    """One variant's result for one case: its median and, against the baseline, the verdict.
    `config`: the tunable values the case ran with in this variant, and where they came from
    (null for a kernel without tunables, or a campaign written before tile recorded it)."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"config"})

    variant: str
    status: Status | None = None
    median_s: float | None = None
    ratio: float | None = None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    judgement: Judgement | None = None
    reason: str | None = None
    config: ConfigRecord | None = None


class VariantRow(ArtifactModel):
    """One case on one machine, across the variants (the baseline's cell first)."""

    machine: str
    case_id: str
    cells: list[VariantCell] = Field(default_factory=list[VariantCell])


class ComparisonRef(ArtifactModel):
    """A `tile.comparison` document in the campaign directory: one variant against the baseline."""

    machine: str
    variant: str
    baseline: str
    path: str
    status: Status
    regression_count: int = 0
    improvement_count: int = 0
    neutral_count: int = 0
    inconclusive_count: int = 0
    not_comparable_count: int = 0


class CampaignCounts(ArtifactModel):
    """Units of the plan by outcome."""

    units: int = 0
    done: int = 0
    failed: int = 0
    not_run: int = 0


class CampaignSummary(ArtifactModel):
    """The campaign's headline."""

    title: str
    status: Status
    headline: str
    counts: CampaignCounts = Field(default_factory=CampaignCounts)


class CampaignAccounting(ArtifactModel):
    """Estimated against actual wall time over the units that have a result.

    `error_pct` = (actual - estimated) / estimated x 100: positive when the plan was optimistic.
    `invocation_wall_s` is the last `tile campaign run` from start to end, skipped units and
    comparisons included.
    """

    units_measured: int = 0
    estimated_s: _Seconds = 0.0
    actual_s: _Seconds = 0.0
    error_pct: float | None = None
    planned_s: _Seconds = 0.0
    invocation_wall_s: float | None = None


class CampaignReport(ArtifactModel):
    """`campaign.json` (`tile.campaign`): what a campaign planned, ran and found.

    `accounting` is the budget at the end: every unit's estimate against its actual wall time
    (the `tile bench` process of its result), so a later plan can be judged and improved.
    """

    schema_name: Literal["tile.campaign"] = "tile.campaign"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    campaign: str
    source: str | None = None
    smoke: bool = False
    baseline_variant: str
    summary: CampaignSummary
    units: list[UnitRecord] = Field(default_factory=list[UnitRecord])
    comparisons: list[ComparisonRef] = Field(default_factory=list[ComparisonRef])
    table: list[VariantRow] = Field(default_factory=list[VariantRow])
    budget: BudgetRecord
    accounting: CampaignAccounting
