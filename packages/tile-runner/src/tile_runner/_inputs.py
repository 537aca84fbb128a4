"""Seeded inputs for cases, and pinned data files through tile-downloads."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tile_runner._errors import RunnerError

__all__ = [
    "DataContext",
    "case_key",
    "data",
    "data_context",
    "draw",
    "drawn_count",
    "normal",
    "randint",
    "uniform",
]


def case_key(seed: int, case_id: str) -> Any:
    """The PRNG key of one case: the run seed folded with a hash of the case id."""
    import jax

    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return jax.random.fold_in(jax.random.key(seed), int.from_bytes(digest[:4], "little") >> 1)


def drawn_count(count: int) -> int:
    """How many values to draw for `count`: `count` rounded up to one of 16 sizes per power of
    two (less than 1/8 more values), so that a sweep over many sizes compiles a few drawing
    programs, not one per size (`benchmarks/sweep_overhead.py`: 125 ms a case of the runner's
    time before, 103 ms after, on a 2-core CPU)."""
    if count <= 16:
        return count
    step = (1 << (count - 1).bit_length()) // 16
    return -(-count // step) * step


def draw(drawn: Callable[[int], Any], shape: Sequence[int], dtype: Any) -> Any:
    """`shape`'s values in `dtype`: the first of `drawn(n)`'s flat values, n = drawn_count.

    Values are drawn flat, cut and reshaped: JAX's threefry gives a shape's values in row-major
    order of one flat draw of the same count, and the drawing program (about 0.4 s to compile
    on a GPU) is compiled per drawn count, not per shape (4096x4096, 16777216 and
    4x32x1024x128 share one). With JAX's partitionable threefry (the default since JAX 0.5)
    every value depends only on the key and its index, so the first `count` values of a longer
    draw are those a draw of `count` gives; without it, `count` values are drawn exactly.
    """
    from tile_runner._host import on_host
    from tile_runner._jaxapi import config

    count = math.prod(int(d) for d in shape)
    exact = not getattr(config, "jax_threefry_partitionable", False)
    flat = drawn(count if exact else drawn_count(count))
    if flat.shape == tuple(shape) and flat.dtype == dtype:
        return flat  # nothing to cut, reshape or cast: no program to compile for it
    if on_host(shape):
        return _finish_on_host(flat, count, tuple(shape), dtype)
    return _finish()(flat, tuple(shape), dtype)


def _finish_on_host(flat: Any, count: int, shape: tuple[int, ...], dtype: Any) -> Any:
    """A small draw cast where it was drawn (one program per drawn count and dtype, the same
    conversion `_finish` makes), then cut and reshaped on the host and put back: no program
    for each shape (a 100-case sweep on a 2-core CPU: inputs 25 -> 9 ms a case)."""
    import jax

    from tile_runner._jaxapi import device_put

    on_device = flat if flat.dtype == dtype else flat.astype(dtype)
    return device_put(jax.device_get(on_device)[:count].reshape(shape))


@functools.cache
def _finish() -> Callable[..., Any]:
    """One small program per (drawn size, shape, dtype): cut, reshape and cast (as three eager
    operations, each compiled for every new shape, they cost more than the draw)."""
    from tile_runner._jaxapi import jit

    def finish(flat: Any, shape: tuple[int, ...], dtype: Any) -> Any:
        return flat[: math.prod(shape)].reshape(shape).astype(dtype)

    return jit(finish, static_argnums=(1, 2))


def _float_dtype(dtype: Any, what: str) -> Any:
    import jax.numpy as jnp

    dt = jnp.dtype(dtype)
    if not jnp.issubdtype(dt, jnp.floating):
        raise RunnerError(
            f"tile.{what}: dtype {dt.name} is not a floating dtype",
            hint="use tile.randint for integer inputs",
        )
    return dt


def normal(key: Any, shape: Sequence[int], dtype: Any = "float32") -> Any:
    """Standard normal values drawn with `key`, generated in float32 and cast to `dtype`."""
    import jax

    dt = _float_dtype(dtype, "normal")
    # Drawing in float32 (float64 stays) makes the values independent of the target precision.
    base = dt if dt.itemsize >= 8 else "float32"
    return draw(lambda n: jax.random.normal(key, (n,), base), shape, dt)


def uniform(
    key: Any, shape: Sequence[int], dtype: Any = "float32", low: float = 0.0, high: float = 1.0
) -> Any:
    """Uniform values in `[low, high)` drawn with `key`, cast to `dtype`."""
    import jax

    dt = _float_dtype(dtype, "uniform")
    if not high > low:
        raise RunnerError(f"tile.uniform: need low < high, got low={low}, high={high}")
    base = dt if dt.itemsize >= 8 else "float32"
    return draw(lambda n: jax.random.uniform(key, (n,), base, low, high), shape, dt)


def randint(key: Any, shape: Sequence[int], low: int, high: int, dtype: Any = "int32") -> Any:
    """Integers in `[low, high)` drawn with `key`."""
    import jax
    import jax.numpy as jnp

    dt = jnp.dtype(dtype)
    if not jnp.issubdtype(dt, jnp.integer):
        raise RunnerError(f"tile.randint: dtype {dt.name} is not an integer dtype")
    if not high > low:
        raise RunnerError(f"tile.randint: need low < high, got low={low}, high={high}")
    return draw(lambda n: jax.random.randint(key, (n,), low, high, dt), shape, dt)


_KEYS = ("url", "sha256", "archive", "members", "description")


@dataclass
class DataContext:
    """Where `tile.data` finds its registry, and who hears about each file it returns."""

    downloads: Mapping[str, Any] = field(default_factory=dict[str, Any])
    on_use: Callable[[str, Path], None] | None = None
    used: dict[str, Path] = field(default_factory=dict[str, Path])


_context = DataContext()


def data_context() -> DataContext:
    """The process-wide data context (the runner fills it from the RunRequest)."""
    return _context


def data(name: str, *, downloads: Mapping[str, Any] | None = None) -> Path:
    """The local path of `[downloads.<name>]`, fetched (sha256-checked) on first use.

    `downloads` maps names to entries (`url`, `sha256`, optional `archive`, `members`); by
    default the entries the runner received from the CLI.
    """
    from tile_downloads import fetch, registry_from_mapping

    table = _context.downloads if downloads is None else downloads
    entries: dict[str, Any] = {}
    for key, value in table.items():
        # Protocol DownloadSpec structs and plain tables (tile.toml) alike.
        raw: Mapping[str, object] = (
            cast("Mapping[str, object]", value)
            if isinstance(value, Mapping)
            else {k: getattr(value, k, None) for k in _KEYS}
        )
        entries[key] = {k: v for k, v in raw.items() if v is not None}
    if name not in entries:
        known = ", ".join(f"`{n}`" for n in sorted(entries)) or "none"
        raise RunnerError(
            f"tile.data: no download called `{name}` (known: {known})",
            hint=f"add `[downloads.{name}]` with `url` and `sha256` to tile.toml",
        )
    path = Path(fetch(name, registry_from_mapping({name: entries[name]})))
    _context.used[name] = path
    if _context.on_use is not None:
        _context.on_use(name, path)
    return path
