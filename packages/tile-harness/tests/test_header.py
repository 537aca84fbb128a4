"""The line a bench starts with: its times read as every other time tile shows."""

from __future__ import annotations

import tile_protocol as tp
from tile_config import BenchConfig
from tile_harness._header import bench_header


def test_the_header_writes_max_time_with_tile_protocol_format() -> None:
    gpu = tp.DeviceInfo(id=0, platform="gpu", device_kind="NVIDIA H200")
    hello = tp.Hello(protocol_version=1, runner_version="test", python_version="3",
                     backend="gpu", devices=[gpu], timers=["cupti"])  # fmt: skip
    assert bench_header(hello, BenchConfig()) == (
        "tile bench on NVIDIA H200 (gpu ×1) · timer auto → cupti · warmup 3 · runs 10-1000 · "
        "max time 2.00 s · precision ±1% · warm"
    )
    assert "max time 50.0 ms ·" in bench_header(hello, BenchConfig(max_time=0.05))
