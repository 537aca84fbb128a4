"""How one case is judged: the row `tile compare` writes for it.

Per case, from the raw samples of a series chosen by `basis` (below): the ratio of medians
(current / baseline), its CI at confidence 1 - alpha and a p-value, both from a t test on the
medians of groups of samples (`case_evidence`: a pooled baseline's runs, rounds, or blocks of
one run, first match; the reason says which), and a practical noise floor widened by the drift
those groups cannot see. The row is `not_comparable` when device kind, timer or cold/warm mode
differ or samples are missing, `inconclusive` with fewer than MIN_SAMPLES values in either
series, and otherwise waits (`Pending`) for the run's other cases: `compare_runs` adjusts the
p-values over the run (Benjamini-Hochberg) and `finish_row` judges each by `judge`, in log space
(see there for the exact rule).

Bases (the row's `basis` says which judged it; `baseline_value` and `current_value` are the
absolute medians either way, and a relative row also has `baseline_relative` and
`current_relative`, the medians of each side's kernel/reference ratios):

- `relative`: each run's series is its per-sample ratios kernel_i / reference_i, which needs the
  reference timed interleaved with the kernel (`reference.interleaved`, as many samples) on both
  sides. Both halves of a ratio saw the same machine speed, so swings of that speed within a run
  cancel, and the reference's move between the runs is not added to the floor. But dividing by
  the reference cancels the machine only where kernel and reference respond to it alike, which
  under a load that changed between the runs they need not (issue 33: -36% and -28% "improved"
  on identical code). So when the reference itself moved between the runs beyond its own noise
  (`reference_drift`: its own times judged by the same rule are a change), the relative basis
  is not used for that case: `auto` judges it on absolute times, with the floor widened by the
  reference's move counted DRIFTED_REFERENCE_WEIGHT times (the kernel need not have followed
  it) and the reason ending "judged on absolute times: the reference moved ..."; `relative`
  makes it `inconclusive` with that reason. A change of the reference code itself shows up as
  such a drift, or (when small) as a change of the kernel: read the absolute medians then.
  When both runs were pinned to one core with XLA single-threaded (`[runner] pin_cpu`; the
  report's `context.pinned_cpu`) and have no rounds or pooled runs, the ratio's CI is widened to
  a block bootstrap's (`tile_stats.block_ratio_ci`) and the p-value is the samples' own, with
  no drift widening; the reason ends with "on one pinned core; block bootstrap CI". Pinning
  removes the noise that moves a ratio between runs without showing within them.
- `absolute`: the kernel's own times; the floor is widened by the reference's move between the
  runs (for `time_s`) and, without rounds, each side's within-run drift.
- `auto` (default): `relative` for a case whose both sides can be (and whose reference did not
  drift), else `absolute`.

Groups (`case_evidence`): two runs whose rounds took turns (`tile bench --against`; each names
the other in `context.paired_with`) are judged on their rounds paired by turn, a t test on the
differences of the pairs' log medians with no drift widening (the pairs saw the machine move),
on absolute times under `auto`; "p and CI from N pairs of rounds taken in turns". Else a baseline pooled from several runs (`baseline_from_reports`;
`run_sizes`) knows how far each case moves between processes of the same code, so when either
side has MIN_RUNS runs or more the test is on the per-run medians (pooled variance), with no
drift widening; the reason ends with "p and CI from the spread of K and L runs". Else, when both
sides have at least MIN_ROUNDS rounds (`[bench] rounds`), the test is on the per-round medians
(Welch), the floor widened only by the reference's move (rounds span the run); "p and CI from
N and M rounds". Else each run is cut into blocks of consecutive samples (`tile_stats.run_blocks`)
and the test is on the block medians (Welch): blocks see how the run wandered but not what
stays fixed for a whole process, and the reason says so. With too few samples for blocks, the
per-sample Mann-Whitney test stands in, and the reason says that too.

With `basis="relative"` a case without interleaved reference samples on either side is
`not_comparable`. `metric="ref_time_s"` (the reference's own times) is always absolute. Cases on
one side only get a `not_comparable` row whose reason is exactly `added` or `removed`.
`variants=True` says the two runs differ on purpose (a campaign's variants: cold caches, an XLA
flag): a warm side is judged against a cold one instead of refused (the reason says which is
which), and the reference's move between the runs is neither taken as noise nor as a drift,
since the variant moves the reference as much as the kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import tile_stats
from tile_artifacts._base import (
    MEASURED,
    Basis,
    BasisSetting,
    Judgement,
)
from tile_artifacts._compare_noise import (
    DRIFTED_REFERENCE_WEIGHT,
    MIN_SAMPLES,
    Evidence,
    Prior,
    case_evidence,
    judge,
    run_prior,
)
from tile_artifacts._compare_series import (
    CaseSeries,
    median_or_none,
)
from tile_artifacts._consistency import first_impossible_sample
from tile_artifacts._records import ComparisonRow

__all__ = [
    "Pending",
    "Settings",
    "compare_row",
    "finish_row",
    "one_sided",
    "reference_drift",
    "run_priors",
]

_RELATIVE: Final = "relative to its reference, timed interleaved"
_MODE: Final = {True: "cold", False: "warm", None: "unknown"}


@dataclass(frozen=True)
class Settings:
    """What every row of one comparison is judged with."""

    metric: str
    basis: BasisSetting
    pinned: bool
    paired: bool
    noise_floor_pct: float
    alpha: float
    resamples: int
    seed: int
    variants: bool
    priors: Mapping[Basis, Prior] = field(default_factory=dict[Basis, Prior])
    """Per basis, the cases' process-to-process spread together (`run_priors`)."""
    reference_prior: Prior | None = None
    """The same of the references' own times, for `reference_drift`."""


def run_priors(cases: Iterable[CaseSeries]) -> dict[Basis, Prior]:
    """`run_prior` on each basis the cases can be judged on: of a pooled baseline's cases,
    and of both sides' where runs were made of several runner processes."""
    cases = list(cases)
    sides: dict[Basis, list[tuple[list[float], list[int]]]] = {
        "relative": [(c.relative, c.run_sizes) for c in cases if c.relative],
        "absolute": [(c.samples, c.run_sizes) for c in cases if c.samples],
    }
    found: dict[Basis, Prior | None] = {basis: run_prior(side) for basis, side in sides.items()}
    return {basis: prior for basis, prior in found.items() if prior is not None}


def _not_comparable(
    base: CaseSeries,
    cur: CaseSeries,
    base_kind: str | None,
    cur_kind: str | None,
    modes: bool = False,
) -> str:
    """Why the two cases cannot be judged against each other, or "" when they can."""
    return _not_alike(base, cur, base_kind, cur_kind, modes) or _unusable_samples(base, cur)


def _not_alike(
    base: CaseSeries,
    cur: CaseSeries,
    base_kind: str | None,
    cur_kind: str | None,
    modes: bool,
) -> str:
    """What differs between how the two cases were measured (if they were), or ""."""
    for side, case in (("baseline", base), ("current", cur)):
        if case.status not in MEASURED:
            return f"{side} case status is `{case.status}`"
    if base_kind != cur_kind:
        return f"device kind differs: `{base_kind}` vs `{cur_kind}`"
    if base.timer != cur.timer:
        return f"timer differs: `{base.timer}` vs `{cur.timer}`"
    if base.cold != cur.cold and not modes:
        return f"mode differs: {_MODE[base.cold]} vs {_MODE[cur.cold]}"
    return ""


def _unusable_samples(base: CaseSeries, cur: CaseSeries) -> str:
    """Why the raw samples of either side cannot be compared (none, or impossible), or ""."""
    missing = [side for side, c in (("baseline", base), ("current", cur)) if not c.samples]
    if missing:
        return f"no raw samples in {' and '.join(missing)}"
    for side, case in (("baseline", base), ("current", cur)):
        bad = first_impossible_sample(case.samples)
        if bad is not None:
            return (f"{side} has zero or negative times (sample {bad[0]} is {bad[1]!r}): the "
                    "file is corrupt; `tile schema-check` it")  # fmt: skip
    return ""


def _make_row(  # noqa: PLR0913 (a row's parts)
    case_id: str,
    metric: str,
    values: tuple[float | None, float | None],
    judgement: Judgement,
    reason: str,
    *,
    evidence: Evidence | None = None,
    p_value: float | None = None,
    basis: Basis | None = None,
    relative: tuple[float | None, float | None] = (None, None),
) -> ComparisonRow:
    ratio = evidence.ratio if evidence else None
    return ComparisonRow(
        case_id=case_id,
        metric_name=metric,
        unit="s",
        baseline_value=values[0],
        current_value=values[1],
        ratio=ratio,
        ratio_ci_low=evidence.ci[0] if evidence else None,
        ratio_ci_high=evidence.ci[1] if evidence else None,
        percent_change=(ratio - 1) * 100 if ratio is not None else None,
        p_value=p_value,
        higher_is_better=False,
        judgement=judgement,
        reason=reason,
        basis=basis,
        baseline_relative=relative[0],
        current_relative=relative[1],
    )


def _pick_basis(base: CaseSeries, cur: CaseSeries, s: Settings) -> tuple[Basis | None, str]:
    """The basis this row is judged on, or None and why it cannot be the one asked for."""
    metric, basis = s.metric, s.basis
    if metric != "time_s" or basis == "absolute":
        return "absolute", ""  # the reference's own times cannot be relative to themselves
    if basis == "auto" and s.paired:
        # Rounds in turns already cancel the machine's moves; dividing would add the
        # reference's own noise.
        return "absolute", ""
    if base.relative is not None and cur.relative is not None:
        return "relative", ""
    if basis == "auto":
        return "absolute", ""
    missing = [side for side, c in (("baseline", base), ("current", cur)) if c.relative is None]
    return None, (
        f"basis relative, but no reference samples timed interleaved in {' and '.join(missing)}"
    )


def _series(
    base: CaseSeries, cur: CaseSeries, used: Basis
) -> tuple[tuple[list[float], list[float]], str]:
    """The two series judged on basis `used`, and the note the row's reason ends with."""
    if used == "relative" and base.relative is not None and cur.relative is not None:
        return (base.relative, cur.relative), f"; {_RELATIVE}"
    return (base.samples, cur.samples), ""


def _evidence(
    base: CaseSeries, cur: CaseSeries, series: tuple[list[float], list[float]], used: Basis,
    s: Settings, *, drifted: bool = False,
) -> Evidence:  # fmt: skip
    """`case_evidence` of one series. The reference's move between the runs is evidence of
    machine noise in absolute times only: relative times have it divided out, references
    cannot control themselves, and variants move the reference on purpose. When the case is
    on absolute times because its reference `drifted`, that move counts
    DRIFTED_REFERENCE_WEIGHT times: the kernel need not have followed it."""
    absolute = used == "absolute" and s.metric == "time_s" and not s.variants
    return case_evidence(
        base,
        cur,
        series,
        references=(base.reference, cur.reference) if absolute else None,
        reference_weight=DRIFTED_REFERENCE_WEIGHT if drifted else 1.0,
        relative_and_pinned=used == "relative" and s.pinned,
        paired=s.paired,
        prior=s.priors.get(used),
        confidence=1 - s.alpha,
        resamples=s.resamples,
        seed=s.seed,
    )


def reference_drift(base_ref: CaseSeries | None, cur_ref: CaseSeries | None, s: Settings) -> str:
    """Why the relative basis cannot be trusted for this case, or "": the interleaved reference
    itself moved between the runs beyond its own noise, judged by the same rule as a kernel
    (its own times, its own groups, its own within-run drift, its p-value as it stands).

    Dividing by the reference cancels the machine's speed only where kernel and reference
    respond to it alike; under a load that changed between the runs they do not (two runs of
    identical code came out -36% and -28% "improved" relative to their references, issue
    33), and the reference having moved is how that shows."""
    if base_ref is None or cur_ref is None or s.variants:
        return ""
    if min(len(base_ref.samples), len(cur_ref.samples)) < MIN_SAMPLES:
        return ""
    series = (base_ref.samples, cur_ref.samples)
    try:
        e = case_evidence(base_ref, cur_ref, series, references=None, relative_and_pinned=False,
                          prior=s.reference_prior, confidence=1 - s.alpha,
                          resamples=s.resamples, seed=s.seed)  # fmt: skip
    except tile_stats.StatsError:
        return ""
    verdict, _ = judge(e.ratio, *e.ci, e.p_value, noise_floor_pct=s.noise_floor_pct,
                       alpha=s.alpha, drift_pct=e.drift.pct)  # fmt: skip
    if verdict not in ("regression", "improvement"):
        return ""
    return f"the reference moved {(e.ratio - 1) * 100:+.1f}% between the runs, beyond its own noise"


@dataclass(frozen=True)
class Pending:
    """A case with its evidence, waiting for the run's false-discovery control."""

    case_id: str
    values: tuple[float | None, float | None]
    basis: Basis
    evidence: Evidence
    suffix: str
    relative: tuple[float | None, float | None]


def compare_row(
    base: CaseSeries,
    cur: CaseSeries,
    kinds: tuple[str | None, str | None],
    s: Settings,
    references: tuple[CaseSeries | None, CaseSeries | None] = (None, None),
) -> ComparisonRow | Pending:
    """The row of one case present on both sides, or its evidence when a verdict needs the
    run's other cases (`finish_row` gives it). `references` are the sides' reference series
    (`ref_time_s`), for `reference_drift`."""
    values = (median_or_none(base.samples), median_or_none(cur.samples))
    reason = _not_comparable(base, cur, *kinds, s.variants)
    if reason:
        return _make_row(cur.case_id, s.metric, values, "not_comparable", reason)
    used, reason = _pick_basis(base, cur, s)
    if used is None:
        return _make_row(cur.case_id, s.metric, values, "not_comparable", reason)
    fallback = ""
    if used == "relative":
        drifted = reference_drift(*references, s)
        if drifted and s.basis == "relative":
            reason = (f"{drifted}: relative times cannot be trusted for this case; "
                      "compare it with `--basis absolute`")  # fmt: skip
            return _make_row(cur.case_id, s.metric, values, "inconclusive", reason, basis=used)
        if drifted:
            used, fallback = "absolute", f"; judged on absolute times: {drifted}"
    series, suffix = _series(base, cur, used)
    relative = (median_or_none(series[0]), median_or_none(series[1]))
    relative = relative if used == "relative" else (None, None)
    suffix += fallback
    n_base, n_cur = len(series[0]), len(series[1])
    if min(n_base, n_cur) < MIN_SAMPLES:
        reason = f"too few samples ({n_base} baseline, {n_cur} current; need {MIN_SAMPLES})"
        return _make_row(cur.case_id, s.metric, values, "inconclusive", reason + suffix,
                         basis=used, relative=relative)  # fmt: skip
    try:
        evidence = _evidence(base, cur, series, used, s, drifted=bool(fallback))
    except tile_stats.StatsError as e:
        reason = f"statistics failed: {e}{suffix}"
        return _make_row(cur.case_id, s.metric, values, "inconclusive", reason, basis=used)
    suffix = suffix.removesuffix(fallback) + evidence.note + fallback
    if base.cold != cur.cold:
        suffix += f"; {_MODE[base.cold]} against {_MODE[cur.cold]}, as asked"
    return Pending(cur.case_id, values, used, evidence, suffix, relative)


def finish_row(pending: Pending, adjusted_p: float, family: int, s: Settings) -> ComparisonRow:
    """The verdict of a case with evidence: `judge` with its p-value adjusted for the run's
    `family` cases (Benjamini-Hochberg; the row keeps the test's own p-value)."""
    e = pending.evidence
    note = f" ({adjusted_p:.2g} adjusted for {family} cases)" if family > 1 else ""
    judgement, reason = judge(
        e.ratio,
        *e.ci,
        adjusted_p,
        noise_floor_pct=s.noise_floor_pct,
        alpha=s.alpha,
        drift_pct=e.drift.pct,
        drift_source=e.drift.source,
        shown_p=e.p_value,
        adjusted=note,
    )
    return _make_row(pending.case_id, s.metric, pending.values, judgement,
                     reason + pending.suffix, evidence=e, p_value=e.p_value,
                     basis=pending.basis, relative=pending.relative)  # fmt: skip


def one_sided(case: CaseSeries, metric: str, reason: str) -> ComparisonRow:
    value = median_or_none(case.samples)
    values = (value, None) if reason == "removed" else (None, value)
    return _make_row(case.case_id, metric, values, "not_comparable", reason)
