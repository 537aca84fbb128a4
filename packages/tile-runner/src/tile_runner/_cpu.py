"""Which CPU this is: JAX calls every CPU `cpu`, so tile tells them apart by model and cores."""

from __future__ import annotations

import os
import platform
from pathlib import Path

__all__ = ["cpu_model"]


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """This machine's CPU as tile tells CPUs apart: its model name and core count.

    JAX calls every CPU `cpu`, so a baseline or tuning made on one CPU model would otherwise
    apply to any other. The name is `/proc/cpuinfo`'s first `model name` (Linux), else
    `platform.processor()`, else the machine type; the count is `os.cpu_count()` (the host's
    logical CPUs, not a pinned runner's one core, so every runner of a host agrees).
    """
    name = ""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "model name" and value.strip():
                name = value.strip()
                break
    except OSError:
        pass
    name = " ".join((name or platform.processor() or platform.machine() or "unknown").split())
    cores = os.cpu_count() or 1
    return f"{name}, {cores} core{'s' if cores != 1 else ''}"
