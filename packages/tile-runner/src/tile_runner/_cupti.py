"""`cupti` timer: device kernel time from CUPTI through jax's Mosaic GPU profiler (CUDA only)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

from tile_runner._breakdown import KernelLog
from tile_runner._timers import Flush, TimerName, output_bytes

__all__ = ["CuptiSampler", "available"]

# `profiler.measure(f, iterations=N)` keeps all N outputs alive: bound their total size.
_MAX_LIVE_BYTES = 2 * 1024**3
_MAX_ITERATIONS = 1000


class _Session:
    """Whether jaxlib's one process-wide CUPTI session is attached now.

    A case's kernel and reference samplers share it: the first to close detaches it, and the
    second must not attach it again only to detach it. (In a warm default run on an H100, 68
    closes, two a case, took 0.60 s of the runner, `benchmarks/runner_profile.py all`,
    2026-12-07; what the second of each pair cost alone is not measured yet.)
    """

    attached = False


def _profiler() -> Any:
    from jax.experimental.mosaic.gpu import profiler

    return profiler


def _ext() -> Any:
    from jax._src.lib import mosaic_gpu

    if mosaic_gpu is None:
        raise RuntimeError("this jaxlib has no Mosaic GPU extension (CUPTI unavailable)")
    # A private, native (so untyped) module of jaxlib: the only way to its CUPTI session.
    return cast(Any, mosaic_gpu._mosaic_gpu_ext)  # pyright: ignore[reportPrivateUsage, reportPrivateImportUsage, reportUnknownMemberType]


def available() -> bool:
    """True when the default backend is CUDA and jaxlib's CUPTI session can be loaded.

    Only the native extension is loaded here: the samples come from its session, and importing
    the Python profiler (`_profiler`, the fallback) pulls in all of Mosaic GPU, 0.48 s of every
    GPU runner's start on an H100 (2026-12-05).
    """
    try:
        from tile_runner._jaxapi import devices

        device = devices()[0]
        if device.platform != "gpu":
            return False
        version = str(getattr(device.client, "platform_version", "")).lower()
        if "rocm" in version or "hip" in version:
            return False
        _ext()
    except Exception:
        return False
    return True


def _detach(ext: Any) -> None:
    """End the session: init, then take the timings with finalize, as `profiler.measure` does."""
    ext._cupti_init()
    ext._cupti_get_timings(True)
    _Session.attached = False


def _per_iteration(timings: Any, n: int) -> list[float]:
    """Milliseconds per iteration from a session's `(kernel name, ms)` list of `n` iterations."""
    timings = list(timings or [])
    if not timings:
        raise RuntimeError("CUPTI saw no kernel launches (is the function empty or constant?)")
    if len(timings) % n:
        raise RuntimeError(f"CUPTI returned {len(timings)} kernel timings for {n} iterations")
    per = len(timings) // n
    return [sum(float(ms) for _, ms in timings[i * per : (i + 1) * per]) for i in range(n)]


def _as_list(ms: Any, n: int) -> list[float]:
    """`measure` returns a float for one iteration, a list for several, None without kernels."""
    if ms is None:
        raise RuntimeError("CUPTI saw no kernel launches (is the function empty or constant?)")
    values = [float(ms)] if isinstance(ms, int | float) else [float(m) for m in ms]
    if len(values) != n:
        raise RuntimeError(f"CUPTI returned {len(values)} timings for {n} iterations")
    return values


class CuptiSampler:
    """Samples are per-iteration device times; warm samples come in batches of one call.

    Warm batches run in one CUPTI session that stays attached until `close`: attaching and
    detaching CUPTI costs about 26 ms per `profiler.measure` call on the H200 (GPU-FACTS),
    which a case paid once per batch of its kernel and once per batch of its reference. If a
    session misbehaves (a batch whose kernel count differs from the first), the sampler falls
    back to one `profiler.measure` call per batch for the rest of the case.

    Every launch's name and time is kept per call (`kernels`): the case's per-kernel
    breakdown costs no extra run. A batch timed by `profiler.measure` gives sums only and
    breaks the log.
    """

    name: TimerName = "cupti"

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], flush: Flush | None) -> None:
        self._fn = fn
        self._args = tuple(args)
        self._flush = flush
        self._max_iterations = _MAX_ITERATIONS
        self._flush_kernels: int | None = None
        self._use_session = True
        self._attached = False
        self._kernels_per_call: int | None = None
        self._log = KernelLog()

    def kernels(self) -> KernelLog | None:
        """The per-kernel times of every call taken so far; None once a batch lost them."""
        return None if self._log.broken else self._log

    def warmup(self, runs: int) -> None:
        """Untimed calls; also bounds iterations per call by the output size."""
        from tile_runner._jaxapi import block_until_ready

        out = None
        for _ in range(max(runs, 1)):
            out = block_until_ready(self._fn(*self._args))
        per_call = max(output_bytes(out), 1)
        self._max_iterations = int(max(1, min(_MAX_ITERATIONS, _MAX_LIVE_BYTES // per_call)))

    def take(self, n: int) -> list[float]:
        """`n` samples in seconds."""
        if self._flush is not None:
            return self._take_cold(n)
        samples: list[float] = []
        while len(samples) < n:
            k = min(n - len(samples), self._max_iterations)
            samples.extend(m / 1e3 for m in self._batch(k))
        return samples

    def close(self) -> None:
        """Detach CUPTI if this sampler attached it and no one has detached it since."""
        if self._attached:
            self._attached = False
            if _Session.attached:
                _detach(_ext())

    def _batch(self, k: int) -> list[float]:
        """`k` per-iteration times in milliseconds."""
        if self._use_session:
            try:
                return self._session_batch(k)
            except Exception as exc:
                self._use_session = False
                self.close()
                # The runner's stderr log says which path the samples came from.
                print(f"tile: cupti session batch failed ({type(exc).__name__}: {exc}); "
                      "one profiler.measure call per batch from now on", file=sys.stderr)  # fmt: skip
        self._log.broken = True
        _, ms = _profiler().measure(self._fn, iterations=k)(*self._args)
        return _as_list(ms, k)

    def _session_batch(self, k: int) -> list[float]:
        from tile_runner._jaxapi import block_until_ready

        ext = _ext()
        ext._cupti_init()
        self._attached = _Session.attached = True
        outs: list[Any] = []
        try:
            outs = [self._fn(*self._args) for _ in range(k)]
            block_until_ready(outs)
        finally:
            timings = list(ext._cupti_get_timings(False) or [])
        del outs
        per_call = len(timings) // k if k else 0
        if self._kernels_per_call is None:
            self._kernels_per_call = per_call
        elif per_call != self._kernels_per_call or len(timings) % k:
            raise RuntimeError("a CUPTI session batch saw another number of kernels")
        samples = _per_iteration(timings, k)
        self._log.add_calls(timings, k)
        return samples

    def _take_cold(self, n: int) -> list[float]:
        """Flush, call, repeat under one CUPTI session; drop the flush kernels' timings."""
        from tile_runner._jaxapi import block_until_ready

        assert self._flush is not None
        flush, fn, args = self._flush, self._fn, self._args
        ext = _ext()
        if self._flush_kernels is None:
            ext._cupti_init()
            try:
                flush()
            finally:
                timings = ext._cupti_get_timings(True)
                _Session.attached = False
            self._flush_kernels = len(timings or [])
            if not self._flush_kernels:
                raise RuntimeError("CUPTI saw no kernel in the cache flush")
        kf = self._flush_kernels
        ext._cupti_init()
        try:
            for _ in range(n):
                flush()
                out = block_until_ready(fn(*args))
                del out
        finally:
            timings = list(ext._cupti_get_timings(True) or [])
            _Session.attached = False
        if not timings or len(timings) % n:
            raise RuntimeError(f"CUPTI returned {len(timings)} kernel timings for {n} cold runs")
        per_iteration = len(timings) // n
        if per_iteration <= kf:
            raise RuntimeError("CUPTI saw no kernel of the function between cache flushes")
        samples: list[float] = []
        for i in range(n):
            chunk = timings[i * per_iteration : (i + 1) * per_iteration]
            samples.append(sum(float(ms) for _, ms in chunk[kf:]) / 1e3)
        self._log.add_calls(timings, n, skip=kf)
        return samples
