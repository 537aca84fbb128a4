"""The check gives the verdicts and figures of the float64 host check it replaced.

`_host_leaf` is that host check (tile-runner before the check moved to the device): outputs
copied to the host and widened to float64. Every case here runs both and compares them, on
random outputs and on the adversarial ones: NaN, ±inf, -0.0, integers, bools, complex,
empty and 0-d arrays, huge and tiny magnitudes, pytrees. Each runs twice: with the check's
figures computed by a compiled program on the device (what large outputs get) and by numpy on
the host (small ones, `HOST_ELEMENTS`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tile_runner._host as host_module
from tile_runner._check import compare, resolve_tolerance


@pytest.fixture(autouse=True, params=["device", "host"])
def where(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test of this module once with each path of the check."""
    if request.param == "device":
        monkeypatch.setattr(host_module, "HOST_ELEMENTS", 0)
    return str(request.param)


def _host_leaf(out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any], tol: float) -> dict[str, Any]:
    """Verdict and figures of one leaf, computed on the host in float64 (the old check)."""
    complex_ = np.iscomplexobj(out) or np.iscomplexobj(ref)
    wide = np.complex128 if complex_ else np.float64
    o, r = out.astype(wide), ref.astype(wide)

    def status(x: np.ndarray[Any, Any]) -> tuple[Any, Any, Any]:
        parts = (x.real, x.imag) if complex_ else (x,)
        nan = np.logical_or.reduce([np.isnan(p) for p in parts])
        pos = np.logical_or.reduce([np.isposinf(p) for p in parts])
        neg = np.logical_or.reduce([np.isneginf(p) for p in parts])
        return nan, pos, neg

    (on, op, om), (rn, rp, rm) = status(o), status(r)
    bad = (on != rn) | (op != rp) | (om != rm)
    if bad.any():
        first = [int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape)]
        return {"passed": False, "mismatch": True, "index": first}
    finite = np.isfinite(o) & np.isfinite(r)
    err = np.abs(np.where(finite, o, 0) - np.where(finite, r, 0))
    max_abs = float(err.max()) if err.size else 0.0
    diff_norm = float(np.linalg.norm(err.ravel()))
    ref_norm = float(np.linalg.norm(np.where(finite, r, 0).ravel()))
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else math.inf)
    worst = [int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape)] if err.size else []
    return {
        "passed": rel <= tol,
        "mismatch": False,
        "rel": rel,
        "max_abs": max_abs,
        "index": worst,
        "err": err,
    }


def _agree(out: Any, ref: Any) -> None:
    """Device and host checks agree on one leaf: verdict, figures, and where the worst error is."""
    o_host, r_host = np.asarray(out), np.asarray(ref)
    tol = resolve_tolerance(o_host.dtype.name)
    want = _host_leaf(o_host, r_host, tol)
    got = compare(jnp.asarray(out), jnp.asarray(ref), resolve_tolerance)
    if want["mismatch"]:
        assert not got.passed and "NaN/Inf mismatch" in (got.message or "")
        assert got.worst_index == want["index"]
        return
    assert got.rel_l2_err is not None and got.max_abs_err is not None
    # float32 figures of float64 ones: a few float32 roundings apart.
    assert got.max_abs_err == pytest.approx(want["max_abs"], rel=1e-6, abs=0)
    assert got.rel_l2_err == pytest.approx(want["rel"], rel=1e-5, abs=1e-30)
    knife_edge = math.isfinite(want["rel"]) and want["rel"] == pytest.approx(tol, rel=1e-4)
    if not knife_edge:
        assert got.passed == want["passed"], (got, want["rel"], tol)
    # Ties may resolve differently after float32 rounding; the error found must be the largest.
    if want["err"].size:
        assert want["err"][tuple(got.worst_index or [])] == pytest.approx(want["max_abs"], rel=1e-6)


_RNG = np.random.default_rng(20261203)


def _random_pair(shape: tuple[int, ...], dtype: str, scale: float) -> tuple[Any, Any]:
    ref = _RNG.standard_normal(shape).astype(np.float32) * scale
    noise = _RNG.standard_normal(shape).astype(np.float32) * scale * _RNG.choice([0, 1e-7, 1e-3])
    return jnp.asarray(ref + noise, dtype), jnp.asarray(ref, jnp.float32)


@pytest.mark.parametrize("seed", range(40))
def test_random_outputs_agree(seed: int) -> None:
    shape = tuple(int(d) for d in _RNG.integers(1, 40, size=int(_RNG.integers(0, 4))))
    dtype = ["float32", "bfloat16", "float16"][seed % 3]
    span = 3 if dtype == "float16" else 30  # float16 holds no more than about 6.5e4
    scale = float(10.0 ** _RNG.integers(-span, span)) if seed % 5 == 0 else 1.0
    out, ref = _random_pair(shape, dtype, scale)
    _agree(out, ref)


def test_tolerance_knife_edges_agree() -> None:
    ref = jnp.asarray(_RNG.standard_normal(1000), jnp.float32)
    for factor in (0.5e-5, 0.9e-5, 1.1e-5, 2e-5):
        _agree(ref * (1 + factor), ref)


@pytest.mark.parametrize(
    ("out", "ref"),
    [
        ([1.0, np.nan, np.inf, -np.inf], [1.0, np.nan, np.inf, -np.inf]),  # matching: pass
        ([1.0, np.nan, 3.0], [1.0, 2.0, 3.0]),
        ([1.0, 2.0, np.inf], [1.0, 2.0, -np.inf]),
        ([1.0, 2.0, 3.0], [1.0, 2.0, np.nan]),
        ([-0.0, 0.0, 1.0], [0.0, -0.0, 1.0]),  # signed zeros are equal
        ([0.0, 0.0], [0.0, 0.0]),  # zero reference, exact zero: pass
        ([1e-3, 0.0], [0.0, 0.0]),  # zero reference, any error: fail
        ([3e38, -3e38], [3e38, -3.1e38]),  # squares overflow float32
        ([3e38, -3e38], [-3e38, 3e38]),  # so does the difference
        ([1e-30, 2e-30], [1e-30, 3e-30]),  # squares underflow float32
        ([1.0, 1.0, 1.0], [1.0, 1.0, 1.0 + 2e-5]),
    ],
)
def test_adversarial_floats_agree(out: list[float], ref: list[float]) -> None:
    _agree(np.asarray(out, np.float32), np.asarray(ref, np.float32))


def test_integers_and_bools_are_exact() -> None:
    big = np.array([2**30 + 1, 5, -7], np.int32)
    near = np.array([2**30, 5, -7], np.int32)  # equal in float32, not as integers
    got = compare(jnp.asarray(big), jnp.asarray(near), resolve_tolerance)
    assert not got.passed and got.worst_index == [0]
    _agree(np.array([1, 2, 3], np.int32), np.array([1, 2, 3], np.int32))
    _agree(np.array([1, 2, 4], np.int32), np.array([1, 2, 3], np.int32))
    _agree(np.array([True, False]), np.array([True, False]))
    _agree(np.array([True, True]), np.array([True, False]))
    _agree(np.arange(-50, 50, dtype=np.int8), np.arange(-50, 50, dtype=np.int8)[::-1])


def test_complex_outputs_agree() -> None:
    ref = (_RNG.standard_normal(64) + 1j * _RNG.standard_normal(64)).astype(np.complex64)
    _agree(ref, ref)
    _agree(ref * (1 + 1e-3), ref)
    with_nan = ref.copy()
    with_nan[5] = complex(1.0, np.nan)
    _agree(with_nan, ref)
    _agree(with_nan, with_nan)


def test_empty_and_scalar_outputs() -> None:
    empty = compare(jnp.zeros((0, 3)), jnp.zeros((0, 3)), resolve_tolerance)
    assert empty.passed and empty.worst_index == []
    _agree(np.float32(2.0), np.float32(2.0))
    _agree(np.float32(2.0), np.float32(3.0))


def test_pytrees_report_the_worst_leaf_like_the_host_check() -> None:
    good = jnp.ones(3)
    out = {"a": good, "b": good * 3, "c": (good, jnp.array([1, 2], jnp.int32))}
    ref = {"a": good, "b": good * 2, "c": (good, jnp.array([1, 2], jnp.int32))}
    result = compare(out, ref, resolve_tolerance)
    assert not result.passed and "['b']" in (result.message or "")
    assert result.rel_l2_err == pytest.approx(float(np.linalg.norm([1, 1, 1]) / np.sqrt(12)))


@pytest.mark.gpu
def test_only_scalars_leave_the_device() -> None:
    # On a GPU (the CPU backend does not enforce transfer guards) a transfer guard turns any implicit device-to-host copy of an array into an error; the
    # check's figures come back through one explicit device_get of scalars.
    # 1025 x 1024 is above HOST_ELEMENTS: reduced on the device by either parametrization.
    out, ref = _random_pair((1025, 1024), "float32", 1.0)
    with (
        jax.transfer_guard_device_to_host("disallow_explicit"),
        pytest.raises(Exception, match=r"[Dd]isallowed"),
    ):
        np.asarray(out)
    with jax.transfer_guard_device_to_host("disallow"):
        result = compare(out, ref, resolve_tolerance)
    assert result.rel_l2_err is not None
    # A small leaf goes to the host by an explicit copy, which this guard allows; so does
    # the element a failure's message quotes.
    _, small = _random_pair((64, 64), "float32", 1.0)
    with jax.transfer_guard_device_to_host("disallow"):
        assert compare(small, small, resolve_tolerance).passed
        failed = compare(small * 1.01, small, resolve_tolerance)
    assert not failed.passed and "relative L2 error" in (failed.message or "")
