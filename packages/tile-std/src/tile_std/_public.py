"""The library's entry points with their gradients, so that `jax.grad` of a model that calls
`tile_std.rmsnorm` (or any other) works: a Pallas call has no transpose rule, so the bare
kernels cannot be differentiated (issue 35).

Each entry point is its Pallas forward behind a `custom_vjp` (`differentiable`): the backward
is a Pallas backward kernel where one exists (softmax, the norms, attention: the flash
backward from the forward's output and log-sum-exp), else JAX's autodiff of the jnp
reference. The registered kernels (`_register.py`) wrap their tunable variants with the same
backwards, so what `tile test --mode bwd` checks is what a model trains with.
"""

from __future__ import annotations

from typing import Any

from ._attention import attention as _attention
from ._attention import attention_ref, attention_saving
from ._attention_bwd import attention_backward
from ._bandwidth import add as _add
from ._bandwidth import add_ref, copy_ref, scale_ref
from ._bandwidth import copy as _copy
from ._bandwidth import scale as _scale
from ._grad import differentiable
from ._matmul import matmul as _matmul
from ._matmul import matmul_ref
from ._norms import LAYERNORM_EPS, RMSNORM_EPS, layernorm_ref, rmsnorm_ref
from ._norms import layernorm as _layernorm
from ._norms import rmsnorm as _rmsnorm
from ._rows_bwd import layernorm_backward, rmsnorm_backward, softmax_backward
from ._softmax import softmax as _softmax
from ._softmax import softmax_ref

__all__ = [
    "add",
    "attention",
    "attention_grad",
    "copy",
    "layernorm",
    "layernorm_grad",
    "matmul",
    "rmsnorm",
    "rmsnorm_grad",
    "scale",
    "softmax",
    "softmax_grad",
]


def softmax_grad(x: Any, g: Any) -> tuple[Any, ...]:
    """Softmax's Pallas backward, as `differentiable` calls it."""
    return (softmax_backward(x, g),)


def rmsnorm_grad(x: Any, w: Any, g: Any, *, eps: float = RMSNORM_EPS) -> tuple[Any, ...]:
    """RMSNorm's Pallas backward (dx, dw), as `differentiable` calls it."""
    return rmsnorm_backward(x, w, g, eps=eps)


def layernorm_grad(
    x: Any, w: Any, b: Any, g: Any, *, eps: float = LAYERNORM_EPS
) -> tuple[Any, ...]:
    """LayerNorm's Pallas backward (dx, dw, db), as `differentiable` calls it."""
    return layernorm_backward(x, w, b, g, eps=eps)


def attention_grad(*args: Any) -> Any:
    """The flash-attention backward, from the forward's output and log-sum-exp."""
    q, k, v, causal, out, lse, g = args
    return attention_backward(q, k, v, (out, lse), g, causal=causal)


softmax = differentiable(_softmax, softmax_ref, softmax_grad)
rmsnorm = differentiable(_rmsnorm, rmsnorm_ref, rmsnorm_grad, grad_options=("eps",))
layernorm = differentiable(_layernorm, layernorm_ref, layernorm_grad, grad_options=("eps",))
attention = differentiable(_attention, attention_ref, attention_grad, saving=attention_saving)
matmul = differentiable(_matmul, matmul_ref)
copy = differentiable(_copy, copy_ref)
scale = differentiable(_scale, scale_ref)
add = differentiable(_add, add_ref)
