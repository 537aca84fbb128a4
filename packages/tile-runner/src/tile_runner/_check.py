"""Correctness: compare a kernel's outputs with its reference, leaf by leaf (the error
figures themselves: `tile_runner._figures`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tile_protocol import Check
from tile_runner._figures import category, figures

__all__ = [
    "DEFAULT_TOLERANCES",
    "check",
    "compare",
    "default_tolerance",
    "resolve_tolerance",
    "upcast",
]

DEFAULT_TOLERANCES: dict[str, float] = {
    "float64": 1e-10,
    "float32": 1e-5,
    "float16": 2e-3,
    "bfloat16": 1e-2,
    "complex128": 1e-10,
    "complex64": 1e-5,
}
"""Largest relative L2 error that passes, by output dtype; integers and bools must be exact."""

_FLOAT8_TOLERANCE = 1e-1


def default_tolerance(dtype: str) -> float:
    """The built-in tolerance for outputs of `dtype`."""
    if dtype in DEFAULT_TOLERANCES:
        return DEFAULT_TOLERANCES[dtype]
    if dtype.startswith(("float8", "float4", "float6")):
        return _FLOAT8_TOLERANCE
    return 0.0


def resolve_tolerance(
    dtype: str,
    *,
    request: Mapping[str, float] | None = None,
    kernel: float | Mapping[str, float] | None = None,
) -> float:
    """Tolerance for an output of `dtype`: the run's setting, else the kernel's, else built in."""
    if request:
        if dtype in request:
            return float(request[dtype])
        if "default" in request:
            return float(request["default"])
    if isinstance(kernel, int | float):
        return float(kernel)
    if kernel is not None:
        value = kernel.get(dtype, kernel.get("default"))
        if value is not None:
            return float(value)
    return default_tolerance(dtype)


def upcast(args: Any) -> Any:
    """Floating arrays narrower than float32 become float32 (wider ones stay), for references."""
    import jax
    import jax.numpy as jnp

    def narrow_float(leaf: object) -> bool:
        """A floating array (host or device) narrower than float32."""
        dtype = getattr(leaf, "dtype", None)
        return (
            isinstance(leaf, jax.Array | np.ndarray)
            and dtype is not None
            and jnp.issubdtype(dtype, jnp.floating)
            and jnp.dtype(dtype).itemsize < 4
        )

    def one(leaf: Any) -> Any:
        return leaf.astype(jnp.float32) if narrow_float(leaf) else leaf

    return jax.tree_util.tree_map(one, args)


def _fail(message: str, tol: float | None = None, index: list[int] | None = None) -> Check:
    return Check(passed=False, tol=tol, worst_index=index, message=message)


def _value(x: Any, flat: int) -> str:
    """One element of a device array, widened as the host check printed it (copied by an
    explicit `device_get`, which a `disallow` transfer guard allows)."""
    import jax
    import jax.numpy as jnp

    at = np.unravel_index(flat, x.shape)
    one = np.asarray(jax.device_get(x[at]))
    wide = np.complex128 if jnp.issubdtype(x.dtype, jnp.complexfloating) else np.float64
    return str(one.astype(wide))


def _compare_leaf(out: Any, ref: Any, tol: float) -> Check:
    """Compare one output array with its reference array, where they live."""
    dtypes = f"kernel {out.dtype.name} vs reference {ref.dtype.name}"
    if out.shape != ref.shape:
        return _fail(f"shape mismatch: kernel {out.shape} vs reference {ref.shape} ({dtypes})", tol)
    if category(out.dtype) != category(ref.dtype):
        return _fail(f"dtype mismatch: {dtypes}", tol)
    if out.size == 0:
        return Check(passed=True, max_abs_err=0.0, rel_l2_err=0.0, tol=tol, worst_index=[])
    f = figures(out, ref)

    def index(flat: int) -> list[int]:
        return [int(i) for i in np.unravel_index(flat, out.shape)]

    if f.mismatches:
        at = f.first_mismatch
        return _fail(
            f"NaN/Inf mismatch at {f.mismatches} of {out.size} positions; first at {index(at)}: "
            f"kernel {_value(out, at)} vs reference {_value(ref, at)} ({dtypes})",
            tol,
            index(at),
        )
    # Against a zero reference only an exact zero passes.
    exact_zero = 0.0 if f.diff_norm == 0 else float("inf")
    rel = f.diff_norm / f.ref_norm if f.ref_norm > 0 else exact_zero
    passed = rel <= tol
    message = None
    if not passed:
        message = (
            f"relative L2 error {rel:.3g} > tol {tol:.3g}; max abs error {f.max_abs:.3g} at "
            f"{index(f.worst)}: kernel {_value(out, f.worst)} vs reference "
            f"{_value(ref, f.worst)} ({dtypes})"
        )
    return Check(
        passed=passed,
        max_abs_err=f.max_abs,
        rel_l2_err=rel,
        tol=tol,
        worst_index=index(f.worst),
        message=message,
    )


def _on_device(leaf: Any) -> Any:
    """A jax.Array as it is; anything array-like (numpy, scalars) put on the default device."""
    import jax
    import jax.numpy as jnp

    return leaf if isinstance(leaf, jax.Array) else jnp.asarray(leaf)


def compare(
    out: Any,
    ref: Any,
    tol_for: Callable[[str], float],
    *,
    label: Callable[[str], str] | None = None,
) -> Check:
    """Compare output pytrees leaf by leaf; report the worst leaf (failures first).

    `label`: how a leaf's path (`['w']`) is named in a failure's message, even for a single
    leaf (a gradient check names its input); by default `output PATH`, when there are several.
    """
    from tile_runner._jaxapi import keystr, tree_flatten, tree_flatten_with_path

    out_leaves, out_tree = tree_flatten(out)
    ref_leaves, ref_tree = tree_flatten(ref)
    if out_tree != ref_tree:
        return _fail(f"output structure differs: kernel {out_tree} vs reference {ref_tree}")
    paths = [keystr(p) for p, _ in tree_flatten_with_path(out)[0]]
    worst: Check | None = None
    worst_key: tuple[int, float] = (-1, -1.0)
    for path, o_leaf, r_leaf in zip(paths, out_leaves, ref_leaves, strict=True):
        o, r = _on_device(o_leaf), _on_device(r_leaf)
        result = _compare_leaf(o, r, tol_for(o.dtype.name))
        if (label is not None or len(out_leaves) > 1) and result.message is not None:
            result = Check(
                passed=result.passed,
                max_abs_err=result.max_abs_err,
                rel_l2_err=result.rel_l2_err,
                tol=result.tol,
                worst_index=result.worst_index,
                message=f"{label(path) if label else f'output {path}'}: {result.message}",
            )
        key = (0 if result.passed else 1, _ratio(result))
        if key > worst_key:
            worst, worst_key = result, key
    if worst is None:
        return Check(passed=True, message="no outputs to compare")
    return worst


def _ratio(result: Check) -> float:
    if result.rel_l2_err is None:
        return float("inf")
    if not result.tol:
        return float("inf") if result.rel_l2_err > 0 else 0.0
    return result.rel_l2_err / result.tol


def check(
    fn: Callable[..., Any],
    ref: Callable[..., Any],
    *args: Any,
    tol: float | Mapping[str, float] | None = None,
    gradients: bool = False,
) -> Check:
    """Run `fn` and `ref` (on float32-upcast inputs) and compare their outputs.

    `tol` is the largest relative L2 error that passes, or a mapping from output dtype name;
    by default float64 1e-10, float32 1e-5, float16 2e-3, bfloat16 1e-2, integers exact.
    `gradients`: the outputs are a gradient mode's (`tile.mode_kernel`), named as `tile test
    --mode` names them ("gradient of input `x`").
    A `@tile.kernel` function with tunables runs its declared default configuration, with
    the values a `functools.partial` binds instead (`with_default_config`).
    """
    from tile_runner._configure import with_default_config
    from tile_runner._jaxapi import block_until_ready

    out = block_until_ready(with_default_config(fn)(*args))
    expected = block_until_ready(ref(*upcast(args)))
    from tile_runner._vjp import grad_label

    label = grad_label if gradients else None
    return compare(out, expected, lambda dtype: resolve_tolerance(dtype, kernel=tol), label=label)
