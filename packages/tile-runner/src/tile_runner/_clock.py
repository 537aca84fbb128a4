"""Where a case's wall time goes: a stopwatch that splits it into the parts of `Accounting`."""

from __future__ import annotations

import time
from typing import Literal, get_args

from tile_protocol import Accounting

__all__ = ["Part", "Stopwatch"]

Part = Literal[
    "inputs", "compile", "reference_compile", "check", "warmup", "sample", "reference_sample"
]
_PARTS: tuple[Part, ...] = get_args(Part)


class Stopwatch:
    """Splits the wall time of one case into named parts; what no part claims is `other`.

    `lap(part)` gives the time since the last mark to `part`; `add(part, s)` credits seconds
    measured elsewhere (the sampler's own clock) and `mark()` moves the mark without crediting,
    so the remainder of that stretch counts as `other`. A case timed in rounds is paused
    between its rounds, so that other cases' rounds do not count as its own.
    """

    def __init__(self) -> None:
        self._parts: dict[Part, float] = dict.fromkeys(_PARTS, 0.0)
        self._total = 0.0
        self._running_since: float | None = None
        self._mark = 0.0
        self.resume()

    def resume(self) -> None:
        """Start (again) counting wall time."""
        if self._running_since is None:
            self._running_since = self._mark = time.perf_counter()

    def pause(self) -> None:
        """Stop counting wall time until `resume`."""
        if self._running_since is not None:
            self._total += time.perf_counter() - self._running_since
            self._running_since = None

    def lap(self, part: Part) -> None:
        """Credit the time since the last mark to `part`."""
        now = time.perf_counter()
        self._parts[part] += now - self._mark
        self._mark = now

    def add(self, part: Part, seconds: float) -> None:
        """Credit `seconds` measured by someone else to `part`."""
        self._parts[part] += seconds

    def credit(self, part: Part | None, seconds: float) -> None:
        """Count `seconds` spent on this case before it started (made ready ahead of its
        turn) as its own: into `part` (None: `other`) and into the total."""
        if part is not None:
            self._parts[part] += seconds
        self._total += seconds

    def mark(self) -> None:
        """Move the mark to now; the stretch since the last one stays unclaimed (`other`)."""
        self._mark = time.perf_counter()

    def accounting(self) -> Accounting:
        """The parts so far; `other_s` is the total minus every named part."""
        total = self._total
        if self._running_since is not None:
            total += time.perf_counter() - self._running_since
        named = sum(self._parts.values())
        p = self._parts
        return Accounting(
            inputs_s=p["inputs"],
            compile_s=p["compile"],
            reference_compile_s=p["reference_compile"],
            check_s=p["check"],
            warmup_s=p["warmup"],
            sample_s=p["sample"],
            reference_sample_s=p["reference_sample"],
            other_s=max(0.0, total - named),
            total_s=total,
        )
