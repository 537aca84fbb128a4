"""Filters that match no case of the project's last whole plan are refused without a runner
(issue 40): the plan kept in `.tile/plans.json` answers, as long as nothing it depends on
changed; a kernel file edited since sends the run to the runner again."""

from __future__ import annotations

from pathlib import Path

from support import MakeProject, TileRun

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n"

# Each import of the kernel module (by any runner) leaves a line: the count says whether a
# runner started and discovered the kernels.
MARKER = """

with open(__import__("pathlib").Path(__file__).with_name("imports.log"), "a") as _log:
    _log.write("imported\\n")
"""


def _imports(root: Path) -> int:
    log = root / "kernels" / "imports.log"
    return log.read_text().count("imported") if log.exists() else 0


def test_no_match_is_answered_from_the_kept_plan(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    kernel = root / "kernels" / "good.py"
    kernel.write_text(kernel.read_text() + MARKER)
    whole = tile("bench", cwd=root)  # fx/wrong fails its check: the plan is still whole
    assert whole.returncode == 1, whole.stderr
    assert (root / ".tile" / "plans.json").is_file()
    imported = _imports(root)
    assert imported >= 1
    runs = sorted((root / ".tile" / "runs").iterdir())
    latest = (root / ".tile" / "latest").resolve()

    typo = tile("bench", "-k", "sqare", cwd=root)
    assert typo.returncode == 2, typo.stderr
    assert "error: no case matches `-k sqare`" in typo.stderr
    assert "hint: did you mean `-k square` or `-k scale`?" in typo.stderr
    kernel_typo = tile("bench", "--kernel", "fx/scal", "-k", "256", cwd=root)
    assert kernel_typo.returncode == 2, kernel_typo.stderr
    assert "no case matches `--kernel fx/scal`" in kernel_typo.stderr
    assert "did you mean `--kernel fx/scale`" in kernel_typo.stderr
    together = tile("bench", "--kernel", "fx/square", "-k", "1024", cwd=root)
    assert together.returncode == 2, together.stderr
    assert "no case matches all the filters together" in together.stderr
    assert _imports(root) == imported  # no runner started: the kernels were not imported
    assert "tile bench on cpu" not in typo.stderr  # no runner said hello
    assert sorted((root / ".tile" / "runs").iterdir()) == runs
    assert (root / ".tile" / "latest").resolve() == latest

    # Renamed in the file: the kept plan no longer holds, and the new name runs.
    kernel.write_text(kernel.read_text().replace('"fx/square"', '"fx/sqare"'))
    renamed = tile("bench", "-k", "sqare", cwd=root)
    assert renamed.returncode == 0, renamed.stderr
    assert "fx/sqare\n" in renamed.stdout and "[n=512,dtype=float32]" in renamed.stdout
    assert _imports(root) > imported


def test_a_filtered_run_keeps_no_plan(tile: TileRun, project: MakeProject) -> None:
    # Its plan holds only the cases its filters chose: kept, it would refuse the others.
    root = project(["good.py"], FAST)
    done = tile("bench", "-k", "square", cwd=root)
    assert done.returncode == 0, done.stderr
    assert not (root / ".tile" / "plans.json").exists()
