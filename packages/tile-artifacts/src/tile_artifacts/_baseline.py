"""Baseline files (`tile.baseline`): a compact copy of one run's timings, or of several runs
pooled, that later runs are compared against (`tile baseline save`, `tile bench --compare`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal, Self

from pydantic import Field, model_validator

import tile_stats
from tile_artifacts._base import (
    MEASURED,
    ArtifactModel,
    DeviceRecord,
    Producer,
    RunInfo,
    Status,
    Timer,
)
from tile_artifacts._errors import ArtifactError
from tile_artifacts._models import (
    CaseRecord,
    ConfigRecord,
    OpRecord,
    Report,
    StatsRecord,
    check_round_sizes,
    check_within,
)

__all__ = [
    "Baseline",
    "BaselineCase",
    "Versions",
    "baseline_from_report",
    "baseline_from_reports",
]


class Versions(ArtifactModel):
    """Software versions a baseline was measured with."""

    python: str | None = None
    jax: str | None = None
    jaxlib: str | None = None


class BaselineCase(ArtifactModel):
    """One case of a baseline: what a later comparison needs, raw samples included.

    `reference_interleaved`: as the report's `reference.interleaved`; `round_sizes` and
    `config` (the tunable values it ran with) and `op` as the report's. `run_sizes`: in a
    baseline pooled from several runs, how many of the samples each run gave, in order (None:
    one run). `other_configs`: in a pooled baseline, the tunable values of each run of the
    case that was left out of the pool because it ran another configuration than the last
    run's (None: the runs pooled all ran one configuration); a comparison's row says so.
    """

    added_keys: ClassVar[frozenset[str]] = frozenset(
        {"reference_interleaved", "round_sizes", "run_sizes", "config", "op", "other_configs"}
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
    other_configs: list[dict[str, str]] | None = None

    @model_validator(mode="after")
    def _rounds_add_up(self) -> Self:
        check_round_sizes(self.round_sizes, self.samples)
        check_round_sizes(self.run_sizes, self.samples, what="run_sizes")
        check_within(self.run_sizes, self.round_sizes, what="run_sizes")
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
    device kind, and a case its timer and mode; the envelope is the last run's. A case whose
    runs ran different tunable values is pooled from the runs of the last one's values only:
    the others would mix two configurations into one spread. `other_configs` keeps what was
    left out, and the case's comparison rows say so.
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
        run_sizes=case.process_sizes,
        config=case.config,
        op=case.op,
    )


def _values(case: CaseRecord) -> dict[str, str] | None:
    return dict(case.config.values) if case.config is not None else None


def _pooled(records: list[CaseRecord]) -> BaselineCase:
    """One case's runs as one baseline case; a case measured in one run only stays as it is.

    Only the runs of the last measured run's configuration are pooled (a run that recorded
    none, made before tile recorded configurations, cannot be told apart and is pooled)."""
    measured = [c for c in records if c.status in MEASURED and c.samples]
    last = _values(measured[-1]) if measured else None
    other = [
        v for c in measured if (v := _values(c)) is not None and last is not None and v != last
    ]
    if other:
        kept = _pooled([c for c in measured if _values(c) in (None, last)])
        return kept.model_copy(update={"other_configs": other})
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
        # a run of several runner processes (`[bench] processes`) pools as that many runs
        "run_sizes": [n for c in measured for n in c.process_sizes or [len(c.samples)]],
    }
    return BaselineCase.model_validate({**dict(_baseline_case(first)), **pooled})
