"""Declared bytes and FLOPs: each input read once, each output written once, computed by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax.numpy as jnp

# The work formulas have no public names (the registry wraps them for tile_runner's Case only).
from tile_std import _attention, _bandwidth, _matmul, _norms, _softmax  # pyright: ignore[reportPrivateUsage]


@dataclass
class FakeCase:
    """The part of tile_runner's Case the work formulas read."""

    shape: tuple[int, ...]
    dtype: str
    params: dict[str, Any] = field(default_factory=dict[str, Any])

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return jnp.dtype(self.dtype).itemsize

    def get(self, name: str, default: Any = None) -> Any:
        return self.params.get(name, default)


def test_bandwidth_work():
    case = FakeCase((1 << 28,), "float32")  # 1 GiB
    assert _bandwidth.copy_bytes(case) == 2 * 2**30
    assert _bandwidth.copy_flops(case) == 0
    assert _bandwidth.scale_bytes(case) == 2 * 2**30
    assert _bandwidth.scale_flops(case) == 2 * 2**28
    half = FakeCase((1000,), "bfloat16")
    assert _bandwidth.add_bytes(half) == 3 * 1000 * 2
    assert _bandwidth.add_flops(half) == 1000


def test_row_kernel_work():
    case = FakeCase((4096, 4096), "bfloat16")
    x_bytes = 4096 * 4096 * 2  # 32 MiB read, the same written
    assert _softmax.softmax_bytes(case) == 2 * x_bytes
    assert _softmax.softmax_flops(case) == 5 * 4096 * 4096
    assert _norms.rmsnorm_bytes(case) == 2 * x_bytes + 4096 * 2
    assert _norms.rmsnorm_flops(case) == 4 * 4096 * 4096
    assert _norms.layernorm_bytes(case) == 2 * x_bytes + 2 * 4096 * 2
    assert _norms.layernorm_flops(case) == 7 * 4096 * 4096


def test_matmul_work():
    case = FakeCase((4096, 2048, 1024), "bfloat16")  # (M, N, K)
    # A: 4096x1024, B: 1024x2048, C: 4096x2048, two bytes each.
    assert _matmul.matmul_bytes(case) == (4096 * 1024 + 1024 * 2048 + 4096 * 2048) * 2
    assert _matmul.matmul_flops(case) == 2 * 4096 * 2048 * 1024


def test_attention_work():
    full = FakeCase((4, 32, 4096, 128), "bfloat16", {"causal": False})
    causal = FakeCase((4, 32, 4096, 128), "bfloat16", {"causal": True})
    elements = 4 * 32 * 4096 * 128
    assert _attention.attention_bytes(full) == 4 * elements * 2  # q, k, v read; o written
    # QK^T and PV: 2*S*S*D each per (batch, head).
    assert _attention.attention_flops(full) == 4 * 4 * 32 * 4096 * 4096 * 128
    assert _attention.attention_flops(causal) == _attention.attention_flops(full) / 2
    assert _attention.attention_bytes(causal) == _attention.attention_bytes(full)
