"""tile-std: the standard kernel library of tile (jnp references and Pallas kernels).

Every kernel function here has its gradient (`jax.grad` works): see `_public.py`.
"""

from __future__ import annotations

from ._attention import AttentionTiling, attention_ref
from ._bandwidth import add_ref, copy_ref, scale_ref
from ._errors import KernelInputError
from ._matmul import MatmulTiling, matmul_ref
from ._matmul_hopper import HopperTiling
from ._norms import layernorm_ref, rmsnorm_ref
from ._pallas import interpret_mode
from ._public import add, attention, copy, layernorm, matmul, rmsnorm, scale, softmax
from ._register import KERNELS
from ._softmax import softmax_ref

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
    "HopperTiling",
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
