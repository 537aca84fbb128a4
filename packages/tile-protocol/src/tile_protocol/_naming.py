"""Names both sides use: a case's folder for build outputs and snapshots, a device's file name
(baselines, tuning files, calibrations).

The runner writes `outputs/<case_dirname>/` and the CLI names `snapshots/<case_dirname>.mlir`
and looks for build outputs by the same rule; written once here, the two cannot drift apart.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["case_dirname", "device_slug"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")
_MAX_SLUG = 80


def case_dirname(case_id: str) -> str:
    """A file-system-safe, unique, stable name for a case: readable slug plus a short hash.

    The hash keeps two ids apart that differ only in characters the slug drops or in case
    (macOS file systems ignore case).
    """
    slug = _UNSAFE.sub("_", case_id).strip("._-")[:_MAX_SLUG].rstrip("._-") or "case"
    return f"{slug}-{hashlib.sha256(case_id.encode()).hexdigest()[:8]}"


def device_slug(kind: str | None) -> str:
    """`NVIDIA H200` -> `nvidia-h200`: the file name of a device's baseline, tuning file and
    calibration."""
    slug = re.sub(r"[^a-z0-9]+", "-", (kind or "unknown").lower()).strip("-")
    return slug or "unknown"
