"""`tile history` end to end: a real git repository with a commit per change, a real bench run
at each commit feeding the history, a planted 10% step found at its commit, a flat case with
none, concurrent `tile history add`, a corrupt database, and the trend plots in Chromium.

Like test_compare_e2e.py, the kernels wait on the host (a `pure_callback` that sleeps) rather
than compute, so that the planted step is the only change there is. The callback's own cost
(1-3 ms, and what moves under load) is a smaller share of a 50 ms wait: five runs on a busy
2-core VM (load average 8) had medians within 0.45% of each other, against 3-9% for 15-20 ms.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import Browser, rendered_plots
from support import FIXTURES, tile_argv, tile_env

pytestmark = pytest.mark.slow

KERNELS = FIXTURES / "history_kernels.py"
TOML = '[project]\npaths = ["kernels"]\n\n[bench]\nwarmup_runs = 1\nmin_runs = 8\nmax_time = 0.5\n'
COMMITS = 7
STEP_AT = 4  # commits 0-3 wait 50 ms, 4-6 wait 55 ms: +10%
Done = subprocess.CompletedProcess[str]


def _git(root: Path, *args: str, when: int = 0) -> str:
    stamp = f"2026-01-0{1 + when}T12:00:00Z"
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_DATE": stamp,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


@dataclass(frozen=True)
class Repo:
    """The project after a bench run at each of its commits."""

    root: Path
    commits: list[str]
    benches: list[Done]

    def tile(self, *args: str, env: dict[str, str] | None = None) -> Done:
        return subprocess.run(
            tile_argv(*args),
            cwd=self.root,
            env=tile_env(env),
            capture_output=True,
            text=True,
            timeout=300,
        )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    root = tmp_path_factory.mktemp("history")
    (root / "kernels").mkdir()
    (root / "kernels" / "hist.py").write_text(KERNELS.read_text())
    (root / "tile.toml").write_text(TOML)
    (root / ".gitignore").write_text(".tile/\n")
    _git(root, "init", "-q", "-b", "main")
    commits: list[str] = []
    benches: list[Done] = []
    for i in range(COMMITS):
        wait = 55 if i >= STEP_AT else 50
        (root / "kernels" / "step_wait_ms.txt").write_text(f"{wait}\n# change {i}\n")
        _git(root, "add", "-A", when=i)
        _git(root, "commit", "-q", "-m", f"change {i}", when=i)
        commits.append(_git(root, "rev-parse", "HEAD"))
        benches.append(
            subprocess.run(
                tile_argv("bench"),
                cwd=root,
                env=tile_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
        )
    return Repo(root, commits, benches)


def test_every_bench_run_was_recorded_at_its_commit(repo: Repo) -> None:
    assert [b.returncode for b in repo.benches] == [0] * COMMITS, repo.benches[-1].stderr
    shown = repo.tile("history", "show", "-v")
    assert shown.returncode == 0, shown.stderr
    for case in ("hist/step[n=64]", "hist/flat[n=64]"):
        row = next(line for line in shown.stdout.splitlines() if line.strip().startswith(case))
        assert f" {COMMITS} " in row
    for i, commit in enumerate(repo.commits):
        assert commit[:7] in shown.stdout
        assert f"change {i}" in shown.stdout


def test_regressions_finds_the_planted_step_at_its_commit(repo: Repo) -> None:
    done = repo.tile("history", "regressions")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if "hist/" in line]
    assert len(rows) == 1, done.stdout
    (row,) = rows
    assert "hist/step[n=64]" in row
    cells = row.split()
    assert repo.commits[STEP_AT - 1][:7] in cells  # last fast
    assert repo.commits[STEP_AT][:7] in cells  # first slow
    assert f"change {STEP_AT}" in row
    change = next(c for c in cells if c.startswith("+") and c.endswith("%"))
    assert 6.0 < float(change[1:-1]) < 14.0
    assert "1 regression(s) in 2 series" in done.stderr


def test_a_higher_bar_or_other_filters_find_nothing(repo: Repo) -> None:
    high = repo.tile("history", "regressions", "--min-change", "25")
    assert high.returncode == 0, high.stdout
    flat = repo.tile("history", "regressions", "-k", "hist/flat")
    assert flat.returncode == 0, flat.stdout
    before = repo.tile("history", "regressions", "--last", str(STEP_AT))
    assert before.returncode == 0, before.stdout  # the window ends before the step
    none = repo.tile("history", "show", "-k", "nothing-like-this")
    assert none.returncode == 2
    assert "hint:" in none.stderr


def test_concurrent_history_add_rebuilds_the_same_history(repo: Repo) -> None:
    runs = sorted((repo.root / ".tile" / "runs").iterdir())
    assert len(runs) == COMMITS
    db = repo.root / "rebuilt.sqlite"
    procs = [
        subprocess.Popen(
            tile_argv("history", "add", str(run), "--db", str(db)),
            cwd=repo.root,
            env=tile_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for run in runs
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * COMMITS, outputs
    again = repo.tile("history", "add", *map(str, runs), "--db", str(db))
    assert again.returncode == 0
    assert again.stderr.count("already in the history") == COMMITS
    found = repo.tile("history", "regressions", "--db", str(db))
    assert found.returncode == 1
    assert repo.commits[STEP_AT][:7] in found.stdout


def test_a_corrupt_history_is_refused_and_kept(repo: Repo) -> None:
    bad = repo.root / "bad.sqlite"
    bad.write_bytes(b"\x00garbage" * 512)
    before = hashlib.sha256(bad.read_bytes()).hexdigest()
    for args in (("history", "show"), ("history", "add", ".tile/latest")):
        done = repo.tile(*args, "--db", str(bad))
        assert done.returncode == 2
        assert "is not a readable tile run history" in done.stderr
        assert "hint: move it aside" in done.stderr
        assert "Traceback" not in done.stderr
    bench_env = {"TILE_HISTORY_PATH": str(bad), "TILE_BENCH_MAX_TIME": "0.05"}
    bench = repo.tile("bench", "-k", "hist/flat", "-o", "extra", env=bench_env)
    assert bench.returncode == 0  # the run itself succeeded; the history only warns
    assert "warning: the run was not added to the history" in bench.stderr
    assert hashlib.sha256(bad.read_bytes()).hexdigest() == before


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    with Browser(chromium) as b:
        yield b


@pytest.mark.browser
def test_report_history_marks_the_step_at_its_commit(repo: Repo, browser: Browser) -> None:
    # The last run of the fixture's commits (`.tile/latest` may be another test's `-o` run).
    last = sorted((repo.root / ".tile" / "runs").iterdir())[-1]
    done = repo.tile("report", str(last), "--history", "-o", "history.html")
    assert done.returncode == 0, done.stderr
    plots = rendered_plots(browser, repo.root / "history.html")
    assert len(plots["trend"]) == 2
    steps = browser.evaluate(
        "Array.from(document.querySelectorAll('svg[data-plot=trend]')).map(svg => [svg.id, "
        "Array.from(svg.querySelectorAll('.step')).map(s => [s.dataset.kind, s.dataset.commit])])"
    )
    by_case = dict(steps)
    titles = browser.evaluate(
        "Array.from(document.querySelectorAll('#history h3')).map(h => h.innerText)"
    )
    assert titles == ["hist/flat[n=64]", "hist/step[n=64]"]
    assert by_case["trend-1"] == []
    assert by_case["trend-2"] == [["regression", repo.commits[STEP_AT]]]
