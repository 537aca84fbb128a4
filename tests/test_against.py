"""`tile bench --against REV`: the working tree and a git revision timed in turns (real git
repositories, real runners, real run directories).

Turns are checked by what the kernels themselves saw, not by timing: each side's input maker
appends its side's name to one shared file whenever it makes a case's inputs (once a round),
so the file is the order in which the two runners really worked.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import assert_schema_valid, tile_argv, tile_env

KERNELS = """\
import os

import jax.numpy as jnp
import tile_runner as tile

SIDE = "{side}"
SLOW = {slow}


def _inputs(case, key):
    with open(os.environ["AGAINST_LOG"], "a") as log:
        log.write(SIDE + "\\n")
    return (tile.normal(key, (case.n,), "float32"),)


def _work(x):
    y = x
    for _ in range(SLOW):
        y = jnp.sin(y) * 0.0 + y
    return y * 2.0


tile.kernel("ab/scale", inputs=_inputs, reference=lambda x: x * 2.0,
            bench=tile.axes(n=[4096, 16384]), tol=1e-3)(_work)
"""
TOML = (
    '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.1\nmin_runs = 5\nwarmup_runs = 1\n'
    "rounds = 4\n[history]\nenabled = false\n"
)
Done = subprocess.CompletedProcess[str]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def _write(root: Path, side: str, slow: int) -> None:
    (root / "kernels").mkdir(exist_ok=True)
    (root / "kernels" / "ab.py").write_text(KERNELS.format(side=side, slow=slow))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose committed kernel is the revision's ("rev", fast); tests then
    change the working tree."""
    root = tmp_path / "proj"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "tile.toml").write_text(TOML)
    (root / ".gitignore").write_text(".tile/\n")
    _write(root, "rev", 1)
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "fast")
    return root


def _against(root: Path, *args: str) -> Done:
    env = tile_env({"AGAINST_LOG": str(root / "turns.log")})
    return subprocess.run(tile_argv("bench", "--against", *args), cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip


def _reports(root: Path) -> dict[str, dict[str, object]]:
    reports = [json.loads(p.read_text()) for p in (root / ".tile" / "runs").glob("*/report.json")]
    return {r["run"]["run_id"]: r for r in reports}


def test_a_slowdown_is_caught_in_turns_and_both_runs_are_kept(repo: Path) -> None:
    _write(repo, "cur", 12)  # the working tree: a dozen times the work
    done = _against(repo, "HEAD")
    assert done.returncode == 1, done.stderr
    assert "2 regressions against" in done.stderr
    assert "in turns: 4 rounds each" in done.stderr
    # The runners took turns: current, revision | revision, current | ... (ABBA), each
    # stretch holding both cases' inputs for its rounds, never the two sides at once.
    turns = (repo / "turns.log").read_text().split()
    stretches = [side for k, side in enumerate(turns) if k == 0 or turns[k - 1] != side]
    assert stretches == ["cur", "rev", "cur", "rev", "cur"], turns
    # Two ordinary run directories that name each other; the comparison is in the current one.
    reports = _reports(repo)
    assert len(reports) == 2
    current_id = Path(done.stderr.split("run directory: ")[1].split()[0]).name
    current = reports[current_id]
    [revision_id] = set(reports) - {current_id}
    revision = reports[revision_id]
    assert current["context"]["paired_with"] == revision_id  # type: ignore[index]
    assert revision["context"]["paired_with"] == current_id  # type: ignore[index]
    assert revision["producer"]["git_head"] == _git(repo, "rev-parse", "HEAD")  # type: ignore[index]
    comparison = json.loads((repo / ".tile" / "runs" / current_id / "comparisons.json").read_text())
    for row in comparison["rows"]:
        assert row["judgement"] == "regression", row
        assert "4 pairs of rounds taken in turns" in row["reason"]
        assert row["basis"] == "absolute"
    # The worktree of the revision is gone again.
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
    for report in reports.values():
        assert_schema_valid(Path(report["run"]["output_directory"]))  # type: ignore[index]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-rev"], "git knows no such revision"),
        (["HEAD", "--compare", "x.json"], "`--against` cannot be used with `--compare`"),
    ],
)
def test_bad_revisions_are_refused_before_anything_runs(
    repo: Path, args: list[str], message: str
) -> None:
    done = _against(repo, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (repo / ".tile" / "runs").exists()
    assert len(_git(repo, "worktree", "list").splitlines()) == 1


def test_outside_git_and_without_the_project_it_is_refused(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "tile.toml").write_text(TOML)
    done = _against(plain, "HEAD")
    assert done.returncode == 2 and "is not in one" in done.stderr, done.stderr
    # A revision from before the project existed.
    (repo / "README").write_text("x")
    _git(repo, "add", "README")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "readme")
    sub = repo / "sub"
    sub.mkdir()
    (sub / "tile.toml").write_text(TOML)
    done = _against(sub, "HEAD")
    assert done.returncode == 2 and "has no `sub/tile.toml`" in done.stderr, done.stderr
    assert len(_git(repo, "worktree", "list").splitlines()) == 1


def test_a_revision_that_does_not_import_keeps_the_current_run(repo: Path) -> None:
    (repo / "kernels" / "ab.py").write_text("this is not python\n")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "broken")
    _write(repo, "cur", 1)
    done = _against(repo, "HEAD")
    assert done.returncode == 2, done.stderr
    assert "the revision measured no case" in done.stderr and "hint:" in done.stderr
    current = [r for r in _reports(repo).values() if r["cases"]]
    assert current and all(c["status"] == "success" for c in current[0]["cases"])  # type: ignore[union-attr]


def test_a_revision_without_the_selected_cases_keeps_the_current_run(repo: Path) -> None:
    # The working tree adds a kernel the revision does not have, and the run selects it alone.
    _write(repo, "cur", 1)
    extra = KERNELS.format(side="cur", slow=1).replace('"ab/scale"', '"ab/new"')
    (repo / "kernels" / "new.py").write_text(extra)
    done = _against(repo, "HEAD", "--kernel", "ab/new")
    assert done.returncode == 2, done.stderr
    assert "the revision has no such case" in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr
    kept = [r for r in _reports(repo).values() if r["cases"]]
    assert len(kept) == 1 and kept[0]["summary"]["status"] == "success"  # type: ignore[index]


def test_a_cases_file_is_timed_on_both_sides(repo: Path) -> None:
    # The cases file is read once, by the command, so the revision (which has no such file)
    # times the same cases as the working tree, each marked as captured on both sides.
    _write(repo, "cur", 1)
    (repo / "cases.json").write_text(
        '{"schema_name": "tile.cases", "schema_version": 1, "cases": [{"kernel": "ab/scale", '
        '"params": {"n": "4096"}, "captured": "mymodel:example"}]}'
    )
    done = _against(repo, "HEAD", "--cases", "cases.json")
    assert done.returncode in (0, 1), done.stderr  # a verdict, not a refusal
    assert "in turns: 4 rounds each" in done.stderr and "Traceback" not in done.stderr
    reports = _reports(repo)
    assert len(reports) == 2
    for report in reports.values():
        cases = report["cases"]
        assert [(c["case_id"], c["captured"]) for c in cases] == [  # type: ignore[union-attr]
            ("ab/scale[n=4096]", "mymodel:example")
        ]
    assert "mymodel:example" in done.stdout  # the table's `captured from` column
