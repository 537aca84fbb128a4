"""Which case of its kernel a recorded call is: the axis values whose inputs have the call's
structure, shapes, dtypes and static values.

A kernel's cases are made by its `inputs(case, key)`, which cannot be run backwards in
general; so candidate axis values are made from the call (its arrays' shapes, dtypes and
dimensions, and the kernel's declared values for every other axis) and each candidate is
checked by tracing `inputs` abstractly (`jax.eval_shape`: nothing is allocated, so a real
shape costs nothing). The first candidate whose inputs match the call exactly is the case.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from tile_runner._api import Case, KernelDef
from tile_runner._axes import Axes, AxisValue, format_value
from tile_runner._record import Call

__all__ = ["describe", "infer_case"]

_MOST = 512
"""Candidates tried per call at most (a kernel with many axes and dimensions)."""

Leaf = tuple[str, Any, Any]
"""`("array", shape, dtype name)` or `("static", value, None)`."""


def infer_case(definition: KernelDef, call: Call, backend: str) -> dict[str, str] | None:
    """The axis values (as case ids write them) of the case `call` is; None if none fits."""
    args = positional(call)
    wanted = _signature(args)
    names = _names(definition, backend)
    for params in itertools.islice(_candidates(definition, names, wanted[1]), _MOST):
        case = Case(definition.name, params)
        try:
            made = _inputs_signature(definition, case)
        except Exception:
            continue
        if made == wanted:
            return {k: format_value(v) for k, v in params.items()}
    return None


def describe(call: Call) -> str:
    """The call's arguments for a message: `(float32[8,64], float32[64], True)`."""
    _, leaves = _signature(positional(call))
    parts = [
        f"{dtype}[{','.join(str(d) for d in shape)}]" if kind == "array" else repr(shape)
        for kind, shape, dtype in leaves
    ]
    return f"({', '.join(parts)})"


def positional(call: Call) -> tuple[Any, ...]:
    """The call's positional arguments with the function's defaults filled in (`attention(q,
    k, v)` is `attention(q, k, v, False)`); keyword-only options (tunables) are left out."""
    try:
        signature = inspect.signature(call.fn)
        bound = signature.bind(*call.args, **call.kwargs)
    except (TypeError, ValueError):
        return call.args
    bound.apply_defaults()
    out: list[Any] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            out.append(bound.arguments[name])
        elif parameter.kind == parameter.VAR_POSITIONAL:
            out.extend(bound.arguments.get(name, ()))
    return tuple(out)


def _signature(args: Sequence[Any]) -> tuple[object, tuple[Leaf, ...]]:
    """The tree structure of `args` and each leaf: an array's shape and dtype, else the value."""
    import jax.numpy as jnp

    from tile_runner._jaxapi import tree_flatten

    leaves, tree = tree_flatten(tuple(args))
    out: list[Leaf] = []
    for leaf in leaves:
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            out.append(("array", tuple(leaf.shape), jnp.dtype(leaf.dtype).name))
        else:
            out.append(("static", leaf, None))
    return tree, tuple(out)


def _inputs_signature(definition: KernelDef, case: Case) -> tuple[object, tuple[Leaf, ...]]:
    """The signature of the case's inputs, traced without computing them."""
    import jax

    from tile_runner._jaxapi import eval_shape, tree_flatten, tree_unflatten

    made: list[tuple[Any, ...]] = []

    def inputs(key: Any) -> list[Any]:
        value = definition.inputs(case, key)
        args = cast("tuple[Any, ...]", value) if isinstance(value, tuple) else (value,)
        made.append(args)
        return [a for a in tree_flatten(args)[0] if isinstance(a, jax.Array)]

    shapes = iter(eval_shape(inputs, jax.random.key(0)))
    leaves, tree = tree_flatten(made[0])
    # The traced arrays stand for themselves only inside the trace: put their shapes back.
    abstract = [next(shapes) if isinstance(a, jax.Array) else a for a in leaves]
    return _signature(tree_unflatten(tree, abstract))


def _names(definition: KernelDef, backend: str) -> tuple[str, ...]:
    spec = definition.axes_for("bench", backend) or definition.axes_for("test", backend)
    return spec.names if spec is not None else ()


def _declared(definition: KernelDef, name: str) -> list[AxisValue]:
    """Every value any of the kernel's axes (bench and test, every backend) gives `name`."""
    out: dict[AxisValue, None] = {}
    for spec in (definition.bench, definition.test):
        specs: list[Axes] = []
        if isinstance(spec, Axes):
            specs = [spec]
        elif isinstance(spec, Mapping):
            specs = list(spec.values())
        for axes in specs:
            for value in axes.values(name):
                out.setdefault(value)
    return list(out)


def _candidates(
    definition: KernelDef, names: Sequence[str], leaves: Sequence[Leaf]
) -> Iterator[dict[str, AxisValue]]:
    """Axis values to try, the likeliest first: `shape` from the arrays' shapes (then from
    their dimensions, for a shape no array has), `dtype` from theirs, the rest declared."""
    arrays = [(shape, dtype) for kind, shape, dtype in leaves if kind == "array"]
    options = [_options(definition, name, arrays) for name in names]
    for combo in itertools.product(*options):
        yield dict(zip(names, combo, strict=True))


def _options(
    definition: KernelDef, name: str, arrays: Sequence[tuple[Any, Any]]
) -> list[AxisValue]:
    declared = _declared(definition, name)
    if name == "dtype":
        return list(dict.fromkeys([str(d) for _, d in arrays] + [str(v) for v in declared]))
    dims = list(dict.fromkeys(int(d) for shape, _ in arrays for d in shape))
    if name == "shape":
        ranks = sorted({len(v) for v in declared if isinstance(v, tuple)})
        shapes = [tuple(int(d) for d in s) for s, _ in arrays if not ranks or len(s) in ranks]
        for rank in ranks:
            shapes += list(itertools.product(dims, repeat=rank))
        return list(dict.fromkeys(shapes))
    if declared and all(isinstance(v, int) and not isinstance(v, bool) for v in declared):
        return list(dict.fromkeys([*declared, *dims]))
    return declared
