"""Forward and backward modes (issue 35): real `tile` runs of tiny kernels on the CPU.

The planted bug is a `custom_vjp` whose backward drops one term of the input `x`'s gradient;
the inputs make that term large at one position only, so the worst index is known.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import tile_argv, tile_env

KERNELS = """\
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import tile_runner as tile

SPIKE = 37


def _inputs(case, key):
    kx, kw = jax.random.split(key)
    # x is small except at SPIKE, where the planted bug's missing term (2 x g) is largest.
    x = 0.01 * tile.normal(kx, case.shape, case.dtype)
    x = x.at[SPIKE].set(10.0)
    return x, tile.normal(kw, case.shape, case.dtype)


def reference(x, w):
    return x * w + x * x


def _double(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def _pallas_double(x):
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(_double, out_shape=shape, interpret=True)(x)


@jax.custom_vjp
def good(x, w):
    # x * w + x * x, the x * x part through an (interpreted) Pallas kernel: 0.5 * x * 2x.
    return x * w + 0.5 * x * _pallas_double(x)


def _good_fwd(x, w):
    return good(x, w), (x, w)


def _good_bwd(res, g):
    x, w = res
    return g * w + 2.0 * x * g, g * x


good.defvjp(_good_fwd, _good_bwd)


@jax.custom_vjp
def buggy(x, w):
    return x * w + x * x


def _buggy_bwd(res, g):
    x, w = res
    return g * w, g * x  # the planted bug: the gradient of x lost its 2 x g term


buggy.defvjp(lambda x, w: (buggy(x, w), (x, w)), _buggy_bwd)


@jax.custom_vjp
def wrong(x, w):
    return x * w + x * x


wrong.defvjp(lambda x, w: (wrong(x, w), (x, w)), lambda res, g: (g * res[1],))


def no_grad(x, w):
    return 0.5 * x * _pallas_double(x) + x * w


AXES = tile.axes(shape=[(64,)], dtype=["float32", "bfloat16"])
ALL = ("fwd", "bwd", "fwd_bwd")
tile.kernel("m/good", inputs=_inputs, reference=reference, bench=AXES, modes=ALL,
            tol={"bfloat16": 2e-2})(good)
tile.kernel("m/buggy", inputs=_inputs, reference=reference, bench=AXES, modes=ALL)(buggy)
tile.kernel("m/wrong", inputs=_inputs, reference=reference, bench=AXES, modes=ALL)(wrong)
tile.kernel("m/no_grad", inputs=_inputs, reference=reference, bench=AXES, modes=ALL)(no_grad)
tile.kernel("m/fwd_only", inputs=_inputs, reference=reference, bench=AXES)(reference)


def tuned_fwd(x, w, *, k):
    return good(x, w) + 0.0 * k


# The tunable reaches the forward only: its `bwd` mode has no configuration.
tile.kernel("m/tuned_fwd", inputs=_inputs, reference=reference, bench=AXES, modes=ALL,
            tunables=tile.axes(k=[1, 2]), tuned_modes=("fwd", "fwd_bwd"),
            tol={"bfloat16": 2e-2})(tuned_fwd)
"""
TOML = (
    '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n'
    "[history]\nenabled = false\n"
)
Done = subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("modes") / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "mode_kernels.py").write_text(KERNELS)
    (root / "tile.toml").write_text(TOML)
    return root


def _tile(root: Path, *args: str) -> Done:
    return subprocess.run(
        tile_argv(*args), cwd=root, env=tile_env(), capture_output=True, text=True, timeout=300
    )


def _report(root: Path, run: str) -> dict[str, Any]:
    return json.loads((root / run / "report.json").read_text())


def _cases(root: Path, run: str) -> dict[str, dict[str, Any]]:
    return {c["case_id"]: c for c in _report(root, run)["cases"]}


def test_planted_gradient_bug_fails_bwd_naming_input_and_index_while_fwd_passes(
    proj: Path,
) -> None:
    fwd = _tile(proj, "test", "--kernel", "m/buggy", "-o", "runs/buggy-fwd")
    assert fwd.returncode == 0, fwd.stdout + fwd.stderr
    assert set(_cases(proj, "runs/buggy-fwd")) == {
        "m/buggy[shape=64,dtype=float32]",
        "m/buggy[shape=64,dtype=bfloat16]",
    }  # fwd ids are what they were before modes
    bwd = _tile(proj, "test", "--kernel", "m/buggy", "--mode", "bwd", "-o", "runs/buggy-bwd")
    assert bwd.returncode == 1, bwd.stdout + bwd.stderr
    cases = _cases(proj, "runs/buggy-bwd")
    assert set(cases) == {
        "m/buggy[shape=64,dtype=float32,mode=bwd]",
        "m/buggy[shape=64,dtype=bfloat16,mode=bwd]",
    }
    for case in cases.values():
        check = case["check"]
        assert check["passed"] is False
        assert check["worst_index"] == [37]
        assert "gradient of input `x`" in check["message"], check["message"]
        assert "at [37]" in check["message"]
    out = bwd.stdout + bwd.stderr
    assert "m/buggy[shape=64,dtype=float32,mode=bwd]" in out
    assert "gradient of input `x`" in out and "at [37]" in out


def test_every_mode_runs_and_bad_modes_fail_per_case(proj: Path) -> None:
    done = _tile(proj, "bench", "--mode", "all", "-k", "float32", "-o", "runs/all")
    out = done.stdout + done.stderr
    cases = _cases(proj, "runs/all")
    status = {cid: c["status"] for cid, c in cases.items()}
    for mode in ("", ",mode=bwd", ",mode=fwd_bwd"):
        good = cases[f"m/good[shape=64,dtype=float32{mode}]"]
        assert good["status"] == "success", out
        assert good["check"]["passed"] is True
        assert good["stats"]["median"] > 0
        assert good["reference"] is not None  # timed beside the reference's own VJP
    # Cannot be differentiated (a Pallas call without a custom_vjp): unsupported, not failed.
    assert status["m/no_grad[shape=64,dtype=float32,mode=bwd]"] == "unsupported"
    assert status["m/no_grad[shape=64,dtype=float32,mode=fwd_bwd]"] == "unsupported"
    assert status["m/no_grad[shape=64,dtype=float32]"] == "success"
    # A custom_vjp whose backward returns one gradient for two inputs: failed, named.
    assert status["m/wrong[shape=64,dtype=float32,mode=bwd]"] == "failed"
    assert "custom vjp bwd rule" in out.lower()
    assert "2 unsupported" in out  # counted apart from the failures
    # `all` is the modes each kernel declares: none but fwd for m/fwd_only.
    only = [c for c in status if c.startswith("m/fwd_only")]
    assert only == ["m/fwd_only[shape=64,dtype=float32]"]
    # A kernel that raises is exit 3 in every mode, as in `fwd`; the other cases still ran.
    assert done.returncode == 3, out


def test_tunables_reach_only_their_modes_in_bench_and_tune(proj: Path) -> None:
    done = _tile(proj, "bench", "--kernel", "m/tuned_fwd", "--mode", "all", "-k", "float32",
                 "-o", "runs/tuned")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    cases = _cases(proj, "runs/tuned")
    base = "m/tuned_fwd[shape=64,dtype=float32"
    assert cases[f"{base}]"]["config"]["values"] == {"k": "1"}
    assert cases[f"{base},mode=fwd_bwd]"]["config"]["values"] == {"k": "1"}
    assert cases[f"{base},mode=bwd]"]["config"] is None  # nothing timed there depends on k
    assert cases[f"{base},mode=bwd]"]["status"] == "success"
    # Nothing to tune in `bwd`; in every mode, the two that have a configuration.
    bwd = _tile(proj, "tune", "--kernel", "m/tuned_fwd", "--mode", "bwd", "--dry-run")
    assert bwd.returncode == 2, bwd.stdout + bwd.stderr
    assert "no selected case has a kernel with tunables" in bwd.stderr
    every = _tile(proj, "tune", "--kernel", "m/tuned_fwd", "--mode", "all", "-k", "float32",
                  "--dry-run")  # fmt: skip
    assert every.returncode == 0, every.stdout + every.stderr
    assert "tile tune: 2 cases, 4 configurations" in every.stdout
    assert "mode=bwd" not in every.stdout


def test_a_mode_the_kernel_does_not_declare_fails_its_case_and_the_run_goes_on(
    proj: Path,
) -> None:
    done = _tile(
        proj, "test", "--kernel", "m/fwd_only", "--kernel", "m/good", "-k", "float32",
        "--mode", "bwd", "-o", "runs/undeclared",
    )  # fmt: skip
    out = done.stdout + done.stderr
    cases = _cases(proj, "runs/undeclared")
    assert cases["m/good[shape=64,dtype=float32,mode=bwd]"]["status"] == "success", out
    assert cases["m/fwd_only[shape=64,dtype=float32,mode=bwd]"]["status"] == "failed"
    assert "does not declare mode `bwd`" in out and "modes=" in out


def test_an_unknown_mode_is_a_usage_error(proj: Path) -> None:
    done = _tile(proj, "test", "--mode", "backward")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown mode `backward`" in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr
