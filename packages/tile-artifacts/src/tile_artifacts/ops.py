"""Implementations of one op side by side (`@tile.kernel(op=...)`): the op a case's kernel
implements, how the tables group such cases, and each implementation's speedup against the
op's baseline implementation."""

from __future__ import annotations

from tile_artifacts._models import OpRecord
from tile_artifacts._ops import (
    ImplCase,
    OpGroup,
    OpLike,
    impl_speedups,
    op_groups,
    op_problems,
    ops_markdown,
    record_median,
    timed_ops,
)

__all__ = [
    "ImplCase",
    "OpGroup",
    "OpLike",
    "OpRecord",
    "impl_speedups",
    "op_groups",
    "op_problems",
    "ops_markdown",
    "record_median",
    "timed_ops",
]
