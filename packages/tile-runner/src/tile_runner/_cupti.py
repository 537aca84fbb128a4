"""`cupti` timer: device kernel time from CUPTI through jax's Mosaic GPU profiler (CUDA only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tile_runner._timers import Flush, TimerName, output_bytes

__all__ = ["CuptiSampler", "available"]

# `profiler.measure(f, iterations=N)` keeps all N outputs alive: bound their total size.
_MAX_LIVE_BYTES = 2 * 1024**3
_MAX_ITERATIONS = 1000


def _profiler() -> Any:
    from jax.experimental.mosaic.gpu import profiler

    return profiler


def _ext() -> Any:
    from jax._src.lib import mosaic_gpu  # pyright: ignore[reportAttributeAccessIssue]

    if mosaic_gpu is None:
        raise RuntimeError("this jaxlib has no Mosaic GPU extension (CUPTI unavailable)")
    return mosaic_gpu._mosaic_gpu_ext  # pyright: ignore[reportPrivateImportUsage]


def available() -> bool:
    """True when the default backend is CUDA and the CUPTI profiler can be imported."""
    try:
        import jax

        device = jax.devices()[0]
        if device.platform != "gpu":
            return False
        version = str(getattr(device.client, "platform_version", "")).lower()
        if "rocm" in version or "hip" in version:
            return False
        _profiler()
        _ext()
    except Exception:
        return False
    return True


def _as_list(ms: Any, n: int) -> list[float]:
    """`measure` returns a float for one iteration, a list for several, None without kernels."""
    if ms is None:
        raise RuntimeError("CUPTI saw no kernel launches (is the function empty or constant?)")
    values = [float(ms)] if isinstance(ms, int | float) else [float(m) for m in ms]
    if len(values) != n:
        raise RuntimeError(f"CUPTI returned {len(values)} timings for {n} iterations")
    return values


class CuptiSampler:
    """Samples are per-iteration device times; warm samples come in batches of one call."""

    name: TimerName = "cupti"

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], flush: Flush | None) -> None:
        self._fn = fn
        self._args = tuple(args)
        self._flush = flush
        self._max_iterations = _MAX_ITERATIONS
        self._flush_kernels: int | None = None

    def warmup(self, runs: int) -> None:
        """Untimed calls; also bounds iterations per call by the output size."""
        import jax

        out = None
        for _ in range(max(runs, 1)):
            out = jax.block_until_ready(self._fn(*self._args))
        per_call = max(output_bytes(out), 1)
        self._max_iterations = int(max(1, min(_MAX_ITERATIONS, _MAX_LIVE_BYTES // per_call)))

    def take(self, n: int) -> list[float]:
        """`n` samples in seconds."""
        if self._flush is not None:
            return self._take_cold(n)
        samples: list[float] = []
        measure = _profiler().measure
        while len(samples) < n:
            k = min(n - len(samples), self._max_iterations)
            _, ms = measure(self._fn, iterations=k)(*self._args)
            samples.extend(m / 1e3 for m in _as_list(ms, k))
        return samples

    def _take_cold(self, n: int) -> list[float]:
        """Flush, call, repeat under one CUPTI session; drop the flush kernels' timings."""
        import jax

        assert self._flush is not None
        flush, fn, args = self._flush, self._fn, self._args
        ext = _ext()
        if self._flush_kernels is None:
            ext._cupti_init()
            try:
                flush()
            finally:
                timings = ext._cupti_get_timings(True)
            self._flush_kernels = len(timings or [])
            if not self._flush_kernels:
                raise RuntimeError("CUPTI saw no kernel in the cache flush")
        kf = self._flush_kernels
        ext._cupti_init()
        try:
            for _ in range(n):
                flush()
                out = jax.block_until_ready(fn(*args))
                del out
        finally:
            timings = list(ext._cupti_get_timings(True) or [])
        if not timings or len(timings) % n:
            raise RuntimeError(f"CUPTI returned {len(timings)} kernel timings for {n} cold runs")
        per_iteration = len(timings) // n
        if per_iteration <= kf:
            raise RuntimeError("CUPTI saw no kernel of the function between cache flushes")
        samples: list[float] = []
        for i in range(n):
            chunk = timings[i * per_iteration : (i + 1) * per_iteration]
            samples.append(sum(float(ms) for _, ms in chunk[kf:]) / 1e3)
        return samples
