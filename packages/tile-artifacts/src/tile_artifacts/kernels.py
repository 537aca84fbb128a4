"""A case's per-kernel breakdown (the `cupti` timer's): its record, its lines in a table, and
the kernel that carries a change between two runs."""

from __future__ import annotations

from tile_artifacts._kernels import (
    KernelLike,
    KernelRecord,
    MovedKernel,
    attribute_rows,
    breakdown_lines,
    carrier,
    label,
    moved_kernel,
)

__all__ = [
    "KernelLike",
    "KernelRecord",
    "MovedKernel",
    "attribute_rows",
    "breakdown_lines",
    "carrier",
    "label",
    "moved_kernel",
]
