"""The one way tile writes times and numbers for people: runner, terminal, summary.md, HTML.

Every package that shows a time to a person formats it here, so that the terminal table and
the `summary.md` of the same run print the same string for the same median (`1.30 ms`, never
`1.3 ms` in one place and `1.30 ms` in the other). It lives in tile-protocol because both
sides of the wire show times (the runner's `Measurement`, the host's tables) and this is the
one package both depend on. No imports beyond the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

__all__ = [
    "MISSING",
    "PRECISION_CATEGORY",
    "PRECISION_HINT",
    "CheckLike",
    "ConfigLike",
    "check_failure_reason",
    "config_source_label",
    "format_bytes",
    "format_config",
    "format_values",
    "format_change",
    "format_change_ci",
    "format_ci_pct",
    "format_duration",
    "format_p",
    "format_percent",
    "format_rate",
    "format_ratio",
    "format_seconds",
    "missed_precision",
]

MISSING: Final = "-"
"""What a cell shows for a value that is unknown (None, NaN)."""

_TIME_UNITS: Final = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def _known(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _three_digits(value: float) -> str:
    """`value` to 3 significant digits in fixed notation, trailing zeros kept: 1.30, 13.0, 130."""
    if abs(value) >= 99.95:
        return f"{value:.0f}"
    rounded = abs(float(f"{value:.3g}"))
    digits = 0 if rounded >= 100 else 1 if rounded >= 10 else 2
    return f"{value:.{digits}f}"


def format_seconds(seconds: float | None) -> str:
    """A duration in the unit that keeps 3 significant digits: `812 ns`, `2.41 µs`, `1.30 ms`.

    The unit is chosen after rounding, so 999.96 µs reads `1.00 ms`, not `1000 µs`.
    """
    if seconds is None or not math.isfinite(seconds):
        return MISSING
    if seconds == 0:
        return "0 s"
    for scale, unit in _TIME_UNITS:
        text = _three_digits(seconds / scale)
        if abs(float(text)) >= 1 or unit == "ns":
            return f"{text} {unit}"
    raise AssertionError("unreachable")


def format_duration(seconds: float | None) -> str:
    """A wall-clock span a person waits for: `42.1 s`, `3m 05s`, `1h 02m` (campaigns, budgets)."""
    if seconds is None or not math.isfinite(seconds):
        return MISSING
    if seconds < 60:
        return format_seconds(seconds)
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def format_rate(value: float | None) -> str:
    """A throughput or other positive quantity to 3 significant digits: `820`, `12.3`, `1.23`."""
    return _three_digits(value) if value is not None and _known(value) else MISSING


def format_percent(value: float | None, *, signed: bool = False) -> str:
    """A percentage with one decimal: `42.0%`, or `+3.1%` when `signed`."""
    if value is None or not _known(value):
        return MISSING
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def format_change(ratio: float | None) -> str:
    """A ratio current/baseline as the percent change people read: 1.031 -> `+3.1%`."""
    if ratio is None or not _known(ratio):
        return MISSING
    return format_percent((ratio - 1) * 100, signed=True)


def format_change_ci(low: float | None, high: float | None) -> str:
    """A CI of a ratio as percent changes, in the unit of the change it bounds: `[+1.2%, +5.0%]`."""
    if low is None or high is None:
        return MISSING
    return f"[{format_change(low)}, {format_change(high)}]"


def format_ci_pct(low: float | None, high: float | None, center: float | None) -> str:
    """Half the width of a confidence interval relative to its center: `±0.4%`."""
    if low is None or high is None or center is None or not center or not _known(center):
        return MISSING
    return f"±{(high - low) / 2 / abs(center) * 100:.1f}%"


def format_ratio(value: float | None) -> str:
    """A speedup or other factor: `1.62×`."""
    return MISSING if value is None or not _known(value) else f"{value:.2f}×"


def format_bytes(n: float | None) -> str:
    """A size in binary units: `512 B`, `1.5 KiB`, `3.0 GiB`."""
    if n is None or not _known(n):
        return MISSING
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class CheckLike(Protocol):
    """A correctness check as the protocol and report.json both hold it."""

    @property
    def passed(self) -> bool: ...
    @property
    def max_abs_err(self) -> float | None: ...
    @property
    def rel_l2_err(self) -> float | None: ...
    @property
    def tol(self) -> float | None: ...
    @property
    def worst_index(self) -> Sequence[int] | None: ...
    @property
    def message(self) -> str | None: ...


def check_failure_reason(check: CheckLike) -> str:
    """Why a kernel's output was judged wrong, in one line a reviewer can act on: the check's
    own message when it has one (it names the worst element), else the error against tol."""
    if check.message:
        return check.message
    parts: list[str] = []
    if check.rel_l2_err is not None and check.tol is not None:
        parts.append(f"rel L2 error {check.rel_l2_err:.3g} > tol {check.tol:.3g}")
    if check.max_abs_err is not None:
        where = "" if check.worst_index is None else f" at {tuple(check.worst_index)}"
        parts.append(f"max abs error {check.max_abs_err:.3g}{where}")
    return "; ".join(parts) or "output does not match the reference"


def format_p(value: float | None) -> str:
    """A p-value to 2 significant digits: `0.069`, `3e-11`."""
    return MISSING if value is None or not _known(value) else f"{value:.2g}"


PRECISION_HINT: Final = (
    "time the case longer (`--max-time`, `--max-runs`), in rounds (`--rounds 5`), or on a "
    "pinned core (`TILE_RUNNER_PIN_CPU=1`); or loosen `--target-precision`"
)
"""What to do about a median whose CI stayed wider than the target precision."""

PRECISION_CATEGORY: Final = "noise"
"""The category of the finding that names the medians which missed the target precision:
summary.md leaves its own line about them out when a report carries it."""


def missed_precision(
    low: float | None,
    high: float | None,
    center: float | None,
    target: float | None,
    stop_reason: str | None = None,
) -> bool:
    """Whether a median's CI half-width (relative) is above `target` (a fraction, 0.01 = 1%).

    Sampling that stopped on `precision` met the target by the stopping rule's own CI; the
    summary's CI may come out a hair wider, which is not worth a warning. Unknown bounds count
    as missed: a median without a CI has no precision to speak of.
    """
    if target is None or stop_reason == "precision":
        return False
    if center is None or not center or not _known(center):
        return False
    if low is None or high is None:
        return True
    return (high - low) / 2 / abs(center) > target


class ConfigLike(Protocol):
    """A case's tunable configuration: `ConfigInfo` on the wire, `ConfigRecord` in a report."""

    @property
    def values(self) -> dict[str, str]: ...
    @property
    def source(self) -> str: ...
    @property
    def note(self) -> str | None: ...


_SOURCE_LABELS: Final = {
    "default": "default",
    "tuned": "project tuning",
    "user_cache": "user cache",
    "shipped": "shipped",
    "override": "--tunable",
    "tune": "tune",
}


def config_source_label(source: str) -> str:
    """Where a configuration came from, as every table names it."""
    return _SOURCE_LABELS.get(source, source)


def format_values(values: Mapping[str, str]) -> str:
    """`block_rows=4,num_warps=8`: a configuration's tunable values, as every table words them
    (empty for a kernel without tunables)."""
    return ",".join(f"{k}={v}" for k, v in values.items())


def format_config(config: ConfigLike | None) -> str:
    """`block_rows=4,num_warps=8 (project tuning)`: the values a case ran with and where they
    came from, `*` after the source when a note says more (`-`: a kernel without tunables)."""
    if config is None:
        return MISSING
    values = format_values(config.values)
    mark = "*" if config.note else ""
    return f"{values} ({config_source_label(config.source)}{mark})"
