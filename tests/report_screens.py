"""`just report-screens`: real CPU runs, their HTML reports, and a PNG of each view for the docs.

Two throwaway projects, the ones the end-to-end tests use: the report kernels benched twice
(the good ones alone, then all of them with a wrong and a raising one), and the history
kernels benched at each of six commits of a git repository with a 10% step planted at the
fourth. The reports open in headless Chromium (tests/browser.py) and each view is cut out.

Usage: python tests/report_screens.py [OUT_DIR]   (default docs/report)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from browser import Browser, find_chromium, rendered_plots
from support import FIXTURES, tile_argv, tile_env

REPORT_TOML = """\
[project]
paths = ["kernels"]

[bench]
warmup_runs = 1
min_runs = 10
max_time = 0.5

[machine]
peak_bandwidth_gbps = 50.0
peak_tflops = { float32 = 1.0 }
"""
HISTORY_TOML = (
    '[project]\npaths = ["kernels"]\n\n[bench]\nwarmup_runs = 1\nmin_runs = 8\nmax_time = 0.5\n'
)
SHOTS = {
    "overview.png": ("header", "#context"),
    "cases.png": ("#cases-table",),
    "roofline.png": ("#roofline",),
    "comparison.png": ("#comparison",),
    "failures.png": ("#failures",),
    "case.png": ("#case-1",),
}


def _run(root: Path, *args: str, ok: tuple[int, ...] = (0,)) -> None:
    done = subprocess.run(
        tile_argv(*args), cwd=root, env=tile_env(), capture_output=True, text=True, timeout=600
    )
    if done.returncode not in ok:
        raise SystemExit(f"`tile {' '.join(args)}` exited {done.returncode}:\n{done.stderr}")


def _report_project(root: Path) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "rep.py").write_text((FIXTURES / "report_kernels.py").read_text())
    (root / "tile.toml").write_text(REPORT_TOML)
    _run(root, "bench", "--kernel", "rep/axpy", "--kernel", "rep/matmul", "-o", "clean")
    _run(root, "bench", "-o", "all", ok=(3,))  # a kernel raises: exit 3, results kept
    _run(root, "report", "all", "--compare", "clean", "-o", "report.html")
    return root / "report.html"


def _git(root: Path, *args: str, day: int = 1) -> None:
    stamp = f"2026-01-{day:02d}T12:00:00Z"
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_DATE": stamp,
        "GIT_AUTHOR_NAME": "tile",
        "GIT_AUTHOR_EMAIL": "tile@example.org",
        "GIT_COMMITTER_NAME": "tile",
        "GIT_COMMITTER_EMAIL": "tile@example.org",
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _history_project(root: Path) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "hist.py").write_text((FIXTURES / "history_kernels.py").read_text())
    (root / "tile.toml").write_text(HISTORY_TOML)
    (root / ".gitignore").write_text(".tile/\n")
    _git(root, "init", "-q", "-b", "main")
    subjects = [
        "first version",
        "tidy the inputs",
        "rename a helper",
        "unroll the loop",
        "add a bounds check",
        "document the kernel",
    ]
    for day, subject in enumerate(subjects, start=1):
        wait = 55 if day >= 4 else 50
        (root / "kernels" / "step_wait_ms.txt").write_text(f"{wait}\n# {subject}\n")
        _git(root, "add", "-A", day=day)
        _git(root, "commit", "-q", "-m", subject, day=day)
        _run(root, "bench")
    _run(root, "report", ".tile/latest", "--history", "-o", "report.html")
    return root / "report.html"


def main(out: Path) -> int:
    chromium = find_chromium()
    if chromium is None:
        print("error: no Chromium on PATH", file=sys.stderr)
        print("hint: `apt-get install chromium` (Debian), or set TILE_CHROMIUM", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tile-screens-") as tmp:
        report = _report_project(Path(tmp) / "report")
        history = _history_project(Path(tmp) / "history")
        with Browser(chromium, width=1100) as browser:
            rendered_plots(browser, report)  # fails on a console error or an undrawn plot
            for name, selectors in SHOTS.items():
                browser.screenshot(out / name, *selectors)
            rendered_plots(browser, history)
            browser.screenshot(out / "history.png", "#history")
        sizes = {p.parent.name: p.stat().st_size for p in (report, history)}
    for png in sorted(out.glob("*.png")):
        print(f"{png}  {png.stat().st_size // 1024} KiB")
    print(f"report.html bytes: {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/report")))
