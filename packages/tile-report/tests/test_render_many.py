"""A run of more cases than a page can show: every case in the table, a section for some."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
from tile_report import render_html
from tile_report._inputs import RunData
from tile_report._page import DETAILED_CASES

Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]


def test_a_large_run_gets_a_section_for_its_failures_first_and_a_row_for_every_case(
    make_case: Cases, make_report: Reports
) -> None:
    total = DETAILED_CASES + 40
    failed = total - 3  # past the cap: a page of the first cases alone would leave it out
    cases = [
        make_case(f"k/a[n={i}]", 1e-3, status="failed" if i == failed else "success", seed=i)
        for i in range(total)
    ]
    html = render_html(RunData(report=make_report(cases), source=Path("/nowhere/report.json")))
    assert len(re.findall(r'id="case-\d+"', html)) == DETAILED_CASES
    assert f'id="case-{failed + 1}"' in html  # the failed case has its section
    assert f'id="case-{DETAILED_CASES}"' not in html  # the last success past the cap has none
    assert f"{DETAILED_CASES} of {total} cases have a section here" in html
    for i in range(total):  # every case is a row; only those with a section link to one
        assert f"<code>k/a[n={i}]</code>" in html
    assert f'href="#case-{DETAILED_CASES}"' not in html
    assert f'href="#case-{failed + 1}"' in html


def test_a_small_run_gets_a_section_for_every_case(make_case: Cases, make_report: Reports) -> None:
    cases = [make_case(f"k/a[n={i}]", 1e-3, seed=i) for i in range(5)]
    html = render_html(RunData(report=make_report(cases), source=Path("/nowhere/report.json")))
    assert all(f'id="case-{i + 1}"' in html and f'href="#case-{i + 1}"' in html for i in range(5))
    assert "have a section here" not in html
