"""Small formatters for times, rates and sizes (no numpy, no rich)."""

from __future__ import annotations

__all__ = ["fmt_bytes", "fmt_pct", "fmt_rate", "fmt_ratio", "fmt_time"]


def fmt_time(seconds: float | None) -> str:
    """A duration with a unit that keeps 3-4 significant digits: 812 ns, 2.41 µs, 1.20 s."""
    if seconds is None:
        return "-"
    s = abs(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= scale or unit == "ns":
            value = seconds / scale
            digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
            return f"{value:.{digits}f} {unit}"
    raise AssertionError("unreachable")


def fmt_rate(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
