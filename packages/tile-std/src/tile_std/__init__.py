"""tile-std: the standard kernel library of tile (jnp references and Pallas kernels)."""

from __future__ import annotations

from ._attention import AttentionTiling, attention, attention_ref
from ._bandwidth import add, add_ref, copy, copy_ref, scale, scale_ref
from ._errors import KernelInputError
from ._matmul import MatmulTiling, matmul, matmul_ref
from ._norms import layernorm, layernorm_ref, rmsnorm, rmsnorm_ref
from ._pallas import interpret_mode
from ._register import KERNELS
from ._softmax import softmax, softmax_ref

__all__ = [  # grouped by topic, as CONTRIBUTING asks
    # bandwidth probes
    "add",
    "add_ref",
    "copy",
    "copy_ref",
    "scale",
    "scale_ref",
    # row kernels
    "layernorm",
    "layernorm_ref",
    "rmsnorm",
    "rmsnorm_ref",
    "softmax",
    "softmax_ref",
    # matrix kernels
    "MatmulTiling",
    "matmul",
    "matmul_ref",
    "AttentionTiling",
    "attention",
    "attention_ref",
    # registration (importing tile_std registers every kernel with tile_runner)
    "KERNELS",
    # plumbing and errors
    "KernelInputError",
    "interpret_mode",
]
