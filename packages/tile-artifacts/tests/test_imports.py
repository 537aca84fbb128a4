"""The CLI imports this package and must stay free of numpy and jax."""

from __future__ import annotations

import subprocess
import sys


def test_import_pulls_in_no_numpy_or_jax() -> None:
    code = (
        "import sys, tile_artifacts; "
        "banned = ('numpy', 'jax', 'tile_config', 'tile_runner'); "
        "print(sorted(m for m in banned if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
