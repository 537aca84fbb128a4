"""What a findings rule reads (`RunFacts`) and what it says (`Noticed`), shared by the rules of
`_findings.py` and `_plausible.py`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import tile_artifacts as ta
    import tile_protocol as tp
    from tile_harness._telemetry import ClockSample

__all__ = ["Noticed", "Priority", "RunFacts", "Severity"]

Severity = Literal["info", "low", "medium", "high", "critical"]
Priority = Literal["high", "medium", "low"]


@dataclass(frozen=True)
class Noticed:
    """One finding before it is numbered, with the action it calls for."""

    severity: Severity
    category: str
    title: str
    evidence: list[str]
    interpretation: str
    action: str | None = None
    priority: Priority = "medium"


@dataclass(frozen=True)
class RunFacts:
    """What the rules read: the report, its comparison, the GPU clocks of the run, and where
    its roofline peaks came from."""

    report: ta.Report
    comparison: ta.compare.ComparisonDoc | None
    clocks: Sequence[ClockSample] = ()
    clock_problem: str | None = None
    target_precision: float = 0.01
    case_timeout: float = 300.0
    command: str = "bench"
    peak_origins: Mapping[str, str] = field(default_factory=dict[str, str])
    """Where each `[machine]` peak was set: `machine.peak_bandwidth_gbps` -> `tile.toml:4`."""
    calibration: tp.Calibration | None = None
    """This device's cached `tile device --calibrate`, if there is one."""
    calibration_file: str | None = None
    """Where the runner keeps (or would keep) that calibration."""
