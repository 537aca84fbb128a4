"""Where runners cache `tile device --calibrate`, seen from the host: its directory, and the
calibration of one device kind when there is one."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tile_artifacts as ta
    import tile_protocol as tp

__all__ = ["accelerator_calibration", "cached_calibration", "calibration_dir"]


def calibration_dir(environ: Mapping[str, str]) -> Path:
    """Where runners cache calibrations: `calibration/` in tile's cache directory, as a runner
    started with `environ` finds it (the one rule: `tile_downloads.resolve_cache_dir`)."""
    from tile_downloads import resolve_cache_dir

    return resolve_cache_dir(environ.get("TILE_CACHE_DIR") or None) / "calibration"


def cached_calibration(
    environ: Mapping[str, str], device_kind: str
) -> tuple[Path, tp.Calibration | None]:
    """The file of a device kind's calibration, and what it holds (None: absent or unreadable)."""
    import msgspec

    import tile_protocol as tp

    path = calibration_dir(environ) / f"{tp.device_slug(device_kind)}.json"
    try:
        return path, msgspec.json.decode(path.read_bytes(), type=tp.Calibration)
    except (OSError, msgspec.DecodeError):
        return path, None


def accelerator_calibration(
    device: ta.DeviceRecord, runner_env: Mapping[str, str]
) -> tuple[str | None, tp.Calibration | None]:
    """A run's device's calibration file and what it holds, as its runners (with `runner_env`
    over this environment) find it; neither for a CPU, whose calibrations runners ignore."""
    if not device.device_kind or device.backend in (None, "cpu"):
        return None, None
    path, calibration = cached_calibration({**os.environ, **runner_env}, device.device_kind)
    return str(path), calibration
