"""Timers (`wall`, `batched`; `cupti` lives in _cupti.py) and the cache-flush buffer."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

__all__ = [
    "TIMERS",
    "BatchedSampler",
    "Flush",
    "Sampler",
    "TimerName",
    "WallSampler",
    "available_timers",
    "get_flush",
    "output_bytes",
]

TimerName = Literal["cupti", "wall", "batched"]
TIMERS: tuple[TimerName, ...] = ("cupti", "wall", "batched")

_BATCHED_TARGET_S = 2e-3  # one `batched` sample lasts at least this long...
_BATCHED_MAX_CALLS = 1000  # ...but never holds more calls than this...
_BATCHED_MAX_BYTES = 256 * 1024 * 1024  # ...nor more live output bytes than this.


class Sampler(Protocol):
    """Takes timing samples (seconds) of one compiled function on fixed arguments."""

    name: TimerName

    def warmup(self, runs: int) -> None:
        """Run the function `runs` times untimed."""
        ...

    def take(self, n: int) -> list[float]:
        """Return `n` samples in seconds."""
        ...


def output_bytes(out: Any) -> int:
    """Bytes held by the arrays of an output pytree."""
    import jax

    return sum(int(getattr(leaf, "nbytes", 0)) for leaf in jax.tree_util.tree_leaves(out))


class Flush:
    """A buffer twice the cache size, rewritten before each cold sample (outside the timing)."""

    def __init__(self, cache_bytes: int) -> None:
        import jax
        import jax.numpy as jnp

        self.nbytes = 2 * cache_bytes
        self._buf = jnp.ones((self.nbytes // 4,), jnp.float32)
        # Donation avoids holding two buffers on accelerators; CPU would warn it cannot donate.
        donate = (0,) if jax.default_backend() != "cpu" else ()
        self._step: Callable[[Any], Any] = jax.jit(lambda b: b + 1.0, donate_argnums=donate)
        self()

    def __call__(self) -> None:
        """Read and write the whole buffer, evicting whatever the cache held."""
        self._buf = self._step(self._buf)
        self._buf.block_until_ready()


_flushes: dict[int, Flush] = {}


def get_flush(cache_bytes: int) -> Flush:
    """The process' flush buffer for this cache size (allocated once)."""
    flush = _flushes.get(cache_bytes)
    if flush is None:
        flush = _flushes[cache_bytes] = Flush(cache_bytes)
    return flush


class WallSampler:
    """`wall`: perf_counter around one call + block_until_ready; one sample per call."""

    name: TimerName = "wall"

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], flush: Flush | None) -> None:
        self._fn = fn
        self._args = tuple(args)
        self._flush = flush

    def warmup(self, runs: int) -> None:
        """Untimed calls."""
        import jax

        for _ in range(runs):
            jax.block_until_ready(self._fn(*self._args))

    def take(self, n: int) -> list[float]:
        """`n` timed calls."""
        import jax

        fn, args, flush = self._fn, self._args, self._flush
        samples: list[float] = []
        for _ in range(n):
            if flush is not None:
                flush()
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(*args))
            t1 = time.perf_counter()
            del out  # freed outside the timed region
            samples.append(t1 - t0)
        return samples


class BatchedSampler:
    """`batched`: N back-to-back calls and one block; the mean per call is one sample."""

    name: TimerName = "batched"

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        self._fn = fn
        self._args = tuple(args)
        self.calls = 1

    def warmup(self, runs: int) -> None:
        """Untimed calls, then size N from one timed call."""
        import jax

        fn, args = self._fn, self._args
        for _ in range(runs):
            jax.block_until_ready(fn(*args))
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        once = max(time.perf_counter() - t0, 1e-9)
        by_memory = _BATCHED_MAX_BYTES // max(output_bytes(out), 1)
        self.calls = int(
            max(1, min(math.ceil(_BATCHED_TARGET_S / once), _BATCHED_MAX_CALLS, by_memory))
        )

    def take(self, n: int) -> list[float]:
        """`n` samples of `calls` back-to-back calls each."""
        import jax

        fn, args, calls = self._fn, self._args, self.calls
        samples: list[float] = []
        for _ in range(n):
            t0 = time.perf_counter()
            # Keep every output alive so that no call's buffers are freed mid-batch.
            outs = [fn(*args) for _ in range(calls)]
            jax.block_until_ready(outs)
            t1 = time.perf_counter()
            del outs
            samples.append((t1 - t0) / calls)
        return samples


def available_timers(backend: str) -> list[TimerName]:
    """Timers usable in this process, best first."""
    from tile_runner import _cupti

    timers: list[TimerName] = ["wall", "batched"]
    if backend == "gpu" and _cupti.available():
        timers.insert(0, "cupti")
    return timers
