"""Comparison: judgements on synthetic samples, the exact rule, summary and Markdown."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tile_artifacts import (
    ArtifactError,
    CaseRecord,
    DeviceRecord,
    Producer,
    ReferenceRecord,
    Report,
    ReportSummary,
    RunInfo,
    Timer,
    utc_now,
)
from tile_artifacts.check import check_path
from tile_artifacts.compare import (
    Baseline,
    ComparisonDoc,
    ComparisonRow,
    baseline_from_report,
    baseline_from_reports,
    compare_runs,
    judge,
    read_comparison,
    render_comparison_markdown,
)
from tile_stats import within_run_drift

Samples = Callable[..., list[float]]
PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")


def _report(
    cases: dict[str, list[float]],
    *,
    device: str = "NVIDIA H200",
    timer: Timer = "cupti",
    cold: bool = False,
    run_id: str = "bench-20250131T120000Z-0123abcd",
    references: dict[str, list[float]] | None = None,
) -> Report:
    refs = references or {}
    return Report(
        producer=PRODUCER,
        run=RunInfo(run_id=run_id, created_at=utc_now(), status="success", output_directory="/tmp"),
        device=DeviceRecord(device_kind=device),
        summary=ReportSummary(title="t", status="success", headline="h"),
        cases=[
            CaseRecord(
                case_id=k,
                kernel="k",
                status="success",
                timer=timer,
                cold=cold,
                samples=xs,
                reference=ReferenceRecord(samples=refs[k]) if k in refs else None,
            )
            for k, xs in cases.items()
        ],
    )


def _row(doc: ComparisonDoc, case_id: str = "k[a=1]") -> ComparisonRow:
    return next(r for r in doc.rows if r.case_id == case_id)


def test_same_distribution_is_neutral(sample_factory: Samples) -> None:
    base = _report({"k[a=1]": sample_factory(1e-3, n=50, spread=0.05, seed=1)})
    cur = _report({"k[a=1]": sample_factory(1e-3, n=50, spread=0.05, seed=2)})
    row = _row(compare_runs(base, cur))
    assert row.judgement in ("neutral", "inconclusive")
    assert row.ratio is not None and 0.97 < row.ratio < 1.03


def test_one_and_a_half_times_slower_is_a_regression(sample_factory: Samples) -> None:
    base = _report({"k[a=1]": sample_factory(1e-3, n=30, spread=0.05, seed=1)})
    cur = _report({"k[a=1]": sample_factory(1.5e-3, n=30, spread=0.05, seed=2)})
    doc = compare_runs(base, cur)
    row = _row(doc)
    assert row.judgement == "regression"
    assert row.ratio is not None and row.ratio == pytest.approx(1.5, rel=0.03)
    assert row.ratio_ci_low is not None and row.ratio_ci_low > 1.02
    assert row.p_value is not None and row.p_value < 0.05
    assert row.percent_change == pytest.approx((row.ratio - 1) * 100)
    assert (row.baseline_value or 0) < (row.current_value or 0)
    assert doc.summary.regression_count == 1 and doc.summary.status == "failed"
    assert doc.run.status == "failed" and doc.run.run_id.startswith("compare-")


def test_faster_is_an_improvement(sample_factory: Samples) -> None:
    base = _report({"k[a=1]": sample_factory(1e-3, n=30, spread=0.05, seed=1)})
    cur = _report({"k[a=1]": sample_factory(0.7e-3, n=30, spread=0.05, seed=2)})
    doc = compare_runs(base, cur)
    assert _row(doc).judgement == "improvement"
    assert doc.summary.improvement_count == 1 and doc.summary.status == "success"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"device": "NVIDIA A100"}, "device kind differs: `NVIDIA H200` vs `NVIDIA A100`"),
        ({"timer": "wall"}, "timer differs: `cupti` vs `wall`"),
        ({"cold": True}, "mode differs: warm vs cold"),
    ],
)
def test_different_setup_is_not_comparable(
    sample_factory: Samples, change: dict[str, Any], reason: str
) -> None:
    xs = sample_factory(1e-3, n=30)
    doc = compare_runs(_report({"k[a=1]": xs}), _report({"k[a=1]": [x * 2 for x in xs]}, **change))
    row = _row(doc)
    assert (row.judgement, row.reason, row.ratio) == ("not_comparable", reason, None)
    assert doc.summary.status == "partial"


def test_a_baseline_from_another_cpu_model_is_not_comparable(sample_factory: Samples) -> None:
    # Every CPU's kind is `cpu`: the model and core count tell two machines apart (issue 40).
    xs = sample_factory(1e-3, n=30)

    def on(model: str | None, samples: list[float]) -> Report:
        report = _report({"k[a=1]": samples}, device="cpu", timer="wall")
        return report.model_copy(update={"device": DeviceRecord(device_kind="cpu", model=model)})

    epyc, xeon = "AMD EPYC 7B13, 2 cores", "Intel(R) Xeon(R) CPU @ 2.20GHz, 8 cores"
    row = _row(compare_runs(on(epyc, xs), on(xeon, xs)))
    assert (row.judgement, row.ratio) == ("not_comparable", None)
    assert row.reason == f"device kind differs: `cpu ({epyc})` vs `cpu ({xeon})`"
    # The same model, or a side recorded before tile kept the model: judged by kind alone.
    for base_model in (xeon, None):
        same = _row(compare_runs(on(base_model, xs), on(xeon, xs)))
        assert same.judgement in ("neutral", "inconclusive")
    with pytest.raises(ArtifactError, match="different devices"):
        baseline_from_reports([on(epyc, xs), on(xeon, xs)])


def test_missing_or_few_samples(sample_factory: Samples) -> None:
    base = _report(
        {"k[a=1]": [], "k[a=2]": sample_factory(1e-3, n=4), "k[a=3]": sample_factory(1e-3)}
    )
    cur = _report(
        {
            "k[a=1]": sample_factory(1e-3),
            "k[a=2]": sample_factory(2e-3, n=30),
            "k[a=3]": sample_factory(1e-3),
        }
    )
    doc = compare_runs(base, cur)
    assert (_row(doc, "k[a=1]").judgement, _row(doc, "k[a=1]").reason) == (
        "not_comparable", "no raw samples in baseline",
    )  # fmt: skip
    assert _row(doc, "k[a=2]").judgement == "inconclusive"
    assert _row(doc, "k[a=2]").reason == "too few samples (4 baseline, 30 current; need 5)"


def test_added_and_removed_cases(sample_factory: Samples) -> None:
    base = _report({"k[a=1]": sample_factory(1e-3), "k[old=1]": sample_factory(1e-3)})
    cur = _report({"k[a=1]": sample_factory(1e-3), "k[new=1]": sample_factory(2e-3)})
    doc = compare_runs(base, cur)
    added, removed = _row(doc, "k[new=1]"), _row(doc, "k[old=1]")
    assert (added.judgement, added.reason, added.baseline_value) == (
        "not_comparable",
        "added",
        None,
    )
    assert (removed.judgement, removed.reason, removed.current_value) == (
        "not_comparable",
        "removed",
        None,
    )
    assert doc.summary.not_comparable_count == 2


def test_baseline_against_report_and_deterministic_seed(sample_factory: Samples) -> None:
    base = baseline_from_report(_report({"k[a=1]": sample_factory(1e-3, seed=1)}), label="main")
    cur = _report({"k[a=1]": sample_factory(1.2e-3, seed=2)})
    assert isinstance(base, Baseline)
    first = compare_runs(base, cur, seed=7, run_id="compare-20250131T120000Z-0123abcd")
    again = compare_runs(base, cur, seed=7, run_id="compare-20250131T120000Z-0123abcd")
    assert first.rows == again.rows and first.baseline.label == "main"
    assert _row(first).judgement == "regression"


def test_bad_arguments() -> None:
    report = _report({})
    with pytest.raises(ArtifactError, match="bandwidth_gbps"):
        compare_runs(report, report, metric="bandwidth_gbps")
    with pytest.raises(ArtifactError, match="alpha"):
        compare_runs(report, report, alpha=1.5)
    assert compare_runs(report, report).summary.status == "skipped"


@pytest.mark.parametrize(
    ("ratio", "low", "high", "p", "expected"),
    [
        (1.10, 1.05, 1.15, 0.001, "regression"),
        (1.03, 1.021, 1.04, 0.001, "regression"),  # the whole CI beyond the floor
        (1.03, 1.005, 1.06, 0.01, "inconclusive"),  # point beyond the floor, CI reaches into it
        (1.03, 0.99, 1.06, 0.01, "inconclusive"),  # significant, but the CI reaches below 1
        (0.90, 0.85, 0.95, 0.001, "improvement"),
        (1.01, 1.005, 1.015, 0.001, "neutral"),  # significant but inside the noise band
        (1.00, 0.99, 1.03, 0.40, "neutral"),  # not significant, CI not beyond the floor
        (1.00, 0.80, 1.30, 0.40, "inconclusive"),  # CI straddles the whole band
        (1.10, 1.05, 1.15, 0.20, "inconclusive"),  # CI beyond the floor, U test not significant
    ],
)
def test_judgement_rule(ratio: float, low: float, high: float, p: float, expected: str) -> None:
    assert judge(ratio, low, high, p, noise_floor_pct=2.0, alpha=0.05)[0] == expected


@pytest.mark.parametrize(
    ("ratio", "low", "high", "drift", "expected"),
    [
        (1.10, 1.07, 1.13, 5.0, "regression"),  # beyond a floor widened to 5%
        (1.10, 1.07, 1.13, 8.0, "inconclusive"),  # as large as the drift seen: maybe drift
        (0.90, 0.87, 0.93, 5.0, "improvement"),
        (0.90, 0.87, 0.93, 8.0, "inconclusive"),
        (1.01, 0.99, 1.015, 8.0, "neutral"),  # inside the user's band whatever the drift
        (1.10, 1.07, 1.13, 1.0, "regression"),  # drift below the floor changes nothing
    ],
)
def test_drift_widens_the_floor(
    ratio: float, low: float, high: float, drift: float, expected: str
) -> None:
    judgement, reason = judge(
        ratio,
        low,
        high,
        1e-6,
        noise_floor_pct=2.0,
        alpha=0.05,
        drift_pct=drift,
        drift_source="the reference moved by that much",
    )
    assert judgement == expected
    widened = f"noise floor ±{drift:.1f}% because the reference moved by that much"
    assert (widened in reason) == (drift > 2.0 and expected != "neutral")


def test_a_reference_that_moved_too_makes_a_slowdown_inconclusive(sample_factory: Samples) -> None:
    # Kernel and reference both 6% slower in the current run: the machine, not the kernel.
    base = _report(
        {"k[a=1]": sample_factory(1e-3, n=200, seed=1)},
        references={"k[a=1]": sample_factory(2e-3, n=200, seed=3)},
    )
    drifted = _report(
        {"k[a=1]": sample_factory(1.06e-3, n=200, seed=2)},
        references={"k[a=1]": sample_factory(2.12e-3, n=200, seed=4)},
    )
    row = _row(compare_runs(base, drifted))
    assert row.judgement == "inconclusive"
    assert row.reason is not None
    assert "noise floor ±6.0% because the reference moved +6.0% between the runs" in row.reason
    # The same kernel change with a steady reference is a regression.
    steady = _report(
        {"k[a=1]": sample_factory(1.06e-3, n=200, seed=2)},
        references={"k[a=1]": sample_factory(2e-3, n=200, seed=4)},
    )
    assert _row(compare_runs(base, steady)).judgement == "regression"
    # A baseline file keeps the reference samples, so it gives the same verdict.
    saved = baseline_from_report(base)
    assert _row(compare_runs(saved, drifted)).judgement == "inconclusive"
    # Comparing the references themselves, they are not their own control.
    ref_row = _row(compare_runs(base, drifted, metric="ref_time_s"))
    assert ref_row.judgement == "regression"
    assert ref_row.reason is not None and "reference moved" not in ref_row.reason


def test_a_median_that_wandered_within_a_run_makes_a_slowdown_inconclusive(
    sample_factory: Samples,
) -> None:
    base = sample_factory(1e-3, n=200, spread=0.02, seed=1)
    # Current: 10% slower overall, but it crept from 1.0 ms to 1.2 ms during its run.
    crept = [1e-3 * (1 + 0.2 * i / 199) for i in range(200)]
    row = _row(compare_runs(_report({"k[a=1]": base}), _report({"k[a=1]": crept})))
    assert row.judgement == "inconclusive"
    assert row.ratio_ci_low is not None and row.ratio_ci_low > 1.02  # the CI alone would convict
    # Blocks 2-5 of 5 have medians 1.06, 1.10, 1.14 and 1.18 ms around a median of 1.10 ms:
    # a range of 11.0%, of which sampling noise (a steady ±2% within each block) explains 0.6%.
    assert row.reason is not None
    assert "the current median wandered 10.4% within its run" in row.reason
    # The very same samples in an order without a trend (a stride permutation): a regression.
    shuffled = [crept[i * 77 % 200] for i in range(200)]
    doc = compare_runs(_report({"k[a=1]": base}), _report({"k[a=1]": shuffled}))
    assert _row(doc).judgement == "regression"


def test_scatter_of_few_samples_a_block_is_not_drift(sample_factory: Samples) -> None:
    # 50 steady samples, uniform within ±15%: blocks of 10 have medians that differ by chance.
    steady = sample_factory(1e-3, n=50, spread=0.3, seed=5)
    medians = [statistics.median(steady[i : i + 10]) for i in range(10, 50, 10)]
    chance = (max(medians) - min(medians)) / statistics.median(steady)
    assert chance > 0.03
    drift = within_run_drift(steady)
    assert drift is not None
    assert drift < chance / 2
    # A real trend is still seen: +20% over the run, of which blocks 2-5 span about 12%.
    trend = [x * (1 + 0.2 * i / 49) for i, x in enumerate(sample_factory(1e-3, n=50, spread=0.02))]
    assert (within_run_drift(trend) or 0.0) > 0.08


def test_a_slow_start_does_not_count_as_drift(sample_factory: Samples) -> None:
    # The first 30 of 200 samples 50% slow (the end of a warm-up), on both sides: it cancels.
    def warming(center: float, seed: int) -> list[float]:
        xs = sample_factory(center, n=200, spread=0.02, seed=seed)
        return [x * 1.5 for x in xs[:30]] + xs[30:]

    base, cur = _report({"k[a=1]": warming(1e-3, 1)}), _report({"k[a=1]": warming(1.1e-3, 2)})
    row = _row(compare_runs(base, cur))
    assert row.judgement == "regression"
    assert row.reason is not None and "noise floor" not in row.reason


def test_too_few_samples_for_blocks_leave_the_floor_alone(sample_factory: Samples) -> None:
    # 20 samples: fewer than 5 per block, so no within-run drift is estimated.
    base = _report({"k[a=1]": sample_factory(1e-3, n=20, spread=0.01, seed=1)})
    cur = _report({"k[a=1]": sample_factory(1.2e-3, n=20, spread=0.01, seed=2)})
    row = _row(compare_runs(base, cur))
    assert row.judgement == "regression"
    assert row.reason is not None and "noise floor" not in row.reason


def test_comparison_document_validates_and_renders(sample_factory: Samples, tmp_path: Path) -> None:
    base = _report(
        {
            "k[a=1]": sample_factory(1e-3),
            "k[a=2]": sample_factory(1e-3),
            "k[a=3]": sample_factory(1e-3),
        }
    )
    cur = _report(
        {
            "k[a=1]": sample_factory(1e-3, seed=3),
            "k[a=2]": sample_factory(2e-3),
            "k[a=3]": sample_factory(0.5e-3),
        }
    )
    doc = compare_runs(base, cur, baseline_label="main", current_label="pr-42")
    path = tmp_path / "comparisons.json"
    path.write_text(doc.model_dump_json(indent=2))
    assert check_path(path) == [] and read_comparison(path) == doc
    markdown = render_comparison_markdown(doc)
    lines = markdown.splitlines()
    assert lines[0].startswith("**time_s: 1 regression(s), 1 improvement(s), 1 neutral")
    table = [line for line in lines if line.startswith("| `")]
    assert [row.split("`")[1] for row in table] == ["k[a=2]", "k[a=3]", "k[a=1]"]
    assert "🔴 regression" in table[0] and "+100.0%" in table[0] and "2.00 ms" in table[0]
