"""Implementations of one op side by side in a run directory: the grouping and speedup rule
every table shares, summary.md's section, schema-check, baselines and comparisons."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tile_artifacts import CaseRecord, read_report
from tile_artifacts.check import check_path
from tile_artifacts.compare import baseline_from_report, compare_runs, render_comparison_markdown
from tile_artifacts.ops import OpRecord, impl_speedups, op_groups, record_median, timed_ops

Cases = Callable[..., CaseRecord]


def _impl(case_factory: Cases, kernel: str, shape: str, center: float, impl: str,
          *, baseline: bool = False, status: str = "success") -> CaseRecord:  # fmt: skip
    """A case of kernel `kernel` at `shape`, implementing op `norm` as `impl`."""
    case = case_factory(f"{kernel}[shape={shape}]", center, status=status)
    op = OpRecord(name="norm", impl=impl, baseline=baseline)
    return case.model_copy(update={"params": {"shape": shape}, "op": op})


def _cases(case_factory: Cases) -> list[CaseRecord]:
    """Plan order: the fast implementation was planned first, the baseline second."""
    return [
        _impl(case_factory, "p/fast", "8", 1e-3, "fast"),
        _impl(case_factory, "p/fast", "16", 2e-3, "fast"),
        _impl(case_factory, "p/jnp", "8", 2e-3, "jnp", baseline=True),
        _impl(case_factory, "p/jnp", "16", 3e-3, "jnp", baseline=True),
        case_factory("p/plain[shape=8]", 1e-3),
    ]


def test_an_op_table_is_by_point_with_the_baseline_first(case_factory: Cases) -> None:
    groups = op_groups(_cases(case_factory))
    assert [(g.name, g.baseline, g.impls) for g in groups] == [("norm", "jnp", ["jnp", "fast"])]
    assert [c.case_id for c in groups[0].cases] == [
        "p/jnp[shape=8]", "p/fast[shape=8]", "p/jnp[shape=16]", "p/fast[shape=16]",
    ]  # fmt: skip


def test_each_implementation_is_timed_against_the_baseline_at_its_point(
    case_factory: Cases,
) -> None:
    cases = _cases(case_factory)
    speedups = impl_speedups(cases, record_median)
    assert round(speedups["p/fast[shape=8]"] or 0, 2) == 2.0
    assert round(speedups["p/fast[shape=16]"] or 0, 2) == 1.5
    assert round(speedups["p/jnp[shape=8]"] or 0, 2) == 1.0
    assert "p/plain[shape=8]" not in speedups
    # A failed implementation, or a point the baseline did not run, has no speedup.
    cases[1] = cases[1].model_copy(update={"status": "failed"})
    speedups = impl_speedups(cases[:3], record_median)
    assert speedups["p/fast[shape=16]"] is None
    assert impl_speedups(cases[:2], record_median) == {
        "p/fast[shape=8]": None, "p/fast[shape=16]": None,
    }  # fmt: skip


def test_a_run_with_ops_checks_and_summary_md_shows_them_side_by_side(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    run = make_run(cases=_cases(case_factory))
    assert [p.message for p in check_path(run)] == []
    back = read_report(run / "report.json")
    assert back.cases[0].op == OpRecord(name="norm", impl="fast", baseline=False)
    assert back.cases[-1].op is None
    summary = (run / "summary.md").read_text()
    section = summary.split("## Implementations", 1)[1].split("\n## ", 1)[0]
    assert "**norm** (2 implementations, baseline `jnp`)" in section
    assert "| implementation | case | status | time | ±CI | vs jnp | ok |" in section
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert [r.split(" | ")[0] for r in rows] == ["| `jnp`", "| `fast`", "| `jnp`", "| `fast`"]
    assert "| 2.00× |" in rows[1] and "| 1.50× |" in rows[3]
    assert "p/plain" not in section


def test_a_run_without_ops_has_no_implementations_section(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    run = make_run(cases=[case_factory("p/plain[shape=8]", 1e-3)])
    assert "## Implementations" not in (run / "summary.md").read_text()


def test_baselines_and_comparisons_keep_each_implementation_and_name_its_op(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    report = read_report(make_run(cases=_cases(case_factory)) / "report.json")
    baseline = baseline_from_report(report)
    assert [c.op.impl if c.op else None for c in baseline.cases] == [
        "fast", "fast", "jnp", "jnp", None,
    ]  # fmt: skip
    doc = compare_runs(baseline, report)
    by_case = {row.case_id: row for row in doc.rows}
    assert len(by_case) == 5  # one row per implementation and point, none merged
    assert (by_case["p/jnp[shape=8]"].op, by_case["p/jnp[shape=8]"].impl) == ("norm", "jnp")
    assert by_case["p/plain[shape=8]"].op is None
    table = render_comparison_markdown(doc)
    assert "`p/fast[shape=8]` (op norm: fast)" in table
    assert "`p/plain[shape=8]` |" in table


def test_schema_check_finds_ops_that_contradict_each_other(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    cases = _cases(case_factory)
    # Two baselines of `norm`, and one label for two kernels.
    cases[0] = cases[0].model_copy(update={"op": OpRecord(name="norm", impl="fast", baseline=True)})
    cases[4] = _impl(case_factory, "p/plain", "8", 1e-3, "jnp")
    problems = [p.message for p in check_path(make_run(cases=cases))]
    assert any("op `norm` has 2 baselines: p/fast, p/jnp" in p for p in problems), problems
    assert any("implementation `jnp` is both `p/jnp` and `p/plain`" in p for p in problems)
    assert any("kernel `p/fast` declares two ops" in p for p in problems), problems


def test_a_tune_run_or_a_test_run_has_no_implementations_table(
    make_run: Callable[..., Path], case_factory: Cases
) -> None:
    report = read_report(make_run(cases=_cases(case_factory)) / "report.json")
    assert [g.name for g in timed_ops(report)] == ["norm"]
    tune = report.model_copy(update={"configuration": {**report.configuration, "command": "tune"}})
    assert timed_ops(tune) == []
    untimed = [c.model_copy(update={"stats": None, "samples": []}) for c in report.cases]
    assert timed_ops(report.model_copy(update={"cases": untimed})) == []
