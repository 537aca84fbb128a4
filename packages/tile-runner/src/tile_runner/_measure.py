"""Adaptive sampling of a compiled function, and `tile.measure` for notebooks and tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tile_protocol import BenchSettings, KernelTime, Phases, Stats, precision_on
from tile_protocol.format import format_seconds
from tile_runner._breakdown import KernelLog, kernel_times, unseen_copies_note
from tile_runner._compile import aot_compile, bind_static
from tile_runner._errors import RunnerError
from tile_runner._peaks import cache_bytes
from tile_runner._rest import GPU_REST, DeviceRest
from tile_runner._stats import StopReason, should_stop, summarize
from tile_runner._timers import (
    TIMERS,
    BatchedSampler,
    InterleavedSampler,
    ReferenceTimingError,
    Sampler,
    TimerName,
    WallSampler,
    get_flush,
)

__all__ = [
    "Measurement",
    "SamplingTime",
    "Timing",
    "available_timers",
    "measure",
    "resolve_timer",
    "sample",
    "time_compiled",
]

_GROW_BELOW_S = 0.01  # a batch faster than this doubles the next one...
_MAX_BATCH = 10_000  # ...up to this many samples.

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Timing:
    """Samples of one function, their statistics, and how they were taken.

    `reference`: its reference's timing when the two were timed interleaved; its samples are
    as many as `samples` and index-aligned with them (taken turn about, in time order).
    """

    samples: list[float]
    stats: Stats
    timer: TimerName
    cold: bool
    reference: Timing | None = None
    warmup_s: float = 0.0
    """Wall seconds of the untimed warm-up calls (kernel and reference)."""
    sample_s: float = 0.0
    """Wall seconds of the kernel's timed calls, overheads of the timer included."""
    reference_sample_s: float = 0.0
    """Wall seconds of the reference's timed calls."""
    kernels: KernelLog | None = None
    """Per-kernel times of the kernel's timed calls, where the timer sees kernels."""


@dataclass(frozen=True)
class Measurement:
    """What `tile.measure` returns: samples (seconds), statistics, timer, compile phases."""

    samples: list[float]
    stats: Stats
    timer: TimerName
    phases: Phases = field(default_factory=Phases)
    cold: bool = False
    kernels: list[KernelTime] | None = None
    """Each device kernel of one call, its time and share (the `cupti` timer only)."""

    @property
    def median(self) -> float:
        """Median time per call, in seconds."""
        return self.stats.median

    def __str__(self) -> str:
        ci = ""
        if self.stats.ci_low is not None and self.stats.ci_high is not None:
            ci = f" [{format_seconds(self.stats.ci_low)}, {format_seconds(self.stats.ci_high)}]"
        return (
            f"{format_seconds(self.stats.median)}{ci} median of {self.stats.n} "
            f"({self.timer}{', cold' if self.cold else ''}, stopped by {self.stats.stop_reason})"
        )


def available_timers(backend: str) -> list[TimerName]:
    """Timers usable in this process, best first."""
    from tile_runner import _cupti  # loads CUPTI's bindings: only when asked

    timers: list[TimerName] = ["wall", "batched"]
    if backend == "gpu" and _cupti.available():
        timers.insert(0, "cupti")
    return timers


def resolve_timer(requested: str, backend: str, warn: Warn | None) -> TimerName:
    """The timer to use for `requested` (`auto` picks the best); warn or raise if unavailable."""
    available = available_timers(backend)
    if requested == "auto":
        return available[0]
    if requested not in TIMERS:
        raise RunnerError(
            f"unknown timer {requested!r}", hint=f"use one of auto, {', '.join(TIMERS)}"
        )
    if requested in available:
        return requested
    message = f"timer {requested!r} is not available on this {backend} backend; using 'wall'"
    if warn is None:
        raise RunnerError(message, hint=f"available timers: {', '.join(available)}")
    warn(message)
    return "wall"


@dataclass
class SamplingTime:
    """Wall seconds `sample` spent warming up and in the sampler's `take` calls."""

    warmup_s: float = 0.0
    take_s: float = 0.0


def sample(
    sampler: Sampler,
    settings: BenchSettings,
    *,
    time_scale: float = 1.0,
    spent: SamplingTime | None = None,
    rest: DeviceRest | None = None,
) -> tuple[list[float], StopReason]:
    """Warm up, then take samples in batches until tile-stats' stopping rule says stop.

    `time_scale` multiplies min_time and max_time (an interleaved pair shares the budget that
    its two functions would have had one after the other). `spent`, when given, adds up where
    the wall time went. `rest` (a GPU's): first wait what the last sampling on the device
    left due (`tile_runner._rest`), counted as warm-up, and record this one when it ends.
    """
    spent = spent if spent is not None else SamplingTime()
    t_warm = time.perf_counter()
    if rest is not None:
        rest.wait()
    busy_from = time.perf_counter()
    sampler.warmup(settings.warmup_runs)
    spent.warmup_s += time.perf_counter() - t_warm
    taken = _take_until_stop(sampler, settings, time_scale, spent)
    if rest is not None:
        rest.busy(busy_from, time.perf_counter())
    return taken


def _take_until_stop(
    sampler: Sampler, settings: BenchSettings, time_scale: float, spent: SamplingTime
) -> tuple[list[float], StopReason]:
    """`sample`'s batches, after the warm-up."""
    samples: list[float] = []
    size = max(1, settings.batch)
    max_runs = max(1, settings.max_runs)
    min_runs = max(1, min(settings.min_runs, max_runs))  # a small max_runs wins
    max_time, min_time = settings.max_time * time_scale, settings.min_time * time_scale
    cost: float | None = None  # wall seconds one sample really takes, overheads included
    start = time.perf_counter()
    while True:
        k = min(size, max_runs - len(samples))
        if cost is not None:
            # Do not overshoot the time budget by much with one large batch.
            left = max_time - (time.perf_counter() - start)
            k = max(1, min(k, int(left / cost) + 1))
        t0 = time.perf_counter()
        new = sampler.take(k)
        took = time.perf_counter() - t0
        spent.take_s += took
        samples.extend(new)
        cost = took / max(len(new), 1)
        elapsed = time.perf_counter() - start
        reason = should_stop(
            samples,
            target_precision=settings.target_precision,
            min_runs=min_runs,
            max_runs=max_runs,
            elapsed_s=elapsed,
            max_time_s=max_time,
            min_time_s=min_time,
        )
        # Guards against a stopping rule that never fires: the caps are hard.
        if reason is None and len(samples) >= max_runs:
            reason = "max_runs"
        if reason is None and elapsed >= max(max_time, min_time):
            reason = "max_time"
        if reason is not None:
            return samples, reason
        if took < _GROW_BELOW_S or sum(new) < 0.5 * took:
            # Tiny kernels, or a timer with a fixed cost per batch (cupti): fewer, larger
            # batches keep that cost and the stopping rule's own out of the way.
            size = min(size * 2, _MAX_BATCH)


def _make_sampler(
    timer: TimerName, fn: Callable[..., Any], args: Sequence[Any], settings: BenchSettings
) -> Sampler:
    from tile_runner._jaxapi import devices

    flush = None
    if settings.cold:
        device = devices()[0]
        size = cache_bytes(device.platform, device.device_kind, settings.cache_bytes)
        flush = get_flush(size)
    if timer == "cupti":
        from tile_runner._cupti import CuptiSampler

        return CuptiSampler(fn, args, flush)
    if timer == "batched":
        return BatchedSampler(fn, args)
    return WallSampler(fn, args, flush)


def time_compiled(
    fn: Callable[..., Any],
    args: Sequence[Any],
    settings: BenchSettings,
    *,
    timer: TimerName,
    warn: Warn | None = None,
    reference: tuple[Callable[..., Any], Sequence[Any]] | None = None,
) -> Timing:
    """Sample `fn(*args)` with `timer`; a failing `cupti` degrades to `wall` with a warning.

    With `reference` (a compiled function and its arguments) the two are timed interleaved
    (`InterleavedSampler`): the stopping rule judges `fn`'s samples, the reference gets as many,
    index-aligned (`Timing.reference`), and the pair gets the time budget the two had one after
    the other. A reference that fails while timed is warned about and `fn` is timed alone.
    """
    if settings.cold and timer == "batched":
        if warn is not None:
            warn("cold runs cannot be batched (each call must see a flushed cache); using 'wall'")
        timer = "wall"
    while True:
        try:
            return _timing(fn, args, settings, timer, reference)
        except ReferenceTimingError as exc:
            if warn is None or exc.__cause__ is None:
                raise
            cause = exc.__cause__
            warn(f"the reference could not be timed ({type(cause).__name__}: {cause}); no speedup")
            reference = None
        except Exception as exc:
            if timer != "cupti" or warn is None:
                raise
            warn(f"the cupti timer failed ({type(exc).__name__}: {exc}); using 'wall'")
            timer = "wall"


def _timing(
    fn: Callable[..., Any],
    args: Sequence[Any],
    settings: BenchSettings,
    timer: TimerName,
    reference: tuple[Callable[..., Any], Sequence[Any]] | None,
) -> Timing:
    import jax

    spent = SamplingTime()
    sampler = _make_sampler(timer, fn, args, settings)
    rest = GPU_REST if jax.default_backend() == "gpu" else None
    if reference is None:
        try:
            samples, reason = sample(sampler, settings, spent=spent, rest=rest)
        finally:
            sampler.close()
        return Timing(
            samples,
            summarize(samples, reason),
            timer,
            settings.cold,
            warmup_s=spent.warmup_s,
            sample_s=spent.take_s,
            kernels=sampler.kernels(),
        )
    ref_fn, ref_args = reference
    pair = InterleavedSampler(sampler, _make_sampler(timer, ref_fn, ref_args, settings))
    try:
        samples, reason = sample(pair, settings, time_scale=2.0, spent=spent, rest=rest)
    finally:
        pair.close()
    ref = pair.reference_samples
    return Timing(
        samples,
        summarize(samples, reason),
        timer,
        settings.cold,
        reference=Timing(ref, summarize(ref, reason), timer, settings.cold),
        warmup_s=spent.warmup_s,
        sample_s=spent.take_s - pair.reference_take_s,
        reference_sample_s=pair.reference_take_s,
        kernels=pair.kernels(),
    )


def measure(  # noqa: PLR0913 (public call: its keyword options are documented)
    fn: Callable[..., Any],
    *args: Any,
    timer: str = "auto",
    warmup: int = 3,
    min_runs: int = 10,
    max_runs: int = 1000,
    max_time: float = 2.0,
    target_precision: float = 0.0,
    cold: bool = False,
    min_time: float = 0.0,
    batch: int = 10,
    cache_bytes: int | None = None,
) -> Measurement:
    """Compile `fn` ahead of time for `args`, then time it adaptively.

    Array arguments are traced; others (ints, bools, strings) are static. `timer` is
    `auto` (cupti on CUDA, else wall), `cupti`, `wall` or `batched`. `cache_bytes` is what
    a `cold` sample flushes first (`[machine] l2_bytes`; None: the device's L2 as tile knows
    it). `target_precision` 0 is 2% on a CPU, 1% elsewhere. A `@tile.kernel` function with
    tunables runs its default configuration, or what a `functools.partial` binds.
    """
    import jax

    from tile_runner._configure import with_default_config

    backend = jax.default_backend()
    settings = BenchSettings(
        warmup_runs=warmup,
        min_runs=min_runs,
        max_runs=max_runs,
        min_time=min_time,
        max_time=max_time,
        target_precision=precision_on(target_precision, backend),
        cold=cold,
        batch=batch,
        cache_bytes=cache_bytes,
    )
    chosen = resolve_timer(timer, backend, None)
    if isinstance(fn, jax.stages.Compiled):
        compiled, dynamic, phases = fn, tuple(args), Phases()
    else:
        bound, dynamic = bind_static(with_default_config(fn), args)
        result = aot_compile(bound, dynamic)
        compiled, phases = result.compiled, result.phases
    timing = time_compiled(compiled, dynamic, settings, timer=chosen, warn=_warn)
    hlo = None
    if timing.kernels is not None:  # the cupti timer: the HLO names its kernels and copies
        hlo = compiled.as_text()
        note = unseen_copies_note(hlo, list(timing.kernels.times))
        if note is not None:
            _warn(note)
    return Measurement(
        samples=timing.samples,
        stats=timing.stats,
        timer=timing.timer,
        phases=phases,
        cold=timing.cold,
        kernels=kernel_times(timing.kernels, len(timing.samples), timing.stats.median, hlo),
    )


def _warn(message: str) -> None:
    import warnings

    warnings.warn(message, RuntimeWarning, stacklevel=3)
