"""Correctness: compare a kernel's outputs with its reference.

The error figures are reductions. A large output is reduced where it lives, and only a handful
of scalars cross to the host: copying outputs to the host and widening them to float64 numpy
arrays cost seconds per case for gigabyte outputs on the H200. That takes a program compiled
for each shape, though, which costs more than it saves for a small output: on the CPU a
100-case sweep of small vectors spent 64 ms a case in its check, nearly all of it tracing the
comparison and reading it from the compile cache. So a leaf of at most `HOST_ELEMENTS`
elements is copied to the host and reduced there by the same code, with numpy
(`_leaf_figures` takes the array module).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tile_protocol import Check

__all__ = [
    "DEFAULT_TOLERANCES",
    "check",
    "compare",
    "default_tolerance",
    "prepare_check",
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

HOST_ELEMENTS = 1 << 20
"""Leaves of at most this many elements are compared on the host, and inputs of at most this
many are cut to shape there (`tile_runner._inputs`): 4 MB of float32, a copy of a millisecond
or so, against a program compiled, or read from the cache, for every shape."""


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


def _category(dtype: Any) -> str:
    import jax.numpy as jnp

    for name, kind in (
        ("bool", jnp.bool_),
        ("integer", jnp.integer),
        ("complex", jnp.complexfloating),
        ("floating", jnp.floating),
    ):
        if jnp.issubdtype(dtype, kind):
            return name
    return str(np.dtype(dtype).name)


def _fail(message: str, tol: float | None = None, index: list[int] | None = None) -> Check:
    return Check(passed=False, tol=tol, worst_index=index, message=message)


@dataclass(frozen=True)
class _Figures:
    """The scalars one leaf's comparison brings back to the host."""

    mismatches: int  # positions whose NaN/+inf/-inf status differs
    first_mismatch: int  # flat index of the first of them
    max_abs: float
    worst: int  # flat index of the largest absolute error (the first, on ties)
    diff_norm: float
    ref_norm: float


def _wide_dtype(out: Any, ref: Any) -> Any:
    """Where the figures are computed: float32 or wider (float64/complex128 with x64 on)."""
    import jax
    import jax.numpy as jnp

    x64 = jax.dtypes.canonicalize_dtype(jnp.float64) == jnp.float64
    if jnp.issubdtype(out.dtype, jnp.complexfloating) or jnp.issubdtype(
        ref.dtype, jnp.complexfloating
    ):
        return jnp.complex128 if x64 else jnp.complex64
    both = jnp.promote_types(out.dtype, ref.dtype)
    wide64 = x64 and (both == jnp.float64 or not jnp.issubdtype(both, jnp.floating))
    return jnp.float64 if wide64 else jnp.float32


def _leaf_figures(o: Any, r: Any, wide: Any, exact: bool, xp: Any = None) -> tuple[Any, ...]:
    """Every figure of one leaf in one pass the compiler can fuse (traced under jit), or
    computed by numpy on host arrays (`xp`: the array module, jax.numpy by default).

    NaN, +inf and -inf must sit at the same positions; matching ones count as equal. The error
    figures are of half the difference (see below). `exact` (integers, bools): any two
    different values are at least 1 apart, which keeps the verdict exact where a float32
    difference of two large integers would round to zero.
    """
    if xp is None:
        import jax.numpy as xp
    ow, rw = o.astype(wide), r.astype(wide)

    def status(x: Any) -> tuple[Any, Any, Any]:
        if xp.issubdtype(x.dtype, xp.complexfloating):
            re, im = xp.real(x), xp.imag(x)
            return (
                xp.isnan(re) | xp.isnan(im),
                xp.isposinf(re) | xp.isposinf(im),
                xp.isneginf(re) | xp.isneginf(im),
            )
        return xp.isnan(x), xp.isposinf(x), xp.isneginf(x)

    (on, op, om), (rn, rp, rm) = status(ow), status(rw)
    bad = ((on != rn) | (op != rp) | (om != rm)).ravel()
    finite = xp.isfinite(ow) & xp.isfinite(rw)
    # Half of each value (exact: a power of two) so that the difference of two values near
    # float32's largest cannot overflow; the host doubles the error figures back.
    half = xp.where(finite, ow, 0) * 0.5 - xp.where(finite, rw, 0) * 0.5
    err = xp.abs(half).ravel()
    if exact:
        err = xp.where((o != r).ravel(), xp.maximum(err, 0.5), 0)
    ref_abs = xp.abs(xp.where(finite, rw, 0)).ravel()
    max_abs, ref_max = xp.max(err), xp.max(ref_abs)
    # Norms of values scaled by their largest element, so that no square overflows or
    # underflows in float32; the host multiplies the scale back in (a norm of values near
    # float32's largest can itself exceed it).
    d_scale = xp.where(max_abs > 0, max_abs, 1)
    r_scale = xp.where(ref_max > 0, ref_max, 1)
    diff_norm = xp.sqrt(xp.sum(xp.square(err / d_scale)))
    ref_norm = xp.sqrt(xp.sum(xp.square(ref_abs / r_scale)))
    return (xp.sum(bad), xp.argmax(bad), max_abs, xp.argmax(err),
            d_scale, diff_norm, r_scale, ref_norm)  # fmt: skip


_jitted: Any = None
_programs: dict[tuple[Any, ...], Any] = {}
"""The comparison compiled for one signature of output and reference (`prepare_check`)."""
_MAX_PROGRAMS = 256
_programs_lock = threading.Lock()


def _signature(o: Any, r: Any) -> tuple[Any, ...]:
    return (tuple(o.shape), o.dtype, bool(getattr(o, "weak_type", False)),
            tuple(r.shape), r.dtype, bool(getattr(r, "weak_type", False)))  # fmt: skip


def _figures_fn() -> Any:
    from tile_runner._jaxapi import jit

    global _jitted
    if _jitted is None:
        _jitted = jit(_leaf_figures, static_argnums=(2, 3))
    return _jitted


def prepare_check(out_info: Any, ref_info: Any) -> None:
    """Compile the comparison for these outputs (pytrees of shape-dtype structs) ahead of the
    check, one program per signature, so that the check itself only runs it.

    Leaves the comparison would not reach (a structure, shape or kind mismatch, an empty
    array) are left out; a leaf whose program is missing is compiled when compared.
    """
    from tile_runner._jaxapi import tree_flatten

    out_leaves, out_tree = tree_flatten(out_info)
    ref_leaves, ref_tree = tree_flatten(ref_info)
    if out_tree != ref_tree:
        return
    for o, r in zip(out_leaves, ref_leaves, strict=True):
        key = _signature(o, r)
        if key in _programs or tuple(o.shape) != tuple(r.shape) or not all(o.shape):
            continue
        if _on_host(o):
            continue
        if _category(o.dtype) != _category(r.dtype):
            continue
        program = _compile_figures(o, r)
        with _programs_lock:  # cases compile on several threads at once
            _programs[key] = program
            while len(_programs) > _MAX_PROGRAMS:
                del _programs[next(iter(_programs))]  # the oldest


def _compile_figures(o: Any, r: Any) -> Any:
    import jax

    def spec(x: Any) -> Any:
        return jax.ShapeDtypeStruct(
            x.shape, x.dtype, weak_type=bool(getattr(x, "weak_type", False))
        )

    exact = _category(o.dtype) in ("integer", "bool")
    return _figures_fn().lower(spec(o), spec(r), _wide_dtype(o, r), exact).compile()


def _on_host(leaf: Any) -> bool:
    """Whether a leaf (an array or a shape-dtype struct) is compared on the host."""
    return math.prod(int(d) for d in leaf.shape) <= HOST_ELEMENTS


def _figures(o: Any, r: Any) -> _Figures:
    import jax

    exact = _category(o.dtype) in ("integer", "bool")
    program = _programs.get(_signature(o, r))
    if _on_host(o):
        o_host, r_host = jax.device_get((o, r))  # an explicit copy, as transfer guards ask
        values = _leaf_figures(o_host, r_host, np.dtype(_wide_dtype(o, r)), exact, np)
    elif program is not None:
        values = jax.device_get(program(o, r))
    else:
        values = jax.device_get(_figures_fn()(o, r, _wide_dtype(o, r), exact))
    n_bad, first, max_abs, worst, d_scale, d_norm, r_scale, r_norm = values
    return _Figures(
        mismatches=int(n_bad),
        first_mismatch=int(first),
        max_abs=2.0 * float(max_abs),
        worst=int(worst),
        diff_norm=2.0 * float(d_scale) * float(d_norm),
        ref_norm=float(r_scale) * float(r_norm),
    )


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
    if _category(out.dtype) != _category(ref.dtype):
        return _fail(f"dtype mismatch: {dtypes}", tol)
    if out.size == 0:
        return Check(passed=True, max_abs_err=0.0, rel_l2_err=0.0, tol=tol, worst_index=[])
    f = _figures(out, ref)

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
