"""Fused attention against the float32 reference: causal or not, ragged sequence, padded head."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

import tile_runner as tile
from tile_std import AttentionTiling, KernelInputError, attention, attention_ref
from tile_std._attention import attention_with_lse
from tile_std._attention_bwd import (
    _GPU_BWD,  # pyright: ignore[reportPrivateUsage]
    _GPU_BWD_WIDE,  # pyright: ignore[reportPrivateUsage]
    AttentionBwdTiling,
    attention_backward,
)

from .conftest import MATMUL_TOL, AssertClose, Normal, upcast

SMALL = AttentionTiling(block_q=32, block_k=16, num_warps=4, num_stages=1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    ("shape", "tiling"),
    [((1, 2, 100, 24), SMALL), ((2, 1, 64, 32), None)],
    ids=["ragged-seq-padded-dim", "default-tiling"],
)
def test_attention_matches_reference(
    normal: Normal,
    assert_close: AssertClose,
    *,
    shape: tuple[int, int, int, int],
    tiling: AttentionTiling | None,
    causal: bool,
    dtype: str,
):
    q, k, v = (normal(i, shape, dtype) for i in range(3))
    out = attention(q, k, v, causal, tiling=tiling)
    assert out.shape == shape
    assert_close(out, attention_ref(*upcast(q, k, v), causal=causal), MATMUL_TOL[dtype], dtype)


def test_causal_first_row_sees_only_the_first_key(normal: Normal):
    q, k, v = (normal(i, (1, 1, 40, 16), "float32") for i in range(3))
    out = attention(q, k, v, True, tiling=SMALL)
    # Row 0 attends to key 0 alone, so its output is v[0] exactly (up to rounding).
    assert jnp.allclose(out[0, 0, 0], v[0, 0, 0], atol=1e-6)
    # Row 1 mixes keys 0 and 1 only.
    assert not jnp.allclose(out[0, 0, 1], v[0, 0, 1], atol=1e-3)


def test_attention_rejects_bad_inputs(normal: Normal):
    q = normal(0, (1, 2, 16, 8), "float32")
    with pytest.raises(KernelInputError, match="share one"):
        attention(q, normal(1, (1, 2, 32, 8), "float32"), q)
    with pytest.raises(KernelInputError, match="causal must be a Python bool"):
        # A jax bool on purpose, where the signature asks for a Python bool.
        attention(q, q, q, jnp.array(True))  # pyright: ignore[reportArgumentType]


SMALL_BWD = AttentionBwdTiling(q_step=16, kv_held=32, q_held=32, kv_step=16, num_warps=4)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    ("shape", "dtype", "tiling"),
    [
        ((1, 2, 100, 24), "float32", SMALL_BWD),
        ((1, 2, 100, 24), "bfloat16", SMALL_BWD),
        ((2, 1, 128, 32), "float32", None),
        # The GPU's own blocks, interpreted: what the GPU runs, at a length (300) that ends
        # mid-block for the 64-row blocks of the bfloat16 default.
        ((1, 1, 300, 128), "bfloat16", _GPU_BWD),
        ((1, 1, 200, 64), "float32", _GPU_BWD_WIDE),
    ],
    ids=["ragged-seq-padded-dim", "ragged-bfloat16", "default-tiling", "gpu-blocks", "gpu-wide"],
)
def test_attention_pallas_backward_matches_autodiff_of_the_reference(
    normal: Normal,
    assert_close: AssertClose,
    *,
    shape: tuple[int, int, int, int],
    dtype: str,
    tiling: AttentionBwdTiling | None,
    causal: bool,
):
    # The small blocks step fewer rows than a program holds on both kernels, so under the
    # causal mask key programs start mid-sequence and cross the diagonal over several steps.
    q, k, v, g = (normal(i, shape, dtype) for i in range(4))
    out, lse = attention_with_lse(q, k, v, causal, tiling=SMALL)
    got = attention_backward(q, k, v, (out, lse), g, causal=causal, tiling=tiling)
    _, pull = jax.vjp(functools.partial(attention_ref, causal=causal), *upcast(q, k, v))  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    want = pull(*upcast(g))  # pyright: ignore[reportUnknownVariableType]
    for name, mine, theirs in zip("qkv", got, want, strict=True):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        assert mine.dtype == q.dtype, name
        assert_close(mine, theirs, MATMUL_TOL[dtype], dtype)  # pyright: ignore[reportUnknownArgumentType]


def test_registered_attention_gradient_is_the_pallas_backward(normal: Normal):
    q, k, v, g = (normal(i, (1, 2, 64, 32), "float32") for i in range(4))
    fn = tile.get_kernel("std/attention").fn

    def loss(a: jax.Array, b: jax.Array, c: jax.Array) -> jax.Array:
        return jnp.sum(fn(a, b, c, True) * g)

    grads = jax.grad(loss, argnums=(0, 1, 2))(q, k, v)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    out, lse = attention_with_lse(q, k, v, True)
    direct = attention_backward(q, k, v, (out, lse), g, causal=True)
    for through, mine in zip(grads, direct, strict=True):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        assert jnp.array_equal(through, mine)  # pyright: ignore[reportUnknownArgumentType]
