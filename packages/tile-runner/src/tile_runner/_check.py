"""Correctness: compare a kernel's outputs with its reference in float64."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tile_protocol import Check

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

    def one(leaf: Any) -> Any:
        dtype = getattr(leaf, "dtype", None)
        if (
            isinstance(leaf, jax.Array | np.ndarray)
            and dtype is not None
            and jnp.issubdtype(dtype, jnp.floating)
            and jnp.dtype(dtype).itemsize < 4
        ):
            return leaf.astype(jnp.float32)
        return leaf

    return jax.tree_util.tree_map(one, args)


def _category(dtype: np.dtype[Any]) -> str:
    import jax.numpy as jnp

    for name, kind in (
        ("bool", jnp.bool_),
        ("integer", jnp.integer),
        ("complex", jnp.complexfloating),
        ("floating", jnp.floating),
    ):
        if jnp.issubdtype(dtype, kind):
            return name
    return dtype.name


def _fail(message: str, tol: float | None = None, index: list[int] | None = None) -> Check:
    return Check(passed=False, tol=tol, worst_index=index, message=message)


def _compare_leaf(out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any], tol: float) -> Check:
    """Compare one output array with its reference array."""
    dtypes = f"kernel {out.dtype.name} vs reference {ref.dtype.name}"
    if out.shape != ref.shape:
        return _fail(f"shape mismatch: kernel {out.shape} vs reference {ref.shape} ({dtypes})", tol)
    if _category(out.dtype) != _category(ref.dtype):
        return _fail(f"dtype mismatch: {dtypes}", tol)
    wide = np.complex128 if _category(out.dtype) == "complex" else np.float64
    o = np.asarray(out).astype(wide)
    r = np.asarray(ref).astype(wide)
    bad = (np.isnan(o) != np.isnan(r)) | (_posinf(o) != _posinf(r)) | (_neginf(o) != _neginf(r))
    if bad.any():
        first = [int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape)]
        at = tuple(first)
        return _fail(
            f"NaN/Inf mismatch at {int(bad.sum())} of {bad.size} positions; first at {first}: "
            f"kernel {o[at]} vs reference {r[at]} ({dtypes})",
            tol,
            first,
        )
    # Matching NaNs and same-signed infinities count as equal.
    finite = np.isfinite(o) & np.isfinite(r)
    diff = np.where(finite, o, 0) - np.where(finite, r, 0)
    err = np.abs(diff)
    max_abs = float(err.max()) if err.size else 0.0
    diff_norm = float(np.linalg.norm(diff.ravel()))
    ref_norm = float(np.linalg.norm(np.where(finite, r, 0).ravel()))
    # Against a zero reference only an exact zero passes.
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else float("inf"))
    worst = [int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape)] if err.size else []
    passed = rel <= tol
    message = None
    if not passed:
        at = tuple(worst)
        message = (
            f"relative L2 error {rel:.3g} > tol {tol:.3g}; max abs error {max_abs:.3g} at "
            f"{worst}: kernel {o[at]} vs reference {r[at]} ({dtypes})"
        )
    return Check(
        passed=passed,
        max_abs_err=max_abs,
        rel_l2_err=rel,
        tol=tol,
        worst_index=worst,
        message=message,
    )


def _posinf(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.isposinf(x.real) | (np.isposinf(x.imag) if np.iscomplexobj(x) else False)


def _neginf(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.isneginf(x.real) | (np.isneginf(x.imag) if np.iscomplexobj(x) else False)


def compare(out: Any, ref: Any, tol_for: Callable[[str], float]) -> Check:
    """Compare output pytrees leaf by leaf; report the worst leaf (failures first)."""
    import jax

    out_leaves, out_tree = jax.tree_util.tree_flatten(out)
    ref_leaves, ref_tree = jax.tree_util.tree_flatten(ref)
    if out_tree != ref_tree:
        return _fail(f"output structure differs: kernel {out_tree} vs reference {ref_tree}")
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(out)[0]]
    worst: Check | None = None
    worst_key: tuple[int, float] = (-1, -1.0)
    for path, o_leaf, r_leaf in zip(paths, out_leaves, ref_leaves, strict=True):
        o = np.asarray(o_leaf)
        r = np.asarray(r_leaf)
        result = _compare_leaf(o, r, tol_for(o.dtype.name))
        if len(out_leaves) > 1 and result.message is not None:
            result = Check(
                passed=result.passed,
                max_abs_err=result.max_abs_err,
                rel_l2_err=result.rel_l2_err,
                tol=result.tol,
                worst_index=result.worst_index,
                message=f"output {path}: {result.message}",
            )
        ratio = _ratio(result)
        key = (0 if result.passed else 1, ratio)
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
) -> Check:
    """Run `fn` and `ref` (on float32-upcast inputs) and compare their outputs.

    `tol` is the largest relative L2 error that passes, or a mapping from output dtype name;
    by default float64 1e-10, float32 1e-5, float16 2e-3, bfloat16 1e-2, integers exact.
    """
    import jax

    out = jax.block_until_ready(fn(*args))
    expected = jax.block_until_ready(ref(*upcast(args)))
    return compare(out, expected, lambda dtype: resolve_tolerance(dtype, kernel=tol))
