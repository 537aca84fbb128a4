"""The error figures of one output leaf against its reference: reductions of both arrays.

A large leaf is reduced where it lives, and only a handful of scalars cross to the host:
copying outputs to the host and widening them to float64 numpy arrays cost seconds per case
for gigabyte outputs on the H200. That takes a program compiled for each shape, though, which
costs more than it saves for a small leaf: on the CPU a 100-case sweep of small vectors spent
64 ms a case in its check, nearly all of it tracing the comparison and reading it from the
compile cache. So a leaf small enough for `tile_runner._host.on_host` is copied to the host and
reduced there by the same code, with numpy (`_leaf_figures` takes the array module).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from tile_runner._host import on_host

__all__ = ["Figures", "category", "figures", "prepare_check"]


def category(dtype: Any) -> str:
    """What the check tells dtypes apart by: bool, integer, complex, floating, else the name."""
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


@dataclass(frozen=True)
class Figures:
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
        if on_host(o.shape):
            continue
        if category(o.dtype) != category(r.dtype):
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

    return _figures_fn().lower(spec(o), spec(r), _wide_dtype(o, r), _exact(o)).compile()


def _exact(o: Any) -> bool:
    """Whether a leaf's values compare exactly (integers, bools: see `_leaf_figures`)."""
    return category(o.dtype) in ("integer", "bool")


def figures(o: Any, r: Any) -> Figures:
    import jax

    exact = _exact(o)
    if on_host(o.shape):
        o_host, r_host = jax.device_get((o, r))  # an explicit copy, as transfer guards ask
        values = _leaf_figures(o_host, r_host, np.dtype(_wide_dtype(o, r)), exact, np)
    elif (program := _programs.get(_signature(o, r))) is not None:
        values = jax.device_get(program(o, r))
    else:
        values = jax.device_get(_figures_fn()(o, r, _wide_dtype(o, r), exact))
    n_bad, first, max_abs, worst, d_scale, d_norm, r_scale, r_norm = values
    return Figures(
        mismatches=int(n_bad),
        first_mismatch=int(first),
        max_abs=2.0 * float(max_abs),
        worst=int(worst),
        diff_norm=2.0 * float(d_scale) * float(d_norm),
        ref_norm=float(r_scale) * float(r_norm),
    )
