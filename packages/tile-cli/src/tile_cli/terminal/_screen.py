"""What a run is doing now, as one line: the words of the live status line and of a pipe's lines.

A run says, in order: the runner is starting; N cases are planned; case `id` is making its
inputs, compiling, checking, sampling; it is done. `Status` holds the latest of these as one
immutable value (the live line's refresh thread reads it while the session's thread replaces
it), and `Status.line` words it: `tile bench · 2/12 done · compiling std/copy[n=1024] · 1.4 s ·
eta 12 s` (a case of a kernel with tunables adds what it runs with: `sampling std/softmax[...]
with block_rows=4 (project tuning)`). The ETA comes from the plan: the cases left times the
mean time of a finished case.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import tile_protocol as tp

__all__ = ["STEP_WORDS", "Status", "clock"]

STEP_WORDS: dict[tp.Step, str] = {
    "inputs": "making inputs for",
    "compile": "compiling",
    "check": "checking",
    "sample": "sampling",
}
"""How the screen says each step of a case (`tp.Progress.step`)."""


def clock(seconds: float) -> str:
    """A wait as a person reads it on a status line: `0.4 s`, `12 s`, `3m 05s`."""
    if seconds < 10:
        return f"{max(seconds, 0.0):.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s"


@dataclass(frozen=True)
class Status:
    """The latest thing a run said about itself; each change is a new value
    (`dataclasses.replace`), so that a reader on another thread sees one whole."""

    label: str = "tile"
    doing: str = "starting the runner"
    """What is happening: a runner starting, or a step (`compiling`) of `case`."""
    case: str | None = None
    count: str | None = None
    """A step's own count, `3 of 12` (compiling the plan's cases ahead)."""
    config: str | None = None
    """The configuration `case` runs with (`reps=8 (project tuning)`), once the runner said it."""
    total: int | None = None
    done: int = 0
    since: float = dataclasses.field(default_factory=time.monotonic)
    """When `doing` began (monotonic seconds)."""
    first_case: float | None = None
    """When the first case began: the ETA's clock starts there, not at the runner's start."""

    def eta_s(self, now: float) -> float | None:
        """Seconds left by the plan: cases left times the mean of the finished ones."""
        if self.total is None or self.first_case is None or self.done <= 0:
            return None
        return (now - self.first_case) / self.done * max(self.total - self.done, 0)

    def line(self, now: float, *, ticking: bool) -> str:
        """The status in words; `ticking` adds how long the current step has taken (a
        terminal's line redrawn each second, never a pipe's line written once)."""
        parts = [self.label]
        if self.total is not None:
            parts.append(f"{self.done}/{self.total} done")
        doing = self.doing if self.case is None else f"{self.doing} {self.case}"
        doing = doing if self.count is None else f"{doing} ({self.count})"
        if self.config is not None and self.case is not None:
            doing += f" with {self.config}"
        parts.append(doing)
        if ticking:
            parts.append(clock(now - self.since))
        eta = self.eta_s(now)
        if eta is not None:
            parts.append(f"eta {clock(eta)}")
        return " · ".join(parts)
