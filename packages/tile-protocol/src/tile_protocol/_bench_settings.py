"""How a runner times one case (`BenchSettings`), and what its "auto" values mean on a backend.

Frozen, keyword-only, every field written out, as the other parts of messages (`_parts.py`)."""

from __future__ import annotations

import math
from typing import Final

import msgspec

from tile_protocol._sets import Timer

__all__ = ["AUTO_PRECISION", "AUTO_PROCESSES", "BenchSettings", "precision_on"]

AUTO_PROCESSES: Final = 2
"""Processes per case on a CPU for `[bench] processes = 0` (docs/measurement.md says why)."""
AUTO_PRECISION: Final = {"cpu": 0.02, None: 0.01}
"""`[bench] target_precision = 0` by backend (None: any but the CPU): a CPU process of the same
code lands several percent from the last, so 1% within one only doubles the wait (measurement.md)."""


def precision_on(target: float, backend: str | None) -> float:
    """A target precision as a runner on `backend` applies it (0: `AUTO_PRECISION`'s; any
    other value as it is, a bad one for the stopping rule to refuse by name)."""
    if target != 0:
        return target
    return AUTO_PRECISION["cpu" if backend == "cpu" else None]


class BenchSettings(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=False):
    """How to time one case (DESIGN §4)."""

    warmup_runs: int = 3
    min_runs: int = 10
    max_runs: int = 1000
    min_time: float = 0.0
    max_time: float = 2.0
    target_precision: float = 0.01
    """The 95% CI half-width of the median, as a fraction, that stops sampling."""
    cpu_target_precision: float | None = None
    """The target on a CPU backend, where it differs (protocol 1.26: `[bench] target_precision
    = 0` sends `AUTO_PRECISION`'s two; an older runner ignores this field, as before)."""
    timer: Timer = "auto"
    cold: bool = False
    batch: int = 10
    rounds: int = 1
    """Time every case in this many rounds over the whole plan, with fresh inputs each round."""
    cache_bytes: int | None = None
    """The cache a cold sample must not find warm (`[machine] l2_bytes`); None: the device's
    L2 from the runner's built-in table, or a default."""
    processes: int = 1
    """Runner processes that time the run's cases in turn (protocol 1.23, `[bench] processes`;
    0: `AUTO_PROCESSES` on a CPU, 1 elsewhere), each with its share of the budget (`share`)."""

    def processes_on(self, backend: str | None) -> int:
        """How many runner processes time each case on `backend` (`processes` resolved)."""
        if self.processes > 0:
            return self.processes
        return AUTO_PROCESSES if backend == "cpu" else 1

    def target_on(self, backend: str | None) -> float:
        """The target precision on `backend`."""
        cpu = self.cpu_target_precision
        return cpu if backend == "cpu" and cpu is not None else self.target_precision

    def share(self, backend: str | None) -> BenchSettings:
        """One process's part of the budget on `backend`, its precision target the backend's
        and sqrt(n) wider: the processes' samples together take about what one process would."""
        mine = msgspec.structs.replace(
            self, target_precision=self.target_on(backend), cpu_target_precision=None
        )
        n = self.processes_on(backend)
        if n == 1:
            return mine
        wider = min(0.5, mine.target_precision * math.sqrt(n))
        return msgspec.structs.replace(mine.divided(n), target_precision=wider)

    def divided(self, n: int) -> BenchSettings:
        """A round's or process's part: 1/n of the runs and time (5+ runs where allowed)."""
        max_runs = max(1, self.max_runs // n)
        return msgspec.structs.replace(
            self,
            min_runs=min(max_runs, max(5, math.ceil(self.min_runs / n))),
            max_runs=max_runs,
            min_time=self.min_time / n,
            max_time=self.max_time / n,
        )
