"""Built-in table of known devices: peak bandwidth, dense matmul rates, L2 size."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tile_protocol import Peaks

__all__ = ["DEFAULT_CACHE_BYTES", "DeviceSpec", "builtin_peaks", "cache_bytes", "known_device"]

MiB = 1024 * 1024

DEFAULT_CACHE_BYTES = 64 * MiB
"""Last-level cache size assumed for a device missing from the table."""

CPU_FLUSH_BYTES = 64 * MiB


@dataclass(frozen=True)
class DeviceSpec:
    """Datasheet figures of one device (dense, no sparsity), matched on `device_kind`."""

    name: str
    pattern: str
    bandwidth_gbps: float
    tflops: dict[str, float] = field(default_factory=dict[str, float])
    l2_bytes: int | None = None


# Order matters: the first pattern that matches `device_kind` wins (H100 PCIe before H100).
# TFLOP/s keys are dtype names; `tf32` is what XLA uses for float32 matmuls on these GPUs.
_TABLE: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "NVIDIA H200",
        r"\bH200\b",
        4800.0,
        {
            "bfloat16": 989.4,
            "float16": 989.4,
            "tf32": 494.7,
            "float32": 66.9,
            "float8": 1978.9,
            "float64": 66.9,
        },
        60 * MiB,
    ),
    DeviceSpec(
        "NVIDIA H100 PCIe",
        r"\bH100\b.*PCIe",
        2000.0,
        {
            "bfloat16": 756.0,
            "float16": 756.0,
            "tf32": 378.0,
            "float32": 51.2,
            "float8": 1513.0,
            "float64": 51.2,
        },
        50 * MiB,
    ),
    DeviceSpec(
        "NVIDIA H100 SXM",
        r"\bH100\b",
        3350.0,
        {
            "bfloat16": 989.4,
            "float16": 989.4,
            "tf32": 494.7,
            "float32": 66.9,
            "float8": 1978.9,
            "float64": 66.9,
        },
        50 * MiB,
    ),
    DeviceSpec(
        "NVIDIA A100 40GB",
        r"\bA100\b.*40GB",
        1555.0,
        {"bfloat16": 312.0, "float16": 312.0, "tf32": 156.0, "float32": 19.5, "float64": 19.5},
        40 * MiB,
    ),
    DeviceSpec(
        "NVIDIA A100 80GB PCIe",
        r"\bA100\b.*PCIe",
        1935.0,
        {"bfloat16": 312.0, "float16": 312.0, "tf32": 156.0, "float32": 19.5, "float64": 19.5},
        40 * MiB,
    ),
    DeviceSpec(
        "NVIDIA A100 80GB SXM",
        r"\bA100\b",
        2039.0,
        {"bfloat16": 312.0, "float16": 312.0, "tf32": 156.0, "float32": 19.5, "float64": 19.5},
        40 * MiB,
    ),
    DeviceSpec(
        "NVIDIA B200",
        r"\bB200\b",
        8000.0,
        {"bfloat16": 2250.0, "float16": 2250.0, "tf32": 1125.0, "float8": 4500.0},
        126 * MiB,
    ),
)


def known_device(device_kind: str) -> DeviceSpec | None:
    """The table entry for a JAX `device_kind` such as `NVIDIA H200`, if known."""
    for spec in _TABLE:
        if re.search(spec.pattern, device_kind, flags=re.IGNORECASE):
            return spec
    return None


def builtin_peaks(device_kind: str) -> Peaks | None:
    """Peaks from the built-in table; None for unknown devices (and for CPUs)."""
    spec = known_device(device_kind)
    if spec is None:
        return None
    return Peaks(
        bandwidth_gbps=spec.bandwidth_gbps,
        tflops=dict(spec.tflops),
        source=f"builtin:{spec.name}",
    )


def cache_bytes(platform: str, device_kind: str, configured: int | None = None) -> int:
    """Size to flush between cold samples: the configured size (`[machine] l2_bytes`), else
    the GPU's L2 from the table, else a default."""
    if configured is not None:
        return configured
    if platform == "cpu":
        return CPU_FLUSH_BYTES // 2
    spec = known_device(device_kind)
    if spec is not None and spec.l2_bytes:
        return spec.l2_bytes
    return DEFAULT_CACHE_BYTES
