"""Throughput and roofline position of a measured case."""

from __future__ import annotations

from tile_protocol import Peaks, Roofline, Throughput, Work

__all__ = ["LATENCY_PCT", "LATENCY_S", "flops_peak", "roofline", "throughput"]

LATENCY_PCT = 10.0
"""Below this % of both peaks..."""
LATENCY_S = 10e-6
"""...and below this median time, a kernel is called latency-bound."""

# float32 matmuls run on TF32 tensor cores under XLA's default precision on recent GPUs.
_ALIASES: dict[str, tuple[str, ...]] = {
    "float32": ("float32", "tf32"),
    "tf32": ("tf32", "float32"),
}


def flops_peak(peaks: Peaks, dtype: str | None) -> float | None:
    """Peak TFLOP/s for `dtype` (bfloat16 when the case has no dtype), else `default`."""
    key = dtype or "bfloat16"
    candidates = _ALIASES.get(key, (key,))
    if key.startswith("float8"):
        candidates = (key, "float8")
    for name in (*candidates, "default"):
        value = peaks.tflops.get(name)
        if value:
            return value
    return None


def throughput(work: Work, median_s: float) -> Throughput:
    """GB/s and TFLOP/s from the median time."""
    if median_s <= 0:
        return Throughput()
    return Throughput(
        gbps=None if work.bytes is None else work.bytes / median_s / 1e9,
        tflops=None if work.flops is None else work.flops / median_s / 1e12,
    )


def roofline(work: Work, median_s: float, peaks: Peaks | None, dtype: str | None) -> Roofline:
    """Arithmetic intensity, % of peaks and the bottleneck label for one case."""
    intensity = None
    if work.bytes and work.flops is not None:
        intensity = work.flops / work.bytes
    if peaks is None:
        return Roofline(intensity=intensity)
    rates = throughput(work, median_s)
    peak_bw = peaks.bandwidth_gbps or None
    peak_fl = flops_peak(peaks, dtype)
    pct_bw = None if rates.gbps is None or peak_bw is None else 100.0 * rates.gbps / peak_bw
    pct_fl = None if rates.tflops is None or peak_fl is None else 100.0 * rates.tflops / peak_fl
    known = [p for p in (pct_bw, pct_fl) if p is not None]
    if known and all(p < LATENCY_PCT for p in known) and 0 < median_s < LATENCY_S:
        bound = "latency-bound"
    elif intensity is not None and peak_bw is not None and peak_fl is not None:
        ridge = peak_fl * 1e12 / (peak_bw * 1e9)  # flop per byte where the roofs meet
        bound = "memory-bound" if intensity < ridge else "compute-bound"
    else:
        bound = "unknown"
    return Roofline(
        intensity=intensity,
        pct_peak_bw=pct_bw,
        pct_peak_flops=pct_fl,
        bound=bound,
        peak_source=peaks.source,
    )
