"""Shared helpers: seeded inputs and the runner's pass rule (relative L2 error against float32)."""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import pytest

TOL = {"float32": 1e-5, "bfloat16": 1e-2}
MATMUL_TOL = {"float32": 2e-3, "bfloat16": 2e-2}


class Normal(Protocol):
    """The `normal` fixture: seeded standard normal values of a shape, cast to dtype."""

    def __call__(self, i: int, shape: tuple[int, ...], dtype: str) -> jax.Array: ...


class AssertClose(Protocol):
    """The `assert_close` fixture: checks the output against the reference, returns the error."""

    def __call__(
        self, out: jax.Array, ref: jax.Array, tol: float, dtype: str | None = None
    ) -> float: ...


def rel_l2(out: Any, ref: Any) -> float:
    """‖out - ref‖ / ‖ref‖ in float64, as the runner computes it."""
    o = np.asarray(jnp.asarray(out, jnp.float32), np.float64)
    r = np.asarray(jnp.asarray(ref, jnp.float32), np.float64)
    assert o.shape == r.shape
    assert np.isfinite(o).all(), "kernel output has NaN/Inf"
    return float(np.linalg.norm(o - r) / np.linalg.norm(r))


def upcast(*xs: jax.Array) -> list[jax.Array]:
    """The inputs as the runner hands them to references: floating arrays in float32."""
    return [x.astype(jnp.float32) for x in xs]


@pytest.fixture
def normal() -> Normal:
    """normal(i, shape, dtype): seeded standard normal values, cast to dtype."""

    def draw(i: int, shape: tuple[int, ...], dtype: str) -> jax.Array:
        # numpy draws need no XLA compilation per shape, which keeps the suite fast.
        values = np.random.default_rng(1234 + i).standard_normal(shape, dtype=np.float32)
        return jnp.asarray(values).astype(dtype)

    return draw


@pytest.fixture
def assert_close() -> AssertClose:
    """assert_close(out, ref, tol): the kernel output matches the float32 reference within tol."""

    def check(out: jax.Array, ref: jax.Array, tol: float, dtype: str | None = None) -> float:
        if dtype is not None:
            assert out.dtype == jnp.dtype(dtype), f"output dtype {out.dtype}, expected {dtype}"
        err = rel_l2(out, ref)
        assert err <= tol, f"relative L2 error {err:.3g} > {tol:.3g}"
        return err

    return check
