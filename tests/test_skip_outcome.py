"""A case its kernel declines (`tile.skip(...)`) is a skipped row, not an infrastructure
error: the run exits on what the other cases did (it exited 3, "raised Skip"). A case no
runner reached stays work undone (tests/test_reliability.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support import tile_argv, tile_env

KERNELS = """\
import jax.numpy as jnp

import tile_runner as tile


def _inputs(case, key):
    if case.n == 2:
        tile.skip("needs two devices")
    return (tile.normal(key, (case.n * 8,), "float32"),)


tile.kernel("sk/double", inputs=_inputs, reference=lambda x: 2 * x,
            bench=tile.axes(n=[1, 2]))(lambda x: x + x)
"""


def test_a_case_the_kernel_skips_does_not_fail_the_run(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "sk.py").write_text(KERNELS)
    (tmp_path / "tile.toml").write_text(
        '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.02\n[history]\nenabled = false\n'
    )
    for command in ("bench", "test"):
        done = subprocess.run(tile_argv(command), cwd=tmp_path, env=tile_env(),
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / ".tile" / "latest" / "report.json").read_text())
        status = {c["case_id"]: c["status"] for c in report["cases"]}
        assert status == {"sk/double[n=1]": "success", "sk/double[n=2]": "skipped"}, command
        [failure] = report["failures"]
        assert failure["message"] == "needs two devices"
