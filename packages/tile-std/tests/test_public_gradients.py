"""`jax.grad` through tile-std's entry points (issue 35: a model trains with them): each
function's gradient equals JAX's autodiff of its jnp reference, on the CPU's interpreted
Pallas. Before, every entry point but the registered kernels raised "Linearization failed"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import tile_std

KEY = jax.random.key(0)
X = jax.random.normal(KEY, (8, 128))
W = 1 + 0.1 * jax.random.normal(jax.random.key(1), (128,))
B = 0.1 * jax.random.normal(jax.random.key(2), (128,))
Q = jax.random.normal(jax.random.key(3), (1, 2, 128, 64))
A = jax.random.normal(jax.random.key(4), (64, 32))


def _grads(f: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, ...]:
    def loss(*a: Any) -> Any:
        return (f(*a).astype(jnp.float32) ** 2).sum()

    grads = jax.grad(loss, argnums=tuple(range(len(args))))(*args)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return tuple(grads)  # pyright: ignore[reportUnknownArgumentType]


def _rms_eps(x: Any, w: Any) -> Any:
    return tile_std.rmsnorm(x, w, eps=0.5)


def _rms_eps_ref(x: Any, w: Any) -> Any:
    return tile_std.rmsnorm_ref(x, w, eps=0.5)


def _causal(q: Any, k: Any, v: Any) -> Any:
    return tile_std.attention(q, k, v, True)


def _causal_ref(q: Any, k: Any, v: Any) -> Any:
    return tile_std.attention_ref(q, k, v, True)


CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
    "softmax": (tile_std.softmax, tile_std.softmax_ref, (X,)),
    "rmsnorm": (tile_std.rmsnorm, tile_std.rmsnorm_ref, (X, W)),
    "rmsnorm eps=0.5": (_rms_eps, _rms_eps_ref, (X, W)),
    "layernorm": (tile_std.layernorm, tile_std.layernorm_ref, (X, W, B)),
    "attention causal": (_causal, _causal_ref, (Q, 0.5 * Q, 0.3 * Q)),
    "matmul": (tile_std.matmul, tile_std.matmul_ref, (A, A.T)),
    "scale": (tile_std.scale, tile_std.scale_ref, (X,)),
    "add": (tile_std.add, tile_std.add_ref, (X, 2 * X)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_gradient_of_each_entry_point_is_its_references(name: str) -> None:
    fn, ref, args = CASES[name]
    got, want = _grads(fn, args), _grads(ref, args)
    for i, (g, r) in enumerate(zip(got, want, strict=True)):
        assert g.shape == r.shape, (name, i)
        assert jnp.allclose(g, r, rtol=1e-4, atol=1e-4), (name, i, float(jnp.abs(g - r).max()))


def test_an_eps_reaches_the_backward() -> None:
    # A backward that kept the default eps would give the default's gradient.
    default = _grads(tile_std.rmsnorm, (X, W))[0]
    other = _grads(_rms_eps, (X, W))[0]
    assert not jnp.allclose(default, other, rtol=1e-3)
