"""Timers (`wall`, `batched`; `cupti` lives in _cupti.py) and the cache-flush buffer.

`_measure.available_timers` says which a process can use: it, not this module, loads _cupti.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tile_protocol import MEASURED_TIMERS, MeasuredTimer

if TYPE_CHECKING:
    from tile_runner._breakdown import KernelLog

__all__ = [
    "TIMERS",
    "BatchedSampler",
    "Flush",
    "InterleavedSampler",
    "ReferenceTimingError",
    "Sampler",
    "TimerName",
    "WallSampler",
    "get_flush",
    "output_bytes",
]

TimerName = MeasuredTimer
TIMERS: tuple[TimerName, ...] = MEASURED_TIMERS

_BATCHED_TARGET_S = 2e-3  # one `batched` sample lasts at least this long...
_BATCHED_MAX_CALLS = 1000  # ...but never holds more calls than this...
_BATCHED_MAX_BYTES = 256 * 1024 * 1024  # ...nor more live output bytes than this.
# Interleaved timing: each side's turn lasts about this long (at least one sample, at most
# _MAX_TURN): short enough that both see the same machine speed, which on a shared VM holds
# for a few hundred milliseconds at best; long enough that switching costs little.
_TURN_S = 2e-3
_MAX_TURN = 1000
# A `wall` side much cheaper than the other waits out the other's long calls, and its first
# calls after each wait pay for the host waking up: on a 2-core VM a 14 µs reference took 88,
# 23, 17.5 and 16 µs for its first four calls after a 1.6 ms kernel, and read 5-9x slow beside
# kernels of a few ms (benchmarks/interleave_wake.py). Such a side makes this many untimed
# calls before each turn, when the other's fastest call so far was at least _SETTLE_RATIO of
# its own fastest and at least _SETTLE_MIN_S. Fastest, not last: a turn slowed by load must
# not make two sides of equal cost settle. The ratio bounds the cost (3/30 of the other
# side's time at most): at 10, a third of tile-std's CPU cases settled, sampling 10-15% longer
# for references within 10-30x of their kernels, where the effect is a few percent at most.
_SETTLE_CALLS = 3
_SETTLE_RATIO = 30
_SETTLE_MIN_S = 250e-6


class Sampler(Protocol):
    """Takes timing samples (seconds) of one compiled function on fixed arguments."""

    name: TimerName

    def warmup(self, runs: int) -> None:
        """Run the function `runs` times untimed."""
        ...

    def take(self, n: int) -> list[float]:
        """Return `n` samples in seconds."""
        ...

    def close(self) -> None:
        """Release what the timer holds between takes (a profiler session); idempotent."""
        ...

    def kernels(self) -> KernelLog | None:
        """Per-kernel times of the calls taken, where the timer sees kernels (cupti)."""
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

        from tile_runner._jaxapi import jit

        self.nbytes = 2 * cache_bytes
        self._buf = jnp.ones((self.nbytes // 4,), jnp.float32)
        # Donation avoids holding two buffers on accelerators; CPU would warn it cannot donate.
        donate = (0,) if jax.default_backend() != "cpu" else ()

        def rewrite(buf: jax.Array) -> jax.Array:
            return buf + 1.0

        self._step: Callable[[Any], Any] = jit(rewrite, donate_argnums=donate)
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


def _waiter(out: Any) -> Callable[[Any], Any]:
    """How to wait for outputs like `out`: a single array's own `block_until_ready` (a few µs
    less per call than walking it as a tree, which a µs-scale CPU kernel's median shows),
    else `jax.block_until_ready`."""
    from tile_runner._jaxapi import block_until_ready

    thing: object = out
    own = getattr(type(thing), "block_until_ready", None)
    return own if callable(own) else block_until_ready


class WallSampler:
    """`wall`: perf_counter around one call + block_until_ready; one sample per call."""

    name: TimerName = "wall"

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], flush: Flush | None) -> None:
        self._fn = fn
        self._args = tuple(args)
        self._flush = flush
        self._ready: Callable[[Any], Any] | None = None

    def warmup(self, runs: int) -> None:
        """Untimed calls."""
        from tile_runner._jaxapi import block_until_ready

        for _ in range(runs):
            self._ready = _waiter(block_until_ready(self._fn(*self._args)))

    def take(self, n: int) -> list[float]:
        """`n` timed calls."""
        from tile_runner._jaxapi import block_until_ready

        fn, args, flush = self._fn, self._args, self._flush
        ready = self._ready or block_until_ready
        samples: list[float] = []
        for _ in range(n):
            if flush is not None:
                flush()
            t0 = time.perf_counter()
            out = ready(fn(*args))
            t1 = time.perf_counter()
            del out  # freed outside the timed region
            samples.append(t1 - t0)
        return samples

    def close(self) -> None:
        """Nothing to release."""

    def kernels(self) -> KernelLog | None:
        """A host timer sees no kernels."""
        return None


class BatchedSampler:
    """`batched`: N back-to-back calls and one block; the mean per call is one sample."""

    name: TimerName = "batched"

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        self._fn = fn
        self._args = tuple(args)
        self.calls = 1

    def warmup(self, runs: int) -> None:
        """Untimed calls, then size N from one timed call."""
        from tile_runner._jaxapi import block_until_ready

        fn, args = self._fn, self._args
        for _ in range(runs):
            block_until_ready(fn(*args))
        t0 = time.perf_counter()
        out = block_until_ready(fn(*args))
        once = max(time.perf_counter() - t0, 1e-9)
        by_memory = _BATCHED_MAX_BYTES // max(output_bytes(out), 1)
        self.calls = int(
            max(1, min(math.ceil(_BATCHED_TARGET_S / once), _BATCHED_MAX_CALLS, by_memory))
        )

    def take(self, n: int) -> list[float]:
        """`n` samples of `calls` back-to-back calls each."""
        from tile_runner._jaxapi import block_until_ready

        fn, args, calls = self._fn, self._args, self.calls
        samples: list[float] = []
        for _ in range(n):
            t0 = time.perf_counter()
            # Keep every output alive so that no call's buffers are freed mid-batch.
            outs = [fn(*args) for _ in range(calls)]
            block_until_ready(outs)
            t1 = time.perf_counter()
            del outs
            samples.append((t1 - t0) / calls)
        return samples

    def close(self) -> None:
        """Nothing to release."""

    def kernels(self) -> KernelLog | None:
        """A host timer sees no kernels."""
        return None


class ReferenceTimingError(RuntimeError):
    """Raised when the reference of an interleaved pair failed; the cause is chained."""


class InterleavedSampler:
    """A kernel and its reference timed in alternating turns, so both see one machine state.

    `take(n)` returns the kernel's samples (those the stopping rule judges) and appends as
    many of the reference's to `reference_samples`, in the same order: sample i of each was
    taken within one turn of the other, so their ratio cancels whatever speed the machine had.
    A turn is sized from the kernel's last one to last about _TURN_S of wall time. A `wall`
    side far cheaper than the other settles before its turns (`_settle`).
    """

    def __init__(self, kernel: Sampler, reference: Sampler) -> None:
        self.name: TimerName = kernel.name
        self._kernel = kernel
        self._reference = reference
        self._turn = 1
        self._fastest = {"kernel": math.inf, "reference": math.inf}  # s a call, per turn
        self.reference_samples: list[float] = []
        self.reference_take_s = 0.0
        """Wall seconds spent in the reference's `take` calls."""

    def warmup(self, runs: int) -> None:
        """Warm up both, the kernel first."""
        self._kernel.warmup(runs)
        try:
            self._reference.warmup(runs)
        except Exception as exc:
            raise ReferenceTimingError(str(exc)) from exc

    def take(self, n: int) -> list[float]:
        """`n` kernel samples, and `n` reference samples taken turn about with them."""
        samples: list[float] = []
        while len(samples) < n:
            # A cupti call costs ~26 ms of set-up whatever its length, and device time does not
            # follow host load: there a turn is the whole batch.
            turn = n if self.name == "cupti" else self._turn
            k = min(turn, n - len(samples))
            self._settle(self._kernel, "kernel", "reference")
            t0 = time.perf_counter()
            samples += self._kernel.take(k)
            t1 = time.perf_counter()
            per_sample = max((t1 - t0) / k, 1e-9)
            self._fastest["kernel"] = min(self._fastest["kernel"], per_sample)
            try:
                self._settle(self._reference, "reference", "kernel")
                t2 = time.perf_counter()
                self.reference_samples += self._reference.take(k)
                seconds = (time.perf_counter() - t2) / k
                self._fastest["reference"] = min(self._fastest["reference"], seconds)
            except Exception as exc:
                raise ReferenceTimingError(str(exc)) from exc
            finally:
                self.reference_take_s += time.perf_counter() - t1
            self._turn = max(1, min(_MAX_TURN, int(_TURN_S / per_sample)))
        return samples

    def _settle(self, side: Sampler, which: str, other: str) -> None:
        """Untimed calls of a `wall` side before its turn, when the other side's calls are
        long and many times its own (by their fastest): it has just waited one out."""
        own, theirs = self._fastest[which], self._fastest[other]
        if not (math.isfinite(own) and math.isfinite(theirs)):
            return  # the first turns: nothing to compare yet
        if side.name == "wall" and theirs >= max(_SETTLE_MIN_S, _SETTLE_RATIO * own):
            side.take(_SETTLE_CALLS)

    def kernels(self) -> KernelLog | None:
        """The kernel's (the reference's are not part of the case's breakdown)."""
        return self._kernel.kernels()

    def close(self) -> None:
        """Close both samplers."""
        try:
            self._kernel.close()
        finally:
            self._reference.close()
