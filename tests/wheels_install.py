"""Install every built wheel alone in a fresh venv with only its declared dependencies, and
import it. Run by `just build` after `uv build --all-packages --wheel -o dist`.

Sibling tile packages resolve from the dist folder (`--find-links`), third-party ones from the
index, so a missing dependency declaration fails here instead of on a user's machine.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

EXPECTED = {
    "tile_protocol", "tile_config", "tile_downloads", "tile_artifacts",
    "tile_stats", "tile_runner", "tile_harness", "tile_cli", "tile_std", "tile_report", "tile_pytest",
}  # fmt: skip


def main(dist: Path) -> int:
    wheels = sorted(dist.glob("*.whl"))
    found = {w.name.split("-")[0] for w in wheels}
    missing = EXPECTED - found
    if missing:
        print(f"missing wheels: {sorted(missing)}", file=sys.stderr)
        return 1
    # uv caches a find-links wheel by path, name and version: without a refresh, a dist folder
    # rebuilt in place with unchanged versions would install the previous build's siblings.
    refresh = [arg for m in sorted(EXPECTED) for arg in ("--refresh-package", m.replace("_", "-"))]
    failed = 0
    for wheel in wheels:
        module = wheel.name.split("-")[0]
        with tempfile.TemporaryDirectory(prefix=f"wheel-{module}-") as tmp:
            venv = Path(tmp) / "venv"
            subprocess.run(["uv", "venv", "-q", str(venv)], check=True)
            python = str(venv / "bin" / "python")
            install = subprocess.run(
                ["uv", "pip", "install", "-q", "--python", python, *refresh,
                 "--find-links", str(dist), str(wheel)],
                capture_output=True, text=True,
            )  # fmt: skip
            probe = subprocess.run(
                [python, "-c", f"import {module}; print({module}.__name__)"],
                capture_output=True, text=True,
            )  # fmt: skip
            ok = install.returncode == 0 and probe.returncode == 0
            failed += not ok
            print(f"{'ok ' if ok else 'FAIL'} {wheel.name}")
            if not ok:
                print(install.stderr[-2000:] + probe.stderr[-2000:], file=sys.stderr)
    print(f"{len(wheels) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "dist")))
