"""A gradient bug planted in a real Pallas backward kernel (issue 35): `tile test --mode bwd`
fails it, naming the input and the worst index, while the forward still passes.

The kernel is tile-std's LayerNorm (forward kernel, row-backward loop of `_rows_bwd.py`) with
one term dropped from dx: `- mean(u)`, where u = g * w. Its error in row i is r_i * mean(u_i)
on every column of that row, so the worst index lies in the row where that is largest.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support import tile_argv, tile_env

KERNELS = """\
import jax
import jax.numpy as jnp
from jax import lax

import tile_runner as tile
from tile_std._grad import differentiable
from tile_std._norms import LAYERNORM_EPS, layernorm, layernorm_ref
from tile_std._rows_bwd import RowBackward, _row_backward

def _inputs(case, key):
    kx, kw = jax.random.split(key)
    x = tile.normal(kx, case.shape, case.dtype)
    w = tile.uniform(kw, case.shape[-1:], case.dtype, 0.5, 1.5)
    return x, w, jnp.zeros(case.shape[-1:], case.dtype)


def _planted_body(r):
    (w,) = r.params
    centered = r.x - jnp.sum(r.x, axis=1, keepdims=True) / r.n_cols
    if r.col_mask is not None:
        centered = jnp.where(r.col_mask[None, :], centered, 0.0)
    rs = lax.rsqrt(jnp.sum(centered * centered, axis=1, keepdims=True) / r.n_cols + r.eps)
    xh = centered * rs
    u = r.g * w
    mean_uxh = jnp.sum(u * xh, axis=1, keepdims=True) / r.n_cols
    dx = rs * (u - xh * mean_uxh)  # the planted bug: `- mean(u)` is gone
    return dx, (jnp.sum(r.g * xh, axis=0), jnp.sum(r.g, axis=0))


def _planted_grad(x, w, b, g):
    op = RowBackward("layernorm", _planted_body, LAYERNORM_EPS)
    return _row_backward(op, x, g, (w,), (w, b))


tile.kernel(
    "planted/layernorm",
    inputs=_inputs,
    reference=layernorm_ref,
    bench=tile.axes(shape=[(16, 128)], dtype=["float32"]),
    modes=("fwd", "bwd"),
)(differentiable(layernorm, layernorm_ref, _planted_grad))
"""


def _tile(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tile_argv(*args), cwd=root, env=tile_env(), capture_output=True, text=True, timeout=300
    )


def _cases(root: Path, run: str) -> dict[str, dict[str, Any]]:
    report = json.loads((root / run / "report.json").read_text())
    return {c["case_id"]: c for c in report["cases"]}


def test_a_term_dropped_from_a_pallas_backward_fails_bwd_only(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "planted_kernels.py").write_text(KERNELS)
    (tmp_path / "tile.toml").write_text(
        '[project]\npaths = ["kernels"]\n[history]\nenabled = false\n'
    )
    done = _tile(
        tmp_path, "test", "--kernel", "planted/layernorm", "--mode", "fwd,bwd", "-o", "runs/p"
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    cases = _cases(tmp_path, "runs/p")
    fwd = cases["planted/layernorm[shape=16x128,dtype=float32]"]
    assert fwd["check"]["passed"] is True, out  # the forward kernel is right
    bwd = cases["planted/layernorm[shape=16x128,dtype=float32,mode=bwd]"]["check"]
    assert bwd["passed"] is False
    assert "gradient of input `x`" in bwd["message"], bwd["message"]
    row, col = bwd["worst_index"]
    assert 0 <= row < 16 and 0 <= col < 128
    assert f"at [{row}, {col}]" in bwd["message"]
    assert "gradient of input `x`" in out and f"at [{row}, {col}]" in out
