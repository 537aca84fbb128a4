"""A kernel in `bwd` or `fwd_bwd` mode, as a KernelDef the case pipeline runs unchanged.

The mode's KernelDef takes the case's inputs followed by a cotangent (seeded, random, in the
output's dtype), and for `bwd` also the kernel's and the reference's residuals, made by their
forward passes while the inputs are made (outside every timed region):

- `fwd_bwd`: kernel and reference both return `{"value": out, "grad": {input: gradient}}`;
- `bwd`: the kernel applies its VJP to its own residuals, the timed reference to its own; the
  check compares the kernel's gradients with the VJP of the reference on the upcast inputs
  (`KernelDef.check_reference`), as `fwd` compares outputs.

Gradients are taken for every argument whose arrays are all floating point, named by the
kernel's parameter names.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, cast

from tile_runner._api import Case, KernelDef
from tile_runner._compile import bind_static
from tile_runner._errors import DefinitionError, Unsupported
from tile_runner._modes import Mode

__all__ = ["grad_label", "mode_kernel"]

_NOT_DIFFERENTIABLE = (
    "differentiation rule",
    "transpose rule",
    "linearization failed",
    "requires real- or complex-valued inputs",
    "does not support reverse-mode",
    "reverse-mode differentiation does not work",
)


def grad_label(path: str) -> str:
    """How a check names a leaf of a mode's output: `['grad']['w']` -> "gradient of input `w`"."""
    parts = [p.strip("'\"") for p in path[1:-1].split("][")] if path.startswith("[") else []
    if parts[:1] == ["value"]:
        return "output" + "".join(f"[{p}]" for p in parts[1:])
    if parts[:1] == ["grad"]:
        parts = parts[1:]
    if not parts:
        return f"output {path}"
    return f"gradient of input `{parts[0]}`" + "".join(f"[{p}]" for p in parts[1:])


def _is_float_arg(value: Any) -> bool:
    import jax
    import jax.numpy as jnp

    leaves = jax.tree.leaves(value)
    return bool(leaves) and all(
        isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.inexact) for x in leaves
    )


def _names(fn: Callable[..., Any], count: int) -> list[str]:
    """The kernel's positional parameter names (`arg3` where it has none)."""
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


def _not_differentiable(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, NotImplementedError) or any(s in text for s in _NOT_DIFFERENTIABLE)


def _vjp_of(fn: Callable[..., Any], raw: tuple[Any, ...], what: str) -> tuple[Any, Any, list[int]]:
    """`fn`'s value and VJP at `raw`, with respect to its floating-point arguments."""
    from tile_runner import _jaxapi as jaxapi

    diff = [i for i, a in enumerate(raw) if _is_float_arg(a)]
    if not diff:
        raise Unsupported(f"{what} has no floating-point input to differentiate")

    def primal(*d: Any) -> Any:
        full = list(raw)
        for i, x in zip(diff, d, strict=True):
            full[i] = x
        return fn(*full)

    try:
        out, vjp = jaxapi.vjp(primal, *(raw[i] for i in diff))
    except Exception as exc:
        if _not_differentiable(exc):
            raise Unsupported(f"{what} cannot be differentiated: {exc}") from exc
        raise
    return out, vjp, diff


def _pull(vjp: Any, out: Any, ct: Any, what: str) -> tuple[Any, ...]:
    """Apply a VJP to the cotangent (cast to the output's dtypes: a reference's may be wider)."""
    from tile_runner import _jaxapi as jaxapi

    out_leaves, out_tree = jaxapi.tree_flatten(out)
    ct_leaves, ct_tree = jaxapi.tree_flatten(ct)
    if out_tree != ct_tree:
        raise TypeError(
            f"{what}: its output structure {out_tree} differs from the kernel's {ct_tree}, "
            "which the cotangent has"
        )
    cast = [
        c.astype(o.dtype) if c.dtype != o.dtype else c
        for c, o in zip(ct_leaves, out_leaves, strict=True)
    ]
    try:
        return tuple(vjp(jaxapi.tree_unflatten(out_tree, cast)))
    except Exception as exc:
        if _not_differentiable(exc):
            raise Unsupported(f"{what} cannot be differentiated: {exc}") from exc
        raise


def _value_and_grad(
    fn: Callable[..., Any], signature: Callable[..., Any], what: str
) -> Callable[..., Any]:
    """`(*inputs, ct) -> {"value": out, "grad": {input name: gradient}}`."""

    def run(*args: Any) -> Any:
        raw, ct = tuple(args[:-1]), args[-1]
        out, vjp, diff = _vjp_of(fn, raw, what)
        grads = _pull(vjp, out, ct, what)
        names = _names(signature, len(raw))
        return {"value": out, "grad": {names[i]: g for i, g in zip(diff, grads, strict=True)}}

    run.__name__ = f"{getattr(fn, '__name__', 'kernel')}_fwd_bwd"
    return run


def _normal32(key: Any, count: int) -> Any:
    import jax

    return jax.random.normal(key, (count,), "float32")


def _cotangent(fn: Callable[..., Any], raw: tuple[Any, ...], key: Any) -> Any:
    """A seeded normal cotangent shaped as `fn`'s output, in its dtypes (float0 for integers)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from tile_runner import _jaxapi as jaxapi
    from tile_runner._inputs import draw

    bound, dynamic = bind_static(fn, raw)
    shapes = jaxapi.eval_shape(bound, *dynamic)
    leaves, tree = jaxapi.tree_flatten(shapes)
    keys = jax.random.split(jax.random.fold_in(key, 1), max(1, len(leaves)))
    ct = [
        draw(functools.partial(_normal32, k), s.shape, s.dtype)
        if jnp.issubdtype(s.dtype, jnp.inexact)
        else np.zeros(s.shape, jax.dtypes.float0)
        for k, s in zip(keys, leaves, strict=False)
    ]
    return jaxapi.tree_unflatten(tree, ct)


def _raw(value: Any) -> tuple[Any, ...]:
    """An inputs factory's arguments: a tuple, or one value as a single argument."""
    return cast("tuple[Any, ...]", value) if isinstance(value, tuple) else (value,)


class _Residuals:
    """The VJP trees of one `bwd` case's kernel and reference, kept when its inputs are made:
    the residuals (the VJPs' leaves) are inputs of the timed programs."""

    def __init__(self, signature: Callable[..., Any]) -> None:
        self.signature = signature
        self.trees: dict[str, Any] = {}

    def make(self, fn: Callable[..., Any], raw: tuple[Any, ...], side: str) -> list[Any]:
        """Run `fn`'s forward (jitted) and keep its residuals' tree."""
        from tile_runner import _jaxapi as jaxapi

        bound, dynamic = bind_static(lambda *a: _vjp_of(fn, a, f"the {side}")[1], raw)
        leaves, self.trees[side] = jaxapi.tree_flatten(jaxapi.jit(bound)(*dynamic))
        return leaves

    def apply(self, side: str) -> Callable[..., Any]:
        """`(*inputs, ct, kernel residuals, reference residuals) -> {input: gradient}`."""

        def run(*args: Any) -> Any:
            from tile_runner import _jaxapi as jaxapi

            raw, ct = tuple(args[:-3]), args[-3]
            leaves = args[-2] if side == "kernel" else args[-1]
            vjp = jaxapi.tree_unflatten(self.trees[side], leaves)
            try:
                grads = tuple(vjp(ct))
            except Exception as exc:
                if _not_differentiable(exc):
                    raise Unsupported(f"the {side} cannot be differentiated: {exc}") from exc
                raise
            diff = [i for i, a in enumerate(raw) if _is_float_arg(a)]
            names = _names(self.signature, len(raw))
            return {names[i]: g for i, g in zip(diff, grads, strict=True)}

        run.__name__ = f"{getattr(self.signature, '__name__', 'kernel')}_bwd"
        return run


def mode_kernel(kernel: KernelDef, fn: Callable[..., Any], mode: Mode) -> KernelDef:
    """`kernel` as `mode` runs it, with `fn` (its configured function) as the kernel.

    `fwd` is `kernel` itself. Gradient modes take the case's inputs, then the cotangent (and
    in `bwd` the residuals); their work is the mode's declared one, else XLA's estimate.
    """
    if mode == "fwd":
        return kernel
    work = kernel.modes.get(mode)
    if work is None:
        raise DefinitionError(
            f"kernel `{kernel.name}` does not declare mode `{mode}` (its modes: "
            f"{', '.join(kernel.modes)})",
            hint="declare it with `@tile.kernel(modes=...)`, or leave it out of --mode",
        )
    ref = kernel.reference
    if mode == "fwd_bwd":

        def inputs(case: Case, key: Any) -> tuple[Any, ...]:
            raw = _raw(kernel.inputs(case, key))
            return (*raw, _cotangent(fn, raw, key))

        return dataclasses.replace(
            kernel,
            fn=_value_and_grad(fn, kernel.fn, "the kernel"),
            inputs=inputs,
            reference=None if ref is None else _value_and_grad(ref, kernel.fn, "the reference"),
            bytes=work.bytes,
            flops=work.flops,
        )
    residuals = _Residuals(kernel.fn)

    def bwd_inputs(case: Case, key: Any) -> tuple[Any, ...]:
        raw = _raw(kernel.inputs(case, key))
        ct = _cotangent(fn, raw, key)
        mine = residuals.make(fn, raw, "kernel")
        theirs: list[Any] = []
        if ref is not None:
            try:
                theirs = residuals.make(ref, raw, "reference")
            except Exception:  # the check then says why; the timing warns "no speedup"
                residuals.trees.pop("reference", None)
        return (*raw, ct, mine, theirs)

    def check_reference(*args: Any) -> Any:
        assert ref is not None
        return _value_and_grad(ref, kernel.fn, "the reference")(*args[:-3], args[-3])["grad"]

    return dataclasses.replace(
        kernel,
        fn=residuals.apply("kernel"),
        inputs=bwd_inputs,
        reference=None if ref is None else residuals.apply("reference"),
        check_reference=None if ref is None else check_reference,
        bytes=work.bytes,
        flops=work.flops,
    )
