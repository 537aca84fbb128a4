"""The page as text: what each section holds, escaping, self-containment, accounting, files."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import tile_artifacts as ta
from tile_report import (
    CSP,
    GitInfo,
    History,
    ReportError,
    RunData,
    load_run,
    render_html,
    trends,
    write_html,
)

Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]
Writer = Callable[[Path, ta.Report], Path]

H200 = ta.Peaks(bandwidth_gbps=4800.0, tflops={"bfloat16": 989.0}, source="builtin")
MATMUL = ta.Work(bytes=1e9, flops=2e12, source="declared")
COPY = ta.Work(bytes=1e9, flops=None, source="declared")


def _plots(html: str) -> dict[str, list[int]]:
    """Plot kind -> the mark counts each plot of that kind declares."""
    found: dict[str, list[int]] = {}
    for kind, marks in re.findall(r'data-plot="([a-z]+)" data-marks="(\d+)"', html):
        found.setdefault(kind, []).append(int(marks))
    return found


def _run(report: ta.Report) -> RunData:
    return RunData(report=report, source=Path("/nowhere/report.json"))


def test_a_bench_run_has_a_roofline_a_bandwidth_chart_and_a_plot_per_case(
    make_case: Cases, make_report: Reports
) -> None:
    cases = [
        make_case("k/matmul[n=1]", 1e-3, work=MATMUL, peaks=H200),
        make_case("k/copy[n=1]", 2e-4, work=COPY, peaks=H200, seed=2),
    ]
    html = render_html(_run(make_report(cases, peaks=H200)))
    plots = _plots(html)
    assert plots["roofline"] == [1]  # the copy has no FLOPs: no place on a roofline
    assert plots["bandwidth"] == [2]
    assert len(plots["samples"]) == 2
    assert all(n >= 8 for n in plots["samples"])  # CI, whisker, box, dots, median; x2 rows
    assert "builtin peaks: 4800 GB/s, bfloat16 989 TFLOP/s" in html
    assert "1 case(s) do no FLOPs" in html


def test_peaks_the_runner_used_are_recovered_from_the_percentages(
    make_case: Cases, make_report: Reports
) -> None:
    # The runner's peaks (built-in table or calibration) are not in the device record; each
    # case carries its rates and % of peak, which give the peaks back.
    cases = [make_case("k/mm[n=1]", 1e-3, work=MATMUL, peaks=H200)]
    html = render_html(_run(make_report(cases, peaks=None)))
    assert "builtin peaks: 4800 GB/s, bfloat16 989 TFLOP/s" in html


def test_without_peaks_the_roofline_says_why_it_has_no_roofs(
    make_case: Cases, make_report: Reports
) -> None:
    cases = [make_case("k/mm[n=1]", 1e-3, work=MATMUL)]
    html = render_html(_run(make_report(cases)))
    assert "no peaks known for this device" in html
    assert "tile device --calibrate" in html


def test_the_page_fetches_nothing_and_runs_no_script(
    make_case: Cases, make_report: Reports
) -> None:
    html = render_html(_run(make_report([make_case("k/a[n=1]", 1e-3)])))
    assert f'content="{CSP}"' in html
    assert "<script" not in html
    assert " src=" not in html
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', html))
    urls = set(re.findall(r"https?://[^\"' )]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # a namespace name, never fetched


def test_text_from_the_run_is_escaped(make_case: Cases, make_report: Reports) -> None:
    nasty = 'k/x[name=<img src=x onerror="alert(1)">]'
    failure = ta.FailureRecord(
        failure_id="F001",
        case_id=nasty,
        phase="run",
        status="failed",
        message="boom <b>bold</b>",
        exception_type="RuntimeError",
        stderr_excerpt='Traceback (most recent call last):\n  File "<kernel>", line 1\n',
    )
    report = make_report([make_case(nasty, 1e-3)], failures=[failure], status="partial")
    html = render_html(_run(report))
    assert "<img" not in html
    assert "<b>bold</b>" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "File &quot;&lt;kernel&gt;&quot;, line 1" in html
    assert 'id="failures"' in html


def test_accounting_is_drawn_when_the_run_has_it(
    make_case: Cases, make_report: Reports, write_run: Writer, tmp_path: Path
) -> None:
    report = make_report([make_case("k/a[n=1]", 1e-3), make_case("k/b[n=1]", 1e-3, seed=3)])
    run_dir = write_run(tmp_path / "run", report)
    before = render_html(load_run(run_dir))
    assert 'id="time"' not in before  # a run without accounting shows its build phases only
    assert _plots(before)["accounting"] == [3, 3]
    # A newer run adds an `accounting` object per case; readers of schema 1 keep working.
    raw = json.loads((run_dir / "report.json").read_text())
    for case in raw["cases"]:
        case["accounting"] = {"inputs_s": 0.1, "compile_s": 0.5, "reference_compile_s": 0.0,
                              "check_s": 0.0, "warmup_s": 0.0, "sample_s": 1.0,
                              "reference_sample_s": 0.2, "other_s": 0.2, "total_s": 2.0}  # fmt: skip
    (run_dir / "report.json").write_text(json.dumps(raw))
    run = load_run(run_dir)
    assert run.accounting["k/a[n=1]"].parts[0] == ("inputs", 0.1)
    after = render_html(run)
    assert 'id="time"' in after
    assert "reference sample" in after
    assert "4.00 s" in after  # the run's figure: the two cases added up
    assert _plots(after)["accounting"] == [5, 5, 5]  # the five parts above zero, each


def test_a_comparison_is_drawn_worst_first_with_its_noise_floor(
    make_case: Cases, make_report: Reports
) -> None:
    ref = 2e-3  # the references did not move: what moved is the kernel
    base = make_report(
        [
            make_case("k/a[n=1]", 1e-3, ref_center=ref),
            make_case("k/b[n=1]", 1e-3, seed=4, ref_center=ref),
        ]
    )
    cur = make_report(
        [
            make_case("k/a[n=1]", 1e-3, seed=7, ref_center=ref),
            make_case("k/b[n=1]", 1.3e-3, seed=5, ref_center=ref),
        ]
    )
    doc = ta.compare.compare_runs(base, cur, noise_floor_pct=2.0)
    html = render_html(_run(cur), comparison=doc)
    assert 'id="comparison"' in html
    assert "noise floor ±2%" in html
    section = html[html.index('id="comparison"') :]
    assert section.index("k/b[n=1]") < section.index("k/a[n=1]")
    assert ">regression</b>" in section
    assert "false discoveries held over 2 cases, Benjamini-Hochberg" in section
    # Each row says the basis it was judged on; relative rows show the ratios to the reference.
    for row in doc.rows:
        assert f"<td>{row.basis}</td>" in section
        shown = row.relative_values()
        assert shown is None or (shown[0] in section and shown[1] in section)
    assert _plots(html)["comparison"] == [4]  # a whisker and a dot per row


def test_history_trends_mark_their_steps_at_the_commit(
    make_case: Cases, make_report: Reports, tmp_path: Path
) -> None:
    reports: list[ta.Report] = []
    with History(tmp_path / "h.sqlite") as history:
        for i in range(8):
            median = 1e-3 * (1.2 if i >= 5 else 1.0)
            report = make_report([make_case("k/a[n=1]", median, seed=i)], git_head=f"{i:040x}")
            history.add_run(report, git=GitInfo(commit=f"{i:040x}", subject=f"change {i}"))
            reports.append(report)
        found = trends(history.series())
    html = render_html(_run(reports[-1]), history=found)
    assert _plots(html)["trend"] == [8 * 2 + 1]  # whisker + dot per commit, one step
    assert f'data-commit="{5:040x}"' in html
    assert "regression +20" in html


def test_an_empty_history_says_so(make_case: Cases, make_report: Reports) -> None:
    html = render_html(_run(make_report([make_case("k/a[n=1]", 1e-3)])), history=[])
    assert "holds no earlier run" in html


def test_load_run_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ReportError) as info:
        load_run(tmp_path / "nope")
    assert "nope" in info.value.message
    assert info.value.hint
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "report.json").write_text("{not json")
    with pytest.raises(ReportError) as info:
        load_run(bad)
    assert "report.json" in info.value.message


def test_write_html_replaces_the_file_whole(tmp_path: Path) -> None:
    target = write_html(tmp_path / "out" / "r.html", "<p>one</p>")
    write_html(target, "<p>two</p>")
    assert target.read_text() == "<p>two</p>"
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.html"]
    (tmp_path / "file").write_text("")
    with pytest.raises(ReportError) as info:
        write_html(tmp_path / "file" / "r.html", "x")
    assert info.value.hint and "-o" in info.value.hint


def test_write_html_refuses_a_run_directory(
    tmp_path: Path, make_case: Cases, make_report: Reports, write_run: Writer
) -> None:
    run = write_run(tmp_path / "run", make_report([make_case("k[n=1]", 1e-3)]))
    for inside in (run / "report.html", run / "html" / "report.html"):
        with pytest.raises(ReportError) as info:
            write_html(inside, "<p>x</p>")
        assert f"`{run}` is a run directory" in info.value.message
        assert info.value.hint and "-o" in info.value.hint
    assert ta.check.check_path(run) == []  # the run still validates
    assert write_html(tmp_path / "beside.html", "<p>x</p>").is_file()
