"""`tile --version`: every tile package this command runs with, without importing any of them.

A bug report needs all of them: the packages are released on their own, so `tile-cli 0.3`
says nothing about the runner or the statistics engine it was installed beside.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

__all__ = ["PACKAGES", "version_lines"]

PACKAGES = (
    "tile-cli",
    "tile-protocol",
    "tile-config",
    "tile-artifacts",
    "tile-downloads",
    "tile-stats",
    "tile-runner",
    "tile-std",
    "tile-report",
    "tile-pytest",
)


def version_lines() -> list[str]:
    """`NAME VERSION` per package (`not installed` where it is not), then protocol and Python."""
    import tile_protocol as tp

    width = max(len(name) for name in PACKAGES)
    lines: list[str] = []
    for name in PACKAGES:
        try:
            found = version(name)
        except PackageNotFoundError:
            found = "not installed"
        lines.append(f"{name:<{width}}  {found}")
    lines.append(f"{'protocol':<{width}}  {tp.PROTOCOL_VERSION}.{tp.PROTOCOL_MINOR}")
    lines.append(f"{'python':<{width}}  {sys.version.split()[0]} ({sys.executable})")
    return lines
