"""Files tile writes outside a run directory get the permissions the umask asks for (issue 40).

A baseline is committed and shared, a report is opened from a web server or mailed: a user's
umask decides who may read them, as it does for every run directory's files. The commands run
as real `tile` processes under a umask set by the shell that starts them, on a copy of the
committed bench run (tests/fixtures/formats), so no runner is needed.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from support import FIXTURES, tile_argv, tile_env

UMASKS = (0o022, 0o027, 0o002)


def _tile_under(umask: int, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `tile ARGS` in `root` with the umask a login shell of the user would have set."""
    shell = f'umask {umask:03o} && exec "$@"'
    return subprocess.run(
        ["sh", "-c", shell, "sh", *tile_argv(*args)],
        cwd=root,
        env=tile_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", UMASKS, ids=lambda m: f"umask{m:03o}")
def test_baseline_report_and_comparison_honour_the_umask(umask: int, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "formats" / "bench", tmp_path / "run")
    wanted = 0o666 & ~umask  # what any new file gets from `open()` under this umask

    saved = _tile_under(umask, tmp_path, "baseline", "save", "run", "--dir", "baselines")
    assert saved.returncode == 0, saved.stderr
    assert oct(_mode(tmp_path / "baselines" / "cpu.json")) == oct(wanted)

    html = _tile_under(umask, tmp_path, "report", "run", "-o", "report.html")
    assert html.returncode == 0, html.stderr
    assert oct(_mode(tmp_path / "report.html")) == oct(wanted)

    compared = _tile_under(
        umask, tmp_path, "compare", "baselines/cpu.json", "run", "-o", "cmp.json"
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert oct(_mode(tmp_path / "cmp.json")) == oct(wanted)
    leftovers = [p.name for p in tmp_path.rglob(".*.tmp")]
    assert leftovers == []
