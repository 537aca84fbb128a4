"""Comparison relative to the reference: per-sample ratios of interleaved timings."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

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
    utc_now,
)
from tile_artifacts._read import DecodeIssue, decode_document
from tile_artifacts.compare import (
    Baseline,
    ComparisonDoc,
    ComparisonRow,
    baseline_from_report,
    baseline_from_reports,
    compare_runs,
    render_comparison_markdown,
)

Samples = Callable[..., list[float]]
CASE = "k[a=1]"
RELATIVE = "relative to its reference, timed interleaved"


def _run(
    kernel: Sequence[float], reference: Sequence[float] | None, *, interleaved: bool = True
) -> Report:
    ref = None
    if reference is not None:
        ref = ReferenceRecord(samples=list(reference), interleaved=interleaved)
    return Report(
        producer=Producer(tool_name="tile", tool_version="0.1.0"),
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
                case_id=CASE,
                kernel="k",
                status="success",
                timer="wall",
                cold=False,
                samples=list(kernel),
                reference=ref,
            )
        ],
    )


def _row(doc: ComparisonDoc) -> ComparisonRow:
    return next(r for r in doc.rows if r.case_id == CASE)


def _swinging(speed_seed: int, n: int = 200) -> list[float]:
    """A machine whose speed jumps between 1x and 1.6x for stretches of 20 samples."""
    return [1.6 if (i // 20 + speed_seed) % 3 == 0 else 1.0 for i in range(n)]


def _timed(sample_factory: Samples, center: float, speed: list[float], seed: int) -> list[float]:
    noise = sample_factory(center, n=len(speed), spread=0.02, seed=seed)
    return [x * s for x, s in zip(noise, speed, strict=True)]


def test_a_machine_slower_for_the_whole_run_is_neutral_relative(sample_factory: Samples) -> None:
    # The reference moved with the kernel, within its own noise: relative times judge.
    base = _run(
        sample_factory(1e-3, n=100, spread=0.02, seed=1),
        sample_factory(2e-3, n=100, spread=0.02, seed=2),
    )
    slow = 1.01
    cur = _run(
        [slow * x for x in sample_factory(1e-3, n=100, spread=0.02, seed=3)],
        [slow * x for x in sample_factory(2e-3, n=100, spread=0.02, seed=4)],
    )
    row = _row(compare_runs(base, cur))  # basis auto: both sides interleaved
    assert row.basis == "relative"
    assert row.judgement == "neutral"
    assert row.ratio is not None and row.ratio == pytest.approx(1.0, abs=0.01)
    assert row.reason is not None and RELATIVE in row.reason
    # The absolute medians are still reported, and the ratios to the reference beside them.
    assert row.baseline_value == pytest.approx(1e-3, rel=0.02)
    assert row.current_value == pytest.approx(1.01e-3, rel=0.02)
    assert row.baseline_relative == pytest.approx(0.5, rel=0.02)
    assert row.current_relative is not None and row.baseline_relative is not None
    assert row.current_relative / row.baseline_relative == pytest.approx(row.ratio)


def test_a_reference_that_moved_beyond_its_noise_is_not_trusted(sample_factory: Samples) -> None:
    # Every sample of the current run, kernel and reference alike, is 1.6x slower: the machine
    # changed between the runs, and whether kernel and reference follow it alike cannot be
    # told from these two runs (issue 33: under a changed load they did not).
    base = _run(
        sample_factory(1e-3, n=100, spread=0.02, seed=1),
        sample_factory(2e-3, n=100, spread=0.02, seed=2),
    )
    slow = 1.6
    cur = _run(
        [slow * x for x in sample_factory(1e-3, n=100, spread=0.02, seed=3)],
        [slow * x for x in sample_factory(2e-3, n=100, spread=0.02, seed=4)],
    )
    row = _row(compare_runs(base, cur))  # basis auto: falls back to absolute times
    assert row.basis == "absolute" and row.baseline_relative is None
    assert row.judgement == "inconclusive"
    assert row.reason is not None
    assert (
        "judged on absolute times: the reference moved +59.9% between the runs, beyond its own noise"
        in row.reason
    )
    # Asked for relative times, the case is not judged on them.
    relative = _row(compare_runs(base, cur, basis="relative"))
    assert relative.judgement == "inconclusive" and relative.basis == "relative"
    assert relative.reason is not None and "compare it with `--basis absolute`" in relative.reason
    # On absolute times the kernel is 60% slower; only the reference's equal move keeps it from
    # being called a regression (and the case can then be judged at all).
    absolute = _row(compare_runs(base, cur, basis="absolute"))
    assert absolute.basis == "absolute"
    assert absolute.judgement == "inconclusive"
    assert absolute.reason is not None and "because the reference moved +59.9%" in absolute.reason
    # Without a reference to control for it, the absolute rule convicts the kernel.
    no_ref = _row(compare_runs(_run(base.cases[0].samples, None), _run(cur.cases[0].samples, None)))
    assert no_ref.basis == "absolute" and no_ref.judgement == "regression"


def test_a_kernel_only_slowdown_is_a_regression_relative(sample_factory: Samples) -> None:
    base = _run(
        sample_factory(1e-3, n=100, spread=0.02, seed=1),
        sample_factory(2e-3, n=100, spread=0.02, seed=2),
    )
    cur = _run(
        sample_factory(1.1e-3, n=100, spread=0.02, seed=3),
        sample_factory(2e-3, n=100, spread=0.02, seed=4),
    )
    row = _row(compare_runs(base, cur, basis="relative"))
    assert row.basis == "relative"
    assert row.judgement == "regression"
    assert row.ratio is not None and row.ratio == pytest.approx(1.1, abs=0.01)
    assert row.ratio_ci_low is not None and row.ratio_ci_low > 1.05
    assert row.reason is not None and row.reason.startswith("slower: +")
    assert RELATIVE in row.reason
    assert _row(compare_runs(cur, base)).judgement == "improvement"


def test_speed_swings_within_runs_cancel_in_the_pairs(sample_factory: Samples) -> None:
    # Both runs swing between 1x and 1.6x at different moments; the kernel is 10% slower in
    # the current one. Pairs saw the same speed, so their ratios still show the 10%.
    base_speed, cur_speed, again_speed = _swinging(0), _swinging(1), _swinging(2)
    base = _run(
        _timed(sample_factory, 1e-3, base_speed, 1), _timed(sample_factory, 2e-3, base_speed, 2)
    )
    cur = _run(
        _timed(sample_factory, 1.1e-3, cur_speed, 3), _timed(sample_factory, 2e-3, cur_speed, 4)
    )
    same = _run(
        _timed(sample_factory, 1e-3, again_speed, 5), _timed(sample_factory, 2e-3, again_speed, 6)
    )
    assert _row(compare_runs(base, cur)).judgement == "regression"
    assert _row(compare_runs(base, same)).judgement == "neutral"
    # On absolute times the swings are as large as the change: not a regression.
    assert _row(compare_runs(base, cur, basis="absolute")).judgement != "regression"
    # Break the pairing (reference samples in another order): the swings no longer cancel.
    cur_ref = _timed(sample_factory, 2e-3, cur_speed, 4)
    unpaired = _run(cur.cases[0].samples, list(reversed(cur_ref)))
    assert _row(compare_runs(base, unpaired)).judgement != "regression"


def test_auto_falls_back_to_absolute_and_relative_asks_for_pairs(sample_factory: Samples) -> None:
    kernel, ref = sample_factory(1e-3, n=50, seed=1), sample_factory(2e-3, n=50, seed=2)
    paired = _run(kernel, ref)
    old = _run(kernel, ref, interleaved=False)  # a run from before interleaved timing
    no_ref = _run(kernel, None)
    for other in (old, no_ref):
        assert _row(compare_runs(other, paired)).basis == "absolute"
        row = _row(compare_runs(other, paired, basis="relative"))
        assert row.judgement == "not_comparable" and row.basis is None
        assert row.reason == (
            "basis relative, but no reference samples timed interleaved in baseline"
        )
    # Interleaved, but not as many reference samples as kernel samples: cannot pair up.
    short = _run(kernel, ref[:-1])
    assert _row(compare_runs(paired, short)).basis == "absolute"
    # The reference's own times are compared as they are.
    ref_row = _row(compare_runs(paired, paired, metric="ref_time_s", basis="relative"))
    assert ref_row.basis == "absolute" and ref_row.judgement == "neutral"


def test_too_few_pairs_say_their_basis(sample_factory: Samples) -> None:
    few = _run(sample_factory(1e-3, n=3, seed=1), sample_factory(2e-3, n=3, seed=2))
    row = _row(compare_runs(few, few))
    assert row.judgement == "inconclusive" and row.basis == "relative"
    assert row.reason == f"too few samples (3 baseline, 3 current; need 5); {RELATIVE}"


def test_baselines_keep_the_pairing(sample_factory: Samples) -> None:
    base = _run(sample_factory(1e-3, n=60, seed=1), sample_factory(2e-3, n=60, seed=2))
    saved = baseline_from_report(base)
    assert saved.cases[0].reference_interleaved is True
    cur = _run(sample_factory(1.2e-3, n=60, seed=3), sample_factory(2e-3, n=60, seed=4))
    row = _row(compare_runs(saved, cur))
    assert row.basis == "relative" and row.judgement == "regression"


def test_basis_is_recorded_validated_and_rendered(sample_factory: Samples) -> None:
    run = _run(sample_factory(1e-3, n=30, seed=1), sample_factory(2e-3, n=30, seed=2))
    doc = compare_runs(run, run, basis="relative")
    assert doc.thresholds.basis == "relative"
    markdown = render_comparison_markdown(doc)
    assert "basis relative; false discoveries held over 1 case," in markdown.splitlines()[0]
    assert "| basis |" in markdown and "| relative |" in markdown
    with pytest.raises(ArtifactError, match="unknown comparison basis `relativ`"):
        compare_runs(run, run, basis="relativ")  # pyright: ignore[reportArgumentType]  (the typo is the point)


def test_files_without_the_new_keys_still_pass_the_check(sample_factory: Samples) -> None:
    run = _run(sample_factory(1e-3, n=30, seed=1), sample_factory(2e-3, n=30, seed=2))
    report = json.loads(run.model_dump_json())
    del report["cases"][0]["reference"]["interleaved"]
    old = decode_document(json.dumps(report), mode="check")
    assert isinstance(old, Report)
    assert old.cases[0].reference is not None and old.cases[0].reference.interleaved is False
    baseline = json.loads(baseline_from_report(run).model_dump_json())
    del baseline["cases"][0]["reference_interleaved"]
    old_baseline = decode_document(json.dumps(baseline), mode="check")
    assert isinstance(old_baseline, Baseline)
    assert old_baseline.cases[0].reference_interleaved is False
    comparison = json.loads(compare_runs(run, run).model_dump_json())
    del comparison["thresholds"]["basis"]
    del comparison["rows"][0]["basis"]
    doc = decode_document(json.dumps(comparison), mode="check")
    assert isinstance(doc, ComparisonDoc) and doc.rows[0].basis is None
    # Every other key is still required.
    del report["cases"][0]["reference"]["speedup"]
    with pytest.raises(DecodeIssue) as info:
        decode_document(json.dumps(report), mode="check")
    assert any("missing key(s) speedup" in m for m in info.value.messages)


def _pinned(report: Report, core: int | None = 3) -> Report:
    return report.model_copy(
        update={"context": report.context.model_copy(update={"pinned_cpu": core})}
    )


def _with_odd_block(sample_factory: Samples, center: float, seed: int) -> list[float]:
    """200 kernel times around `center`, the last 30 of them 30% fast (one odd stretch)."""
    xs = sample_factory(center, n=200, spread=0.04, seed=seed)
    return xs[:170] + [x * 0.7 for x in xs[170:]]


def test_pinned_runs_judge_a_slowdown_despite_one_odd_stretch(sample_factory: Samples) -> None:
    ref = sample_factory(1e-3, n=200, spread=0.04, seed=50)
    base = _run(_with_odd_block(sample_factory, 1e-3, 1), ref)
    slower = _run(_with_odd_block(sample_factory, 1.1e-3, 2), ref)
    # Not pinned: the odd stretch counts as drift of ~30% and the +10% stays inconclusive.
    loose = _row(compare_runs(base, slower))
    assert loose.judgement == "inconclusive"
    # Pinned on both sides: the block bootstrap sees one odd block move the median a little.
    row = _row(compare_runs(_pinned(base), _pinned(slower)))
    assert row.judgement == "regression"
    assert row.reason is not None and row.reason.endswith("block bootstrap CI")
    assert row.ratio_ci_low is not None and 1.05 < row.ratio_ci_low < 1.1
    # One side unpinned: the conservative rule again.
    assert _row(compare_runs(base, _pinned(slower))).judgement == "inconclusive"
    # A baseline file keeps the pinning.
    saved = baseline_from_report(_pinned(base))
    assert saved.pinned_cpu == 3
    assert _row(compare_runs(saved, _pinned(slower))).judgement == "regression"


def test_pinned_runs_of_the_same_code_are_not_a_regression(sample_factory: Samples) -> None:
    ref = sample_factory(1e-3, n=200, spread=0.04, seed=60)
    # The same code twice; the current run wanders: its second half 3% slower than its first.
    base = _run(sample_factory(1e-3, n=200, spread=0.04, seed=3), ref)
    drifting = [
        x * (1.03 if i >= 100 else 1.0)
        for i, x in enumerate(sample_factory(1e-3, n=200, spread=0.04, seed=4))
    ]
    row = _row(compare_runs(_pinned(base), _pinned(_run(drifting, ref))))
    assert row.judgement != "regression"
    # The block CI is wider than the per-sample one would be.
    plain = _row(compare_runs(base, _run(drifting, ref), basis="relative"))
    assert row.ratio_ci_low is not None and plain.ratio_ci_low is not None
    assert row.ratio_ci_high is not None and plain.ratio_ci_high is not None
    assert row.ratio_ci_high - row.ratio_ci_low >= plain.ratio_ci_high - plain.ratio_ci_low


def _in_rounds(
    sample_factory: Samples, center: float, levels: Sequence[float], seed: int
) -> tuple[list[float], list[int]]:
    """30 samples a round around center * level: rounds that each saw the machine differently."""
    rounds = [
        sample_factory(center * level, n=30, spread=0.02, seed=seed * 100 + i)
        for i, level in enumerate(levels)
    ]
    return [x for r in rounds for x in r], [len(r) for r in rounds]


def _rounds_run(samples: tuple[list[float], list[int]], reference: list[float] | None) -> Report:
    report = _run(samples[0], reference)
    case = report.cases[0].model_copy(update={"round_sizes": samples[1]})
    return report.model_copy(update={"cases": [case]})


def test_runs_in_rounds_take_their_ci_from_the_scatter_between_rounds(
    sample_factory: Samples,
) -> None:
    # Rounds that landed at levels 8% apart: a 5% shift of the overall median is within that.
    base = _in_rounds(sample_factory, 1e-3, [1.0, 1.08, 1.0, 1.08, 1.0, 1.08], 1)
    cur = _in_rounds(sample_factory, 1e-3, [1.08, 1.08, 1.08, 1.0, 1.08, 1.08], 2)
    plain = _row(compare_runs(_run(base[0], None), _run(cur[0], None)))
    row = _row(compare_runs(_rounds_run(base, None), _rounds_run(cur, None)))
    assert row.reason is not None and row.reason.endswith("CI from 6 and 6 rounds")
    assert row.judgement != "regression"
    # Without rounds, blocks of each run see the same scatter (a little less well).
    assert plain.reason is not None and "blocks of one run each" in plain.reason
    assert plain.judgement != "regression"
    # Steady rounds: a 10% slowdown is a regression, with a CI that is not needlessly wide.
    steady = _in_rounds(sample_factory, 1e-3, [1.0] * 6, 3)
    slower = _in_rounds(sample_factory, 1.1e-3, [1.0] * 6, 4)
    row = _row(compare_runs(_rounds_run(steady, None), _rounds_run(slower, None)))
    assert row.judgement == "regression"
    assert row.ratio_ci_low is not None and row.ratio_ci_high is not None
    assert row.ratio_ci_low > 1.07 and row.ratio_ci_high < 1.13


def test_rounds_pair_with_the_reference_and_need_three_on_each_side(
    sample_factory: Samples,
) -> None:
    steady = _in_rounds(sample_factory, 1e-3, [1.0] * 4, 5)
    slower = _in_rounds(sample_factory, 1.1e-3, [1.0] * 4, 6)
    reference = sample_factory(1e-3, n=120, spread=0.02, seed=7)
    row = _row(compare_runs(_rounds_run(steady, reference), _rounds_run(slower, reference)))
    assert row.basis == "relative" and row.judgement == "regression"
    assert row.reason is not None and row.reason.endswith(
        f"{RELATIVE}; p and CI from 4 and 4 rounds"
    )
    # Two rounds are too few to estimate a scatter: the rule for runs in one go applies.
    two = (slower[0][:60], [30, 30])
    row = _row(compare_runs(_rounds_run(steady, reference), _rounds_run(two, reference[:60])))
    assert row.reason is not None and "blocks of one run each" in row.reason
    # A baseline file keeps the rounds.
    saved = baseline_from_report(_rounds_run(steady, reference))
    assert saved.cases[0].round_sizes == steady[1]


def test_round_sizes_must_add_up_to_the_samples(sample_factory: Samples) -> None:
    samples = sample_factory(1e-3, n=90, spread=0.02, seed=8)
    report = _run(samples, None)
    data = json.loads(report.model_dump_json())
    data["cases"][0]["round_sizes"] = [30, 30, 20]
    with pytest.raises(ValueError, match="adding up to the 90 samples"):
        Report.model_validate(data)


def _rerun(report: Report, seed: int) -> Report:
    """The same report under another run id: pooling refuses one run given twice."""
    run = report.run.model_copy(update={"run_id": f"bench-20250131T120000Z-{seed:08x}"})
    return report.model_copy(update={"run": run})


def _at_level(sample_factory: Samples, level: float, seed: int) -> Report:
    """One run of 60 samples around 1 ms * level: a process that landed at its own speed."""
    return _rerun(_run(sample_factory(1e-3 * level, n=60, spread=0.02, seed=seed), None), seed)


def test_a_pooled_baseline_judges_against_the_spread_between_its_runs(
    sample_factory: Samples,
) -> None:
    # Processes of the same code that landed 10% apart; the next one lands 8% above the mean.
    runs = [_at_level(sample_factory, lv, i) for i, lv in enumerate([1.0, 1.1, 0.95, 1.05])]
    pooled = baseline_from_reports(runs)
    [case] = pooled.cases
    assert case.run_sizes == [60] * 4 and case.stats is not None and case.stats.n == 240
    assert pooled.run_ids == [r.run.run_id for r in runs]
    current = _at_level(sample_factory, 1.1, 9)
    row = _row(compare_runs(pooled, current))
    assert row.judgement != "regression"
    assert row.reason is not None and row.reason.endswith(
        "CI from the spread of 4 and 1 runner processes"
    )
    # Against one of those runs alone, the per-sample CI calls the same move a regression.
    assert _row(compare_runs(runs[0], current)).judgement == "regression"
    # Steady processes: a 15% slowdown stands out from their spread.
    steady = baseline_from_reports([_at_level(sample_factory, 1.0, 20 + i) for i in range(4)])
    assert _row(compare_runs(steady, _at_level(sample_factory, 1.15, 30))).judgement == "regression"


def test_only_runs_of_one_device_and_timer_pool(sample_factory: Samples) -> None:
    run = _at_level(sample_factory, 1.0, 1)
    gpu = run.model_copy(update={"device": DeviceRecord(device_kind="NVIDIA H200")})
    with pytest.raises(ArtifactError, match="different devices"):
        baseline_from_reports([run, gpu])
    batched = _rerun(run, 2).model_copy(
        update={"cases": [run.cases[0].model_copy(update={"timer": "batched"})]}
    )
    with pytest.raises(ArtifactError, match="timed differently"):
        baseline_from_reports([run, batched])
    with pytest.raises(ArtifactError, match="no runs"):
        baseline_from_reports([])
    # Runs of whole rounds pool with their rounds; run boundaries must fall between rounds.
    rounds = _rounds_run(_in_rounds(sample_factory, 1e-3, [1.0] * 3, 2), None)
    pooled = baseline_from_reports([rounds, _rerun(rounds, 3)])
    assert pooled.cases[0].round_sizes == [30] * 6 and pooled.cases[0].run_sizes == [90, 90]
    data = json.loads(pooled.model_dump_json())
    data["cases"][0]["run_sizes"] = [45, 135]
    with pytest.raises(ValueError, match="round boundaries"):
        Baseline.model_validate(data)


def test_a_round_without_a_positive_median_is_not_comparable(sample_factory: Samples) -> None:
    # A timer that read 0 for a whole round: no time is 0, so the baseline is corrupt. The row
    # says so (and points at schema-check) instead of raising or judging from it.
    steady = _in_rounds(sample_factory, 1e-3, [1.0] * 4, 9)
    zeroed = ([0.0] * 30 + steady[0][30:], steady[1])
    row = _row(compare_runs(_rounds_run(zeroed, None), _rounds_run(steady, None)))
    assert row.judgement == "not_comparable"
    assert row.reason is not None
    assert row.reason.startswith("baseline has zero or negative times (sample 0 is 0.0)")
