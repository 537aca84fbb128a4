"""`tile report` end to end: real CPU runs, real report files, opened in a real headless
Chromium that must log no console error and lay out every mark of every plot."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import Browser, rendered_plots
from support import FIXTURES, assert_schema_valid, tile_argv, tile_env

pytestmark = pytest.mark.slow

KERNELS = FIXTURES / "report_kernels.py"
TOML = """\
[project]
paths = ["kernels"]

[bench]
warmup_runs = 1
min_runs = 5
max_time = 0.2

[machine]
peak_bandwidth_gbps = 50.0
peak_tflops = { float32 = 1.0 }
"""
Done = subprocess.CompletedProcess[str]


def _tile(root: Path, *args: str, env: dict[str, str] | None = None) -> Done:
    return subprocess.run(
        tile_argv(*args), cwd=root, env=tile_env(env), capture_output=True, text=True, timeout=300
    )


@dataclass(frozen=True)
class Runs:
    """A project benched twice: the good kernels alone, then everything (with failures)."""

    root: Path
    clean: Done
    messy: Done
    history_before_messy: bool

    def tile(self, *args: str) -> Done:
        return _tile(self.root, *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("report")
    (root / "kernels").mkdir()
    (root / "kernels" / "rep.py").write_text(KERNELS.read_text())
    (root / "tile.toml").write_text(TOML)
    clean = _tile(
        root,
        "bench",
        "--kernel",
        "rep/axpy",
        "--kernel",
        "rep/matmul",
        "-o",
        "clean",
        env={"TILE_HISTORY_ENABLED": "false"},
    )
    history_before = (root / ".tile" / "history.sqlite").exists()
    messy = _tile(root, "bench", "-o", "messy")
    return Runs(root, clean, messy, history_before)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    with Browser(chromium) as b:
        yield b


def test_the_runs_went_as_planned(runs: Runs) -> None:
    assert runs.clean.returncode == 0, runs.clean.stderr
    assert runs.messy.returncode == 3, runs.messy.stderr  # a kernel raised
    # `[history] enabled = false` (here from the environment) writes no history...
    assert not runs.history_before_messy
    # ...and by default each bench run is recorded.
    listed = runs.tile("history", "show")
    assert listed.returncode == 0, listed.stderr
    assert "rep/axpy[n=4096]" in listed.stdout
    assert "rep/wrong" not in listed.stdout  # a wrong kernel's speed is not history


@pytest.mark.browser
def test_report_of_a_cpu_run_draws_every_plot(runs: Runs, browser: Browser) -> None:
    done = runs.tile("report", "clean", "-o", "out/clean.html")
    assert done.returncode == 0, done.stderr
    page = runs.root / "out" / "clean.html"
    assert done.stdout.strip() == "out/clean.html"
    assert "KiB" in done.stderr
    plots = rendered_plots(browser, page)
    assert [p["declared"] for p in plots["roofline"]] == [3]  # two axpy sizes and the matmul
    assert [p["declared"] for p in plots["bandwidth"]] == [3]
    assert len(plots["samples"]) == 3
    assert len(plots["accounting"]) == 4  # the run's timing and the three cases'
    text = page.read_text()
    assert "config peaks: 50 GB/s, float32 1 TFLOP/s" in text
    # The report is written outside the run directory, whose manifest must stay complete.
    assert_schema_valid(runs.root / "clean")


@pytest.mark.browser
def test_report_of_a_run_with_failures_shows_them(runs: Runs, browser: Browser) -> None:
    done = runs.tile("report", "messy", "-o", "messy.html")
    assert done.returncode == 0, done.stderr
    page = runs.root / "messy.html"
    plots = rendered_plots(browser, page)
    assert len(plots["samples"]) == 4  # the raising kernel has none
    failures = browser.evaluate(
        "Array.from(document.querySelectorAll('#failures .failure')).map(f => "
        "[f.innerText, f.getBoundingClientRect().height])"
    )
    assert len(failures) == 1
    text, height = failures[0]
    assert "rep/raises[n=256]" in text
    assert "kernel exploded on purpose" in text
    assert "Traceback" in text
    assert height > 0
    wrong = browser.evaluate(
        "Array.from(document.querySelectorAll('table.cases tr')).filter(r => "
        "r.innerText.includes('rep/wrong')).map(r => r.innerText)"
    )
    assert len(wrong) == 1 and "✗" in wrong[0] and "failed" in wrong[0]


@pytest.mark.browser
def test_report_with_a_comparison_draws_the_verdicts(runs: Runs, browser: Browser) -> None:
    done = runs.tile("report", "messy", "--compare", "clean", "-o", "compare.html")
    assert done.returncode == 0, done.stderr
    plots = rendered_plots(browser, runs.root / "compare.html")
    (comparison,) = plots["comparison"]
    assert comparison["declared"] >= 3  # at least a dot for each of the three shared cases
    floor = browser.evaluate("document.querySelector('#comparison .noise-floor') !== null")
    assert floor
    rows = browser.evaluate(
        "Array.from(document.querySelectorAll('#comparison tbody tr')).map(r => r.innerText)"
    )
    assert any("rep/wrong" in r and "added" in r for r in rows)


@pytest.mark.browser
def test_report_with_history_adds_a_trend_per_case(runs: Runs, browser: Browser) -> None:
    done = runs.tile("report", "messy", "--history", "-o", "history.html")
    assert done.returncode == 0, done.stderr
    plots = rendered_plots(browser, runs.root / "history.html")
    assert len(plots["trend"]) == 3  # the measured, correct cases of the one recorded run
    assert "too few to tell steps from noise" in (runs.root / "history.html").read_text()


def test_report_errors_name_the_input(runs: Runs) -> None:
    missing = runs.tile("report", "nothere")
    assert missing.returncode == 2
    assert "error: `nothere` is not a run directory" in missing.stderr
    assert "hint:" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad_base = runs.tile("report", "clean", "--compare", "nothere", "-o", "x.html")
    assert bad_base.returncode == 2
    assert "nothere" in bad_base.stderr
    assert not (runs.root / "x.html").exists()
    no_db = runs.tile("report", "clean", "--history", "--db", "none.sqlite", "-o", "y.html")
    assert no_db.returncode == 2
    assert "no run history at `none.sqlite`" in no_db.stderr


def test_report_refuses_to_write_into_the_run_directory(runs: Runs) -> None:
    done = runs.tile("report", "clean", "-o", "clean/report.html")
    assert done.returncode == 2
    assert "is a run directory" in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (runs.root / "clean" / "report.html").exists()
    assert_schema_valid(runs.root / "clean")


def test_report_works_on_a_report_json_too(runs: Runs) -> None:
    done = runs.tile("report", "clean/report.json", "-o", "from-json.html")
    assert done.returncode == 0, done.stderr
    html = (runs.root / "from-json.html").read_text()
    run_id = json.loads((runs.root / "clean" / "report.json").read_text())["run"]["run_id"]
    assert run_id in html
