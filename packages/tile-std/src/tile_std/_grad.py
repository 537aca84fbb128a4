"""Gradients for tile-std's Pallas kernels: the forward is the kernel, the backward JAX's
autodiff of the jnp reference.

A Pallas call has no transpose rule, so `jax.vjp` of a kernel alone fails. Behind a
`custom_vjp` the forward stays the kernel (its residuals are its inputs) and the backward
recomputes the reference and pulls the cotangent through it: a correct gradient for every
kernel. Pallas backward kernels replace it one by one (the row kernels: _rows_bwd.py), each
checked by `tile test --mode bwd` against that autodiff on float32 inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, cast

import jax

__all__ = ["differentiable"]

P = ParamSpec("P")


def _fill(args: Sequence[Any], where: Sequence[int], arrays: Sequence[Any]) -> list[Any]:
    """`args` with the arrays at positions `where` replaced by `arrays`."""
    full = list(args)
    for i, a in zip(where, arrays, strict=True):
        full[i] = a
    return full


def differentiable(
    forward: Callable[P, jax.Array],
    reference: Callable[..., jax.Array],
    backward: Callable[..., tuple[jax.Array, ...]] | None = None,
    *,
    saving: Callable[..., tuple[jax.Array, tuple[jax.Array, ...]]] | None = None,
    grad_options: tuple[str, ...] = (),
) -> Callable[P, jax.Array]:
    """`forward` (same name, signature and docs) with the gradient of `reference`, or
    `backward(*args, *saved, g) -> gradients` where a kernel computes them.

    Positional arrays are differentiated; other positional values (`causal`) go to both
    functions as they are, and keyword options (tunables) to `forward` alone (and `saving`),
    except those named in `grad_options` (a norm's `eps`), which change the function and so
    go to `backward` or `reference` too.
    `saving(*args, **options) -> (out, saved)`: the forward as the backward needs it, with
    the extra residuals it keeps (attention's log-sum-exp); without it nothing is saved.
    """

    run = cast("Callable[..., jax.Array]", forward)  # called with arrays put back in place

    @functools.wraps(forward)
    def op(*args: P.args, **options: P.kwargs) -> jax.Array:
        where = [i for i, a in enumerate(args) if isinstance(a, jax.Array)]
        shared = {k: v for k, v in options.items() if k in grad_options}

        def primal(*arrays: jax.Array) -> jax.Array:
            return run(*_fill(args, where, arrays), **options)

        call = cast("Any", jax.custom_vjp(primal))

        def call_fwd(*arrays: jax.Array) -> tuple[jax.Array, tuple[Any, ...]]:
            if saving is None:
                return cast("jax.Array", call(*arrays)), (arrays, ())
            out, saved = saving(*_fill(args, where, arrays), **options)
            return out, (arrays, tuple(saved))

        def call_bwd(res: tuple[Any, ...], g: jax.Array) -> tuple[Any, ...]:
            arrays, saved = res
            if backward is not None:
                return tuple(backward(*_fill(args, where, arrays), *saved, g, **shared))
            out, pull = jax.vjp(lambda *a: reference(*_fill(args, where, a), **shared), *arrays)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            return tuple(pull(g.astype(out.dtype)))  # pyright: ignore[reportUnknownArgumentType]

        call.defvjp(call_fwd, call_bwd)
        return cast("jax.Array", call(*(args[i] for i in where)))

    return op
