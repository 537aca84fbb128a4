"""Ahead-of-time compilation with phase timings, cache accounting and XLA's own estimates."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tile_protocol import Phases

__all__ = [
    "Compiled",
    "aot_compile",
    "bind_static",
    "cost_estimate",
    "enable_persistent_cache",
    "memory_estimate",
]

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_HIT_EVENT = "/jax/compilation_cache/cache_hits"
_MISS_EVENT = "/jax/compilation_cache/cache_misses"


class _Counter:
    """Compilation events seen while it is active."""

    def __init__(self) -> None:
        self.compiles = 0
        self.hits = 0
        self.misses = 0


# By thread: a case compiles its kernel and references side by side, and each compilation
# counts only its own events (jax.monitoring calls listeners on the compiling thread).
_active: dict[int, list[_Counter]] = {}
_installed = False


def _counters() -> list[_Counter]:
    return _active.get(threading.get_ident(), [])


def _on_event(event: str, *_args: Any, **_kwargs: Any) -> None:
    for counter in _counters():
        if event == _HIT_EVENT:
            counter.hits += 1
        elif event == _MISS_EVENT:
            counter.misses += 1


def _on_duration(event: str, *_args: Any, **_kwargs: Any) -> None:
    if event == _COMPILE_EVENT:
        for counter in _counters():
            counter.compiles += 1


def _install_listeners() -> None:
    # jax.monitoring has no public way to remove a listener: install one pair per process.
    global _installed
    if _installed:
        return
    import jax.monitoring

    jax.monitoring.register_event_listener(_on_event)
    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    _installed = True


def _is_static(value: Any) -> bool:
    """True for arguments without arrays inside (Python scalars, strings, None, ...)."""
    import jax
    import numpy as np

    leaves = jax.tree_util.tree_leaves(value)
    return not any(isinstance(leaf, jax.Array | np.ndarray | np.generic) for leaf in leaves)


def bind_static(
    fn: Callable[..., Any], args: Sequence[Any]
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Close `fn` over its array-free arguments; return it and the arguments left to trace."""
    static = {i: a for i, a in enumerate(args) if _is_static(a)}
    if not static:
        return fn, tuple(args)
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    count = len(args)

    def bound(*dyn: Any) -> Any:
        rest = iter(dyn)
        return fn(*(static[i] if i in static else next(rest) for i in range(count)))

    # The name shows up in HLO module names and profiles; no __wrapped__, which would make
    # jax read the original signature.
    bound.__name__ = getattr(fn, "__name__", "kernel")
    bound.__qualname__ = getattr(fn, "__qualname__", bound.__name__)
    return bound, dynamic


@dataclass(frozen=True)
class Compiled:
    """The stages of one ahead-of-time compilation and what it cost."""

    compiled: Any
    lowered: Any
    traced: Any | None
    phases: Phases


def aot_compile(fn: Callable[..., Any], args: Sequence[Any], *, untuned: bool = False) -> Compiled:
    """`jax.jit(fn).trace(*args).lower().compile()`, timing each stage and counting compiles.

    `untuned`: skip XLA's autotuning on a GPU (the executable only checks correctness and is
    never timed, so its speed does not matter, and autotuning a float32 reference cost up to
    seconds a case on the H200).
    """
    from tile_runner._jaxapi import config, jit
    from tile_runner._mosaic_names import stable_mosaic_names

    _install_listeners()
    counter = _Counter()
    mine = _active.setdefault(threading.get_ident(), [])
    mine.append(counter)
    try:
        jitted: Any = fn if hasattr(fn, "lower") and hasattr(fn, "trace") else jit(fn)
        t0 = time.perf_counter()
        traced = jitted.trace(*args)
        t1 = time.perf_counter()
        stable_mosaic_names()  # a Mosaic GPU kernel's cache key, the same in every process
        lowered = traced.lower()
        t2 = time.perf_counter()
        compiled = _compile(lowered, untuned=untuned)
        t3 = time.perf_counter()
    finally:
        mine.remove(counter)
    cache_on = bool(getattr(config, "jax_compilation_cache_dir", None))
    phases = Phases(
        trace_s=t1 - t0,
        lower_s=t2 - t1,
        compile_s=t3 - t2,
        cache_hit=(counter.hits > 0 and counter.misses == 0) if cache_on else None,
        compile_count=counter.compiles,
        cache_hit_count=counter.hits if cache_on else None,
        cache_miss_count=counter.misses if cache_on else None,
    )
    return Compiled(compiled=compiled, lowered=lowered, traced=traced, phases=phases)


def _compile(lowered: Any, *, untuned: bool) -> Any:
    """`lowered.compile()`, with autotuning off when asked and the backend has it."""
    import jax

    if untuned and jax.default_backend() == "gpu":
        try:
            return lowered.compile({"xla_gpu_autotune_level": 0})
        except Exception:
            pass  # an XLA without that option: compile as usual
    return lowered.compile()


def enable_persistent_cache(directory: str) -> str | None:
    """Use `directory` for JAX's persistent compilation cache; return why not, if refused.

    Cached executables are trusted code, so the directory is created private (0700) and one
    that others could write to is refused.
    """
    from tile_runner._jaxapi import config

    path = Path(directory).expanduser().absolute()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as exc:
        return f"cannot create the compilation cache directory `{path}`: {exc}"
    if not path.is_dir():
        return f"the compilation cache path `{path}` is not a directory"
    if st.st_mode & 0o022:
        return (
            f"the compilation cache directory `{path}` is writable by group or others "
            f"(mode {st.st_mode & 0o777:o}); cached executables are code, so it is not used; "
            f"hint: run `chmod 700 {path}`"
        )
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return (
            f"the compilation cache directory `{path}` belongs to uid {st.st_uid}, not to this "
            "user; cached executables are code, so it is not used"
        )
    config.update("jax_compilation_cache_dir", str(path))
    config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return None


def cost_estimate(compiled: Any) -> tuple[float | None, float | None]:
    """`(bytes, flops)` of one call from XLA's cost analysis; None where it has no answer."""
    try:
        analysis: object = compiled.cost_analysis()
    except Exception:
        return None, None
    # Older jax versions return a list with one dict per computation.
    if isinstance(analysis, list | tuple):
        analysis = cast("Sequence[object]", analysis)[0] if analysis else None
    if not isinstance(analysis, Mapping):
        return None, None
    fields = cast("Mapping[str, object]", analysis)
    return _nonneg(fields.get("bytes accessed")), _nonneg(fields.get("flops"))


def _nonneg(value: object) -> float | None:
    if isinstance(value, int | float) and value >= 0:
        return float(value)
    return None


def memory_estimate(compiled: Any) -> int | None:
    """Device bytes one call needs per XLA: arguments + outputs + temporaries - aliased."""
    try:
        ma = compiled.memory_analysis()
    except Exception:
        return None
    if ma is None:
        return None
    try:
        total = (
            int(ma.argument_size_in_bytes)
            + int(ma.output_size_in_bytes)
            + int(ma.temp_size_in_bytes)
            - int(ma.alias_size_in_bytes)
        )
    except (AttributeError, TypeError, ValueError):
        return None
    return total if total >= 0 else None
