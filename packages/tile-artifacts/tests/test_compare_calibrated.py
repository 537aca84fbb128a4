"""The calibrated judge (issue 33): log space, tests on groups, a reference that drifted, and
false discoveries controlled across the cases of a run. Each test fails without its rule."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest

import tile_stats
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
from tile_artifacts._read import decode_document
from tile_artifacts.compare import (
    ComparisonDoc,
    baseline_from_reports,
    compare_runs,
    judge,
    render_comparison_markdown,
)

Samples = Callable[..., list[float]]


def _report(
    cases: dict[str, list[float]],
    references: dict[str, list[float]] | None = None,
    *,
    run_id: str = "bench-20250131T120000Z-0123abcd",
) -> Report:
    refs = references or {}
    return Report(
        producer=Producer(tool_name="tile", tool_version="0.1.0"),
        run=RunInfo(run_id=run_id, created_at=utc_now(), status="success", output_directory="/tmp"),
        device=DeviceRecord(device_kind="cpu"),
        summary=ReportSummary(title="t", status="success", headline="h"),
        cases=[
            CaseRecord(
                case_id=k,
                kernel=k.split("[", 1)[0],
                status="success",
                timer="wall",
                cold=False,
                samples=xs,
                reference=ReferenceRecord(samples=refs[k], interleaved=True) if k in refs else None,
            )
            for k, xs in cases.items()
        ],
    )


def _changes(doc: ComparisonDoc) -> list[str]:
    return [r.case_id for r in doc.rows if r.judgement in ("regression", "improvement")]


def _moods(sample_factory: Samples, slow_share: int, seed: int) -> list[float]:
    """240 samples of a machine that is 1.25x slower for `slow_share` of every 3 stretches of
    20 samples: identical code, caught in a slower or a faster mood."""
    xs = sample_factory(1e-3, n=240, spread=0.02, seed=seed)
    return [x * (1.25 if (i // 20) % 3 < slow_share else 1.0) for i, x in enumerate(xs)]


def test_identical_samples_never_change(sample_factory: Samples) -> None:
    cases = {f"k[i={i}]": sample_factory(1e-3 * (1 + i), n=40 + 7 * i, spread=0.3, seed=i)
             for i in range(12)}  # fmt: skip
    refs = {k: sample_factory(2e-3, n=len(xs), spread=0.3, seed=100 + i)
            for i, (k, xs) in enumerate(cases.items())}  # fmt: skip
    run = _report(cases, refs)
    for basis in ("auto", "absolute", "relative"):
        doc = compare_runs(run, run, basis=basis)
        assert {r.judgement for r in doc.rows} <= {"neutral", "inconclusive"}, basis
        assert all(r.ratio == 1.0 and r.p_value == 1.0 for r in doc.rows)


def test_a_23x_speedup_over_a_floor_above_100_percent_is_an_improvement() -> None:
    # The case: a real 23x speed-up called "inconclusive, noise floor ±154%". On a
    # linear scale no improvement can get below 1 - 1.54 < 0; as log ratios it is far beyond.
    verdict, reason = judge(1 / 23, 1 / 25, 1 / 21, 1e-6, noise_floor_pct=2.0, alpha=0.05,
                            drift_pct=154.0, drift_source="the reference moved -60.6%")  # fmt: skip
    assert verdict == "improvement"
    assert "(23.0x faster)" in reason and "noise floor ±154.0%" in reason
    # Faster and slower weigh alike: 1.7x either way beyond a ±60% floor.
    for ratio, way in ((1.7, "regression"), (1 / 1.7, "improvement")):
        low, high = ratio * 0.98, ratio * 1.02
        assert judge(ratio, low, high, 1e-6, noise_floor_pct=2.0, alpha=0.05,
                     drift_pct=60.0)[0] == way  # fmt: skip
    # And through compare_runs: the machine 2.54x slower (the reference says so), the kernel
    # 23x faster in absolute times.
    base = _report({"k[a=1]": [1e-3 * (1 + 0.01 * (i % 7)) for i in range(60)]},
                   {"k[a=1]": [1e-3 * (1 + 0.01 * (i % 5)) for i in range(60)]})  # fmt: skip
    cur = _report({"k[a=1]": [x * 2.54 / 23 for x in base.cases[0].samples]},
                  {"k[a=1]": [x * 2.54 for x in base.cases[0].reference.samples]})  # type: ignore[union-attr]  # fmt: skip
    [row] = compare_runs(base, cur, basis="absolute").rows
    assert row.judgement == "improvement", row.reason
    assert (
        row.reason is not None and "noise floor ±154.0% because the reference moved" in row.reason
    )


def test_the_p_value_comes_from_groups_not_from_pooled_samples(sample_factory: Samples) -> None:
    # Identical code; the machine was slow a third of the time in one run and two thirds in
    # the other. The pooled samples differ beyond doubt (Mann-Whitney p tiny), yet samples taken
    # together share the machine's mood: the blocks' medians are what varies, and they say how
    # little two such runs can tell.
    base, cur = _moods(sample_factory, 1, 1), _moods(sample_factory, 2, 2)
    [row] = compare_runs(_report({"k[a=1]": base}), _report({"k[a=1]": cur})).rows
    _, pooled_p = tile_stats.mann_whitney_u(base, cur)
    assert pooled_p < 1e-6
    assert row.p_value is not None and row.p_value > 0.01
    assert row.reason is not None and "blocks of one run each" in row.reason
    assert row.judgement == "inconclusive"


def test_a_drifting_reference_falls_back_to_absolute_times(sample_factory: Samples) -> None:
    # The load changed between the runs: the reference got 40% slower, the kernel 70% slower
    # (it responds to load differently). Per-sample ratios say "+21%, p tiny"; they cannot be
    # trusted, and on absolute times the change is within what the machine moved.
    kernel = sample_factory(1e-3, n=120, spread=0.02, seed=1)
    reference = sample_factory(1e-3, n=120, spread=0.02, seed=2)
    base = _report({"k[a=1]": kernel}, {"k[a=1]": reference})
    cur = _report({"k[a=1]": [x * 1.7 for x in sample_factory(1e-3, n=120, spread=0.02, seed=3)]},
                  {"k[a=1]": [x * 1.4 for x in sample_factory(1e-3, n=120, spread=0.02, seed=4)]})  # fmt: skip
    [row] = compare_runs(base, cur).rows
    assert row.basis == "absolute" and row.judgement == "inconclusive"
    assert row.reason is not None and "the reference moved +40." in row.reason
    assert "beyond its own noise" in row.reason
    [forced] = compare_runs(base, cur, basis="relative").rows
    assert forced.judgement == "inconclusive" and forced.ratio is None
    # A reference that stayed within its noise keeps the relative basis.
    steady = _report({"k[a=1]": sample_factory(1.3e-3, n=120, spread=0.02, seed=5)},
                     {"k[a=1]": sample_factory(1e-3, n=120, spread=0.02, seed=6)})  # fmt: skip
    [row] = compare_runs(base, steady).rows
    assert row.basis == "relative" and row.judgement == "regression"


def test_a_pooled_baseline_does_not_hide_a_drifted_reference(sample_factory: Samples) -> None:
    # Three steady runs pooled: their spread is tight. The current run's machine is 45% slower
    # (the reference says so) and its kernel 50%: the runs' spread did not see that move.
    runs = [
        _report({"k[a=1]": sample_factory(1e-3, n=60, spread=0.02, seed=i)},
                {"k[a=1]": sample_factory(1e-3, n=60, spread=0.02, seed=10 + i)},
                run_id=f"bench-20250131T120000Z-0000000{i}")
        for i in range(3)
    ]  # fmt: skip
    cur = _report({"k[a=1]": [1.5 * x for x in sample_factory(1e-3, n=60, spread=0.02, seed=7)]},
                  {"k[a=1]": [1.45 * x for x in sample_factory(1e-3, n=60, spread=0.02, seed=8)]})  # fmt: skip
    [row] = compare_runs(baseline_from_reports(runs), cur).rows
    assert row.basis == "absolute" and row.judgement == "inconclusive", row.reason
    assert row.reason is not None and "spread of 3 and 1 runner processes" in row.reason
    assert "noise floor ±109.7% because the reference moved +44.8%" in row.reason


def _pooled_runs(sample_factory: Samples, levels: dict[str, list[float]]) -> list[Report]:
    """One report per run: each case's samples around its level in that run."""
    runs = len(next(iter(levels.values())))
    return [
        _report({k: sample_factory(1e-3 * lv[r], n=40, spread=0.02, seed=100 * r + i)
                 for i, (k, lv) in enumerate(levels.items())},
                run_id=f"bench-20250131T120000Z-0000000{r}")
        for r in range(runs)
    ]  # fmt: skip


def test_a_pooled_baseline_lends_each_case_the_spread_of_the_others(
    sample_factory: Samples,
) -> None:
    # Three runs on a machine whose speed differs by 10-15% between them; every case follows
    # it with a little of its own. `calm` came out alike in all three by chance, `wild` spread
    # wide. Then a run 12% slower, with `wild` made 3x slower.
    machine = [1.0, 1.15, 0.9]
    levels = {f"k[i={i}]": [m * (1 + 0.01 * ((i + r) % 3 - 1)) for r, m in enumerate(machine)]
              for i in range(8)}  # fmt: skip
    levels |= {"k[calm]": [1.0, 1.0, 1.0], "k[wild]": [0.75, 1.0, 1.35]}
    base = baseline_from_reports(_pooled_runs(sample_factory, levels))
    now = {k: [1.12 * (3.0 if k == "k[wild]" else 1.0)] for k in levels}
    [cur] = _pooled_runs(sample_factory, now)
    rows = {r.case_id: r for r in compare_runs(base, cur).rows}
    # Alone, `calm`'s three runs would call the machine's 12% a regression, and `wild`'s spread
    # would hide a 3x slowdown; beside the other cases' runs, neither happens.
    assert rows["k[calm]"].judgement == "inconclusive", rows["k[calm]"].reason
    assert rows["k[wild]"].judgement == "regression", rows["k[wild]"].reason
    assert "spread of 3 and 1 runner processes, moderated by 10 cases' runs" in (
        rows["k[calm]"].reason or ""
    )
    # Below 8 cases with runs there is nothing to lend: each case stands on its own three.
    few = {k: levels[k] for k in ("k[i=0]", "k[calm]", "k[wild]")}
    base = baseline_from_reports(_pooled_runs(sample_factory, few))
    [cur] = _pooled_runs(sample_factory, {k: now[k] for k in few})
    rows = {r.case_id: r for r in compare_runs(base, cur).rows}
    assert rows["k[calm]"].judgement == "regression", rows["k[calm]"].reason
    assert rows["k[wild]"].judgement != "regression", rows["k[wild]"].reason
    assert "moderated" not in (rows["k[calm]"].reason or "")


def _same_code_cases(sample_factory: Samples, m: int, seed: int) -> dict[str, list[float]]:
    return {f"k[i={i}]": sample_factory(1e-3, n=90, spread=0.2, seed=seed * 10_000 + i)
            for i in range(m)}  # fmt: skip


def test_many_identical_cases_give_no_discovery(sample_factory: Samples) -> None:
    # 400 cases of identical code: about 5% of them have p < 0.05 by chance. Judged each at
    # alpha alone they would be changes (the noise floor off); adjusted over the run, none is.
    base = _report(_same_code_cases(sample_factory, 400, 1))
    cur = _report(_same_code_cases(sample_factory, 400, 2))
    doc = compare_runs(base, cur, noise_floor_pct=0.0)
    per_case = [
        r.case_id
        for r in doc.rows
        if r.p_value is not None and r.p_value < 0.05
        and r.ratio_ci_low is not None and r.ratio_ci_high is not None
        and (r.ratio_ci_low > 1 or r.ratio_ci_high < 1)
    ]  # fmt: skip
    assert len(per_case) >= 5
    assert _changes(doc) == []
    control = doc.summary.false_discoveries
    assert control is not None and control.method == "benjamini_hochberg" and control.cases == 400
    # One real 2x slowdown among them still stands out.
    slowed = dict(cur.cases[0].model_dump(), samples=[2 * x for x in cur.cases[0].samples])
    cur = cur.model_copy(update={"cases": [CaseRecord.model_validate(slowed), *cur.cases[1:]]})
    assert _changes(compare_runs(base, cur, noise_floor_pct=0.0)) == ["k[i=0]"]


def test_a_run_of_part_of_the_baseline_is_judged_as_strictly(sample_factory: Samples) -> None:
    # pytest judges one benchmark at a time: the baseline's other cases count in the family as
    # unchanged, so one case is held to what it would be in the whole run, not to alpha alone.
    base = _report(_same_code_cases(sample_factory, 50, 3))
    one = _report({"k[i=0]": [x * 1.04 for x in sample_factory(1e-3, n=90, spread=0.2, seed=9)]})
    doc = compare_runs(base, one, noise_floor_pct=0.0)
    assert doc.summary.false_discoveries is not None
    assert doc.summary.false_discoveries.cases == 50
    row = next(r for r in doc.rows if r.case_id == "k[i=0]")
    assert row.reason is not None and "adjusted for 50 cases" in row.reason
    # A regression found one case at a time is a regression of the whole run too.
    whole = _same_code_cases(sample_factory, 50, 4)
    whole["k[i=0]"] = [2 * x for x in whole["k[i=0]"]]
    alone = _report({"k[i=0]": whole["k[i=0]"]})
    assert _changes(compare_runs(base, alone)) == ["k[i=0]"]
    assert _changes(compare_runs(base, _report(whole))) == ["k[i=0]"]


def test_old_comparison_documents_stay_readable(sample_factory: Samples) -> None:
    run = _report({"k[a=1]": sample_factory(1e-3, n=30, seed=1)},
                  {"k[a=1]": sample_factory(2e-3, n=30, seed=2)})  # fmt: skip
    data = json.loads(compare_runs(run, run).model_dump_json())
    assert data["summary"]["false_discoveries"] == {"method": "benjamini_hochberg", "cases": 1}
    assert data["rows"][0]["baseline_relative"] is not None
    del data["summary"]["false_discoveries"]
    for key in ("baseline_relative", "current_relative"):
        del data["rows"][0][key]
    old = decode_document(json.dumps(data), mode="check")
    assert isinstance(old, ComparisonDoc) and old.summary.false_discoveries is None
    assert old.rows[0].baseline_relative is None


@pytest.mark.parametrize("ratio", [0.5, 0.9, 1.0, 1.1, 2.0])
def test_judge_is_symmetric_in_log_space(ratio: float) -> None:
    spread = (ratio * 0.97, ratio * 1.03)
    forward = judge(ratio, *spread, 1e-4, noise_floor_pct=5.0, alpha=0.05, drift_pct=8.0)[0]
    back = judge(1 / ratio, 1 / spread[1], 1 / spread[0], 1e-4, noise_floor_pct=5.0,
                 alpha=0.05, drift_pct=8.0)[0]  # fmt: skip
    mirror = {"regression": "improvement", "improvement": "regression"}
    assert mirror.get(forward, forward) == back
    assert math.isclose(math.log(ratio), -math.log(1 / ratio))


def test_rows_show_the_basis_and_the_numbers_they_were_judged_on(sample_factory: Samples) -> None:
    # The contradiction: "243 us -> 176 us, change +0.7%". A relative row shows the
    # kernel/reference ratios whose quotient is the change; an absolute row its medians.
    base = _report({"k[a=1]": sample_factory(1e-3, n=100, spread=0.02, seed=1),
                    "k[a=2]": sample_factory(1e-3, n=100, spread=0.02, seed=2)},
                   {"k[a=1]": sample_factory(2e-3, n=100, spread=0.02, seed=3)})  # fmt: skip
    cur = _report({"k[a=1]": sample_factory(1.1e-3, n=100, spread=0.02, seed=4),
                   "k[a=2]": sample_factory(1e-3, n=100, spread=0.02, seed=5)},
                  {"k[a=1]": sample_factory(2e-3, n=100, spread=0.02, seed=6)})  # fmt: skip
    doc = compare_runs(base, cur)
    relative, absolute = doc.rows
    assert relative.relative_values() == ("0.500× ref", "0.549× ref")
    assert relative.basis == "relative" and absolute.basis == "absolute"
    assert absolute.relative_values() is None
    markdown = render_comparison_markdown(doc)
    assert "false discoveries held over 2 cases, Benjamini-Hochberg" in markdown.splitlines()[0]
    assert relative.ratio == pytest.approx(0.549 / 0.500, rel=0.002)  # the numbers agree
    assert f"| `k[a=1]` | 0.500× ref | 0.549× ref | {relative.percent_change:+.1f}% |" in markdown
    assert "| `k[a=2]` | 1.00 ms | " in markdown and "| absolute |" in markdown


def _in_rounds(report: Report, rounds: list[list[float]], *, paired_with: str | None) -> Report:
    """`report` with its one case measured in `rounds` (and naming its partner, if any)."""
    [case] = report.cases
    case = case.model_copy(
        update={"samples": [x for r in rounds for x in r], "round_sizes": [len(r) for r in rounds]}
    )
    context = report.context.model_copy(update={"paired_with": paired_with})
    return report.model_copy(update={"cases": [case], "context": context})


def test_rounds_taken_in_turns_are_judged_in_pairs(sample_factory: Samples) -> None:
    # Eight rounds a side; the machine's load swings by up to 2x from one pair of rounds to
    # the next, the same for both halves of a pair (they took turns in one time window). The
    # current side is 6% slower in every pair: the pairs see it at once, while the rounds
    # compared side against side (Welch) see only the load's swing.
    load = [1.0, 1.9, 1.2, 1.6, 1.0, 2.0, 1.3, 1.5]
    base_rounds = [sample_factory(1e-3 * f, n=20, spread=0.01, seed=k) for k, f in enumerate(load)]
    cur_rounds = [sample_factory(1.06e-3 * f, n=20, spread=0.01, seed=50 + k)
                  for k, f in enumerate(load)]  # fmt: skip
    ids = ("bench-20250131T120000Z-0000000a", "bench-20250131T120000Z-0000000b")
    base = _in_rounds(_report({"k[a=1]": [1.0]}, run_id=ids[0]), base_rounds, paired_with=ids[1])
    cur = _in_rounds(_report({"k[a=1]": [1.0]}, run_id=ids[1]), cur_rounds, paired_with=ids[0])
    [row] = compare_runs(base, cur).rows
    assert row.judgement == "regression", row.reason
    assert row.basis == "absolute"
    assert row.reason is not None and "8 pairs of rounds taken in turns" in row.reason
    # The same rounds from two runs that did not take turns: no pairing, and no verdict.
    apart = _in_rounds(_report({"k[a=1]": [1.0]}, run_id=ids[1]), cur_rounds, paired_with=None)
    alone = _in_rounds(_report({"k[a=1]": [1.0]}, run_id=ids[0]), base_rounds, paired_with=None)
    [unpaired] = compare_runs(alone, apart).rows
    assert unpaired.judgement == "inconclusive", unpaired.reason
    assert unpaired.reason is not None and "8 and 8 rounds" in unpaired.reason
    # Identical code taking turns under the same swings: no verdict of change.
    same = [sample_factory(1e-3 * f, n=20, spread=0.01, seed=90 + k) for k, f in enumerate(load)]
    twin = _in_rounds(_report({"k[a=1]": [1.0]}, run_id=ids[1]), same, paired_with=ids[0])
    [aa] = compare_runs(base, twin).rows
    assert aa.judgement in ("neutral", "inconclusive"), aa.reason


def test_neutral_needs_a_ci_that_rules_out_large_changes() -> None:
    # Not significant, the CI touching the band on one side only: neutral when it stays within
    # twice the floor, but not when it holds a 3x slowdown (a measured 1.84x was once called
    # "neutral: no significant change" and passed the gate in silence).
    near = judge(1.01, 0.99, 1.035, 0.3, noise_floor_pct=2.0, alpha=0.05, drift_pct=0.0)
    assert near[0] == "neutral", near
    wide = judge(1.84, 0.99, 3.4, 0.09, noise_floor_pct=2.0, alpha=0.05, drift_pct=0.0)
    assert wide[0] == "inconclusive" and "past twice the noise floor" in wide[1], wide
