"""compare_runs(variants=True): two runs that differ on purpose (a campaign's variants)."""

from __future__ import annotations

from collections.abc import Callable

from tile_artifacts import (
    CaseRecord,
    DeviceRecord,
    Producer,
    ReferenceRecord,
    Report,
    ReportSummary,
    RunInfo,
    utc_now,
)
from tile_artifacts.compare import compare_runs

Samples = Callable[..., list[float]]


def _report(samples: list[float], reference: list[float], *, cold: bool) -> Report:
    return Report(
        producer=Producer(tool_name="tile", tool_version="0"),
        run=RunInfo(
            run_id="bench-20250131T120000Z-0123abcd",
            created_at=utc_now(),
            status="success",
            output_directory="/tmp",
        ),
        device=DeviceRecord(device_kind="cpu"),
        summary=ReportSummary(title="t", status="success", headline="h"),
        cases=[
            CaseRecord(
                case_id="k[a=1]",
                kernel="k",
                status="success",
                timer="wall",
                cold=cold,
                samples=samples,
                reference=ReferenceRecord(samples=reference),
            )
        ],
    )


def test_cold_against_warm_is_judged_when_asked(sample_factory: Samples) -> None:
    # Cold caches slow the kernel and its reference alike, by 3x.
    warm = _report(sample_factory(1e-3, seed=1), sample_factory(2e-3, seed=2), cold=False)
    cold = _report(sample_factory(3e-3, seed=3), sample_factory(6e-3, seed=4), cold=True)

    refused = compare_runs(warm, cold, basis="absolute").rows[0]
    assert refused.judgement == "not_comparable"

    (row,) = compare_runs(warm, cold, basis="absolute", variants=True).rows
    assert row.judgement == "regression"
    assert row.ratio is not None and 2.9 < row.ratio < 3.1
    # The reference moved with the variant: that is its effect, not noise that widens the floor.
    assert row.reason is not None and "noise floor" not in row.reason
    assert row.reason.endswith("warm against cold, as asked")


def test_variants_still_refuse_another_timer(sample_factory: Samples) -> None:
    base = _report(sample_factory(1e-3), [], cold=False)
    other = base.model_copy(
        update={"cases": [base.cases[0].model_copy(update={"timer": "batched"})]}
    )
    (row,) = compare_runs(base, other, variants=True).rows
    assert (row.judgement, row.reason) == ("not_comparable", "timer differs: `wall` vs `batched`")


def test_unchanged_case_between_variants_is_neutral(sample_factory: Samples) -> None:
    a = _report(sample_factory(1e-3, seed=1), [], cold=False)
    b = _report(sample_factory(1e-3, seed=2), [], cold=False)
    (row,) = compare_runs(a, b, basis="absolute", variants=True).rows
    assert row.judgement in ("neutral", "inconclusive")
    assert isinstance(b.cases[0], CaseRecord)
