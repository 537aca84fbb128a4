"""tile_protocol.format: the one way tile writes times and numbers for people."""

from __future__ import annotations

from tile_protocol.format import format_duration, format_seconds


def test_format_seconds_keeps_three_digits_and_picks_the_unit_after_rounding() -> None:
    values = (2.5, 1e-3, 4.98e-4, 8e-7, 9.9996e-4, 0.0, 1234.5, float("nan"), None)
    assert [format_seconds(x) for x in values] == [
        "2.50 s", "1.00 ms", "498 µs", "800 ns", "1.00 ms", "0 s", "1234 s", "-", "-",
    ]  # fmt: skip


def test_format_duration_reads_seconds_then_minutes_then_hours() -> None:
    values = (42.14, 185.0, 3720.0, None)
    assert [format_duration(x) for x in values] == ["42.1 s", "3m 05s", "1h 02m", "-"]
