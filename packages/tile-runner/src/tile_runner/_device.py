"""`tile device`: what the runner's JAX sees, built-in peaks, and measured ceilings."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from tile_protocol import Calibration, DeviceInfo, DeviceReport, Peaks, device_slug

__all__ = ["calibrate", "calibrated_peaks", "calibration_path", "device_infos", "device_report"]

GiB = 1 << 30


def calibrate() -> Calibration:
    """Measure copy bandwidth (read + write) and a dense bf16 matmul rate on device 0.

    Sizes fill an H200 (1 GiB copy, 8192³ matmul). A CPU is never calibrated: its caches, not
    one memory roof, set its speed (docs/roofline.md).
    """
    import jax
    import jax.numpy as jnp

    from tile_runner._measure import measure

    copy_bytes = GiB
    n = 8192
    key = jax.random.key(0)
    x = jax.random.normal(key, (copy_bytes // 4,), jnp.float32)

    # `x + 1` reads and writes every element once: the traffic of a copy that XLA cannot elide.
    def add_one(v: jax.Array) -> jax.Array:
        return v + 1.0

    def bf16_matmul(p: jax.Array, q: jax.Array) -> jax.Array:
        return jnp.matmul(p, q, preferred_element_type=jnp.float32).astype(jnp.bfloat16)

    copy = measure(add_one, x, max_time=2.0, min_runs=20)
    a = jax.random.normal(key, (n, n), jnp.bfloat16)
    b = jax.random.normal(jax.random.fold_in(key, 1), (n, n), jnp.bfloat16)
    mm = measure(bf16_matmul, a, b, max_time=3.0, min_runs=10)
    return Calibration(
        copy_gbps=2 * copy_bytes / copy.median / 1e9,
        copy_bytes=copy_bytes,
        matmul_tflops=2 * n**3 / mm.median / 1e12,
        matmul_dtype="bfloat16",
        matmul_shape=[n, n, n],
        timer=copy.timer,
    )


def calibration_path(device_kind: str) -> Path:
    """Where the calibration of one device kind is cached: `calibration/` in tile's cache."""
    from tile_downloads import resolve_cache_dir

    return resolve_cache_dir() / "calibration" / f"{device_slug(device_kind)}.json"


def _save(device_kind: str, calibration: Calibration) -> None:
    path = calibration_path(device_kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(msgspec.json.encode(calibration))
    tmp.replace(path)


def calibrated_peaks(device_kind: str, builtin: Peaks | None) -> Peaks | None:
    """Peaks from a cached calibration (bf16 rate measured, other dtypes from the table)."""
    path = calibration_path(device_kind)
    try:
        cal = msgspec.json.decode(path.read_bytes(), type=Calibration)
    except (OSError, msgspec.DecodeError, json.JSONDecodeError):
        return None
    tflops = dict(builtin.tflops) if builtin is not None else {}
    tflops[cal.matmul_dtype] = cal.matmul_tflops
    return Peaks(bandwidth_gbps=cal.copy_gbps, tflops=tflops, source="calibrated")


def device_infos(local: list[Any] | None = None) -> list[DeviceInfo]:
    """What tile records of each local device (of `local`, else JAX's): kind, memory, the L2
    of a GPU in the built-in table, a CPU's model. The runner's hello and tile-pytest's
    in-process report both take it from here."""
    from tile_runner._cpu import cpu_model
    from tile_runner._jaxapi import local_devices
    from tile_runner._peaks import known_device

    infos: list[DeviceInfo] = []
    for device in local_devices() if local is None else local:
        memory = None
        try:
            stats = device.memory_stats()
            if stats:
                memory = int(stats.get("bytes_limit") or 0) or None
        except Exception:
            memory = None
        spec = known_device(device.device_kind) if device.platform != "cpu" else None
        infos.append(
            DeviceInfo(
                id=int(device.id),
                platform=device.platform,
                device_kind=device.device_kind,
                memory_bytes=memory,
                l2_bytes=spec.l2_bytes if spec else None,
                model=cpu_model() if device.platform == "cpu" else None,
            )
        )
    return infos


def device_report(
    backend: str,
    devices: list[DeviceInfo],
    local: list[Any],
    *,
    run_calibration: bool,
    warn: Callable[[str], None] | None = None,
) -> DeviceReport:
    """The device report for device 0 (peaks only for accelerators in the built-in table).

    Only an accelerator is calibrated; on a CPU `calibration` stays None and the CLI says why.
    A calibration that cannot be cached is still reported (it was measured); `warn` says why
    it was not kept.
    """
    from tile_runner._peaks import builtin_peaks

    first = local[0] if local else None
    if first is None or first.platform == "cpu":
        return DeviceReport(backend=backend, devices=devices)
    peaks = builtin_peaks(first.device_kind)
    calibration = None
    if run_calibration:
        calibration = calibrate()
        try:
            _save(first.device_kind, calibration)
        except OSError as exc:
            if warn is not None:
                where = calibration_path(first.device_kind).parent
                warn(f"the calibration was measured but not cached in `{where}`: "
                     f"{exc.strerror or exc}; set TILE_CACHE_DIR to a writable directory")  # fmt: skip
    return DeviceReport(
        backend=backend, devices=devices, builtin_peaks=peaks, calibration=calibration
    )
