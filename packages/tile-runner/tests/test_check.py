"""Correctness checks: metrics, tolerances, NaN/Inf, shapes, pytrees; `tile.check`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tile_runner as tile
from tile_runner._check import compare, default_tolerance, resolve_tolerance, upcast


def _tol(dtype: str) -> float:
    return resolve_tolerance(dtype)


def _softmax(a: jax.Array) -> jax.Array:
    return jax.nn.softmax(a, axis=-1)


def test_correct_kernel_passes_with_metrics() -> None:
    x = tile.normal(tile.case_key(0, "c"), (32, 64), "float32")
    result = tile.check(_softmax, jax.nn.softmax, x)
    assert result.passed
    assert result.rel_l2_err is not None and result.rel_l2_err <= 1e-5
    assert result.tol == 1e-5
    assert result.worst_index is not None and len(result.worst_index) == 2


def test_wrong_kernel_fails_with_location() -> None:
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    wrong = x.copy()
    wrong[1, 2] += 1.0
    result = compare(wrong, x, _tol)
    assert not result.passed
    assert result.max_abs_err == pytest.approx(1.0)
    assert result.worst_index == [1, 2]
    expected = 1.0 / float(np.linalg.norm(x))
    assert result.rel_l2_err == pytest.approx(expected)
    assert result.message is not None and "[1, 2]" in result.message


def test_bfloat16_kernel_checked_against_float32_reference() -> None:
    x = tile.normal(tile.case_key(0, "bf"), (16, 128), "bfloat16")
    seen: list[str] = []

    def ref(a: jax.Array) -> jax.Array:
        seen.append(a.dtype.name)
        return jax.nn.softmax(a, axis=-1)

    result = tile.check(_softmax, ref, x)
    assert seen == ["float32"]  # reference ran on upcast inputs
    assert result.passed, result.message
    assert result.tol == 1e-2
    assert result.rel_l2_err is not None and 0 < result.rel_l2_err < 1e-2


def test_nan_inf_and_shape_mismatches_fail() -> None:
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert compare(a, a.copy(), _tol).passed  # matching NaN/Inf pass
    b = np.array([1.0, 2.0, np.inf], np.float32)
    result = compare(a, b, _tol)
    assert not result.passed
    assert "NaN/Inf mismatch" in (result.message or "")
    assert result.worst_index == [1]
    c = np.array([1.0, np.nan, -np.inf], np.float32)
    assert not compare(a, c, _tol).passed
    shape = compare(np.zeros((2, 3)), np.zeros((3, 2)), _tol)
    assert not shape.passed and "shape mismatch" in (shape.message or "")
    kind = compare(np.zeros(3, np.int32), np.zeros(3, np.float32), _tol)
    assert not kind.passed and "dtype mismatch" in (kind.message or "")


def test_integers_must_be_exact_and_zero_reference() -> None:
    assert compare(np.array([1, 2, 3]), np.array([1, 2, 3]), _tol).passed
    assert not compare(np.array([1, 2, 4]), np.array([1, 2, 3]), _tol).passed
    zero = np.zeros(4, np.float32)
    assert compare(zero, zero, _tol).passed
    assert not compare(zero + 1e-3, zero, _tol).passed


def test_pytree_outputs_report_worst_leaf() -> None:
    good = np.ones(3, np.float32)
    out = {"a": good, "b": good * 3}
    ref = {"a": good, "b": good * 2}
    result = compare(out, ref, _tol)
    assert not result.passed
    assert "['b']" in (result.message or "")
    assert not compare((good,), (good, good), _tol).passed


def test_tolerance_precedence() -> None:
    assert default_tolerance("float64") == 1e-10
    assert default_tolerance("float32") == 1e-5
    assert default_tolerance("float16") == 2e-3
    assert default_tolerance("bfloat16") == 1e-2
    assert default_tolerance("int32") == 0.0
    assert resolve_tolerance("float32", kernel=1e-3) == 1e-3
    assert resolve_tolerance("bfloat16", kernel={"float32": 1e-4}) == 1e-2
    assert resolve_tolerance("bfloat16", kernel={"default": 0.5}) == 0.5
    assert resolve_tolerance("float32", request={"float32": 0.1}, kernel=1e-3) == 0.1
    assert resolve_tolerance("float32", request={"default": 0.2}, kernel=1e-3) == 0.2
    x = np.ones(4, np.float32)

    def off_by_a_thousandth(a: jax.Array) -> jax.Array:
        return a * 1.001

    def identity(a: jax.Array) -> jax.Array:
        return a

    assert tile.check(off_by_a_thousandth, identity, x, tol=1e-2).passed
    assert not tile.check(off_by_a_thousandth, identity, x).passed


def test_upcast_keeps_wide_and_non_float() -> None:
    args = (
        jnp.ones(2, jnp.bfloat16),
        jnp.ones(2, jnp.float32),
        jnp.ones(2, jnp.int8),
        True,
        {"w": jnp.ones(2, jnp.float16)},
    )
    out = upcast(args)
    assert out[0].dtype == jnp.float32
    assert out[1].dtype == jnp.float32
    assert out[2].dtype == jnp.int8
    assert out[3] is True
    assert out[4]["w"].dtype == jnp.float32
