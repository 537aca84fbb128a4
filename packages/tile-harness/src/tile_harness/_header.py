"""The line a bench starts with: where it runs and how it samples, before any number."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tile_protocol import precision_on
from tile_protocol.format import format_seconds

if TYPE_CHECKING:
    import tile_protocol as tp
    from tile_config import BenchConfig

__all__ = ["bench_header"]


def bench_header(hello: tp.Hello, bench: BenchConfig) -> str:
    """`tile bench on NVIDIA H200 (gpu ×1) · timer auto → cupti · warmup 3 · runs 10-1000 ·
    max time 2.00 s · precision ±1% · warm`: the settings every number below depends on."""
    first = hello.devices[0] if hello.devices else None
    device = first.device_kind if first is not None else "an unknown device"
    if first is not None and first.model:
        device += f": {first.model}"  # a CPU: its kind is `cpu` on every machine
    count = f" ×{len(hello.devices)}" if hello.devices else ""
    timer = bench.timer
    if timer == "auto" and hello.timers:
        timer = f"auto → {hello.timers[0]}"
    parts = [
        f"tile bench on {device} ({hello.backend or 'unknown backend'}{count})",
        f"timer {timer}",
        f"warmup {bench.warmup_runs}",
        f"runs {bench.min_runs}-{bench.max_runs}",
        f"max time {format_seconds(bench.max_time)}",
        f"precision ±{precision_on(bench.target_precision, hello.backend) * 100:g}%",
        "cold" if bench.cold else "warm",
    ]
    if bench.rounds > 1:
        parts.append(f"{bench.rounds} rounds")
    if hello.pinned_cpu is not None:
        parts.append(f"pinned to CPU {hello.pinned_cpu}")
    return " · ".join(parts)
