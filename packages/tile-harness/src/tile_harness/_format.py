"""The CLI's names for tile's one formatter (`tile_protocol.format`), so that a median reads
the same in the terminal as in summary.md, the comparison and the HTML report."""

from __future__ import annotations

from tile_protocol.format import MISSING, format_bytes, format_percent, format_rate
from tile_protocol.format import format_ratio as fmt_ratio
from tile_protocol.format import format_seconds as fmt_time

__all__ = ["MISSING", "fmt_bytes", "fmt_pct", "fmt_rate", "fmt_ratio", "fmt_time"]

fmt_bytes = format_bytes
fmt_rate = format_rate


def fmt_pct(value: float | None) -> str:
    """A percentage with one decimal: `42.0%`."""
    return format_percent(value)
