"""Fused attention against the float32 reference: causal or not, ragged sequence, padded head."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from tile_std import AttentionTiling, KernelInputError, attention, attention_ref

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
