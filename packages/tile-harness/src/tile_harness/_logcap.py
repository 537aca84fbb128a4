"""How much of a runner's log a run keeps: a bound per case and per run, and a note of the rest.

A kernel that prints in a loop can send millions of `log` lines; each becomes an events.jsonl
line, so the file (and every later read of it) grew without bound: 1 M lines made 1.24 GB.
The first lines of a case say what went wrong; the millionth adds nothing. So each case keeps
its first PER_CASE lines and the run its first PER_RUN, and what was dropped is said once per
case, in the events and on the screen. Warnings and errors count like any line: a case that
warns a million times is the same flood.
"""

from __future__ import annotations

import threading
from collections import Counter

__all__ = ["PER_CASE", "PER_RUN", "LogCap"]

PER_CASE = 10_000
"""Log lines kept of one case (or of the run outside any case)."""
PER_RUN = 200_000
"""Log lines kept of the whole run."""


class LogCap:
    """Counts a run's log lines by case and says which to keep; thread-safe (shards share it)."""

    def __init__(self, per_case: int = PER_CASE, per_run: int = PER_RUN) -> None:
        self.per_case = per_case
        self.per_run = per_run
        self._kept: Counter[str | None] = Counter()
        self._dropped: Counter[str | None] = Counter()
        self._total = 0
        self._lock = threading.Lock()

    def admit(self, case_id: str | None) -> bool:
        """Whether this line of `case_id` (None: the run's own) is kept."""
        with self._lock:
            if self._kept[case_id] >= self.per_case or self._total >= self.per_run:
                self._dropped[case_id] += 1
                return False
            self._kept[case_id] += 1
            self._total += 1
            return True

    def dropped(self) -> dict[str | None, int]:
        """Lines dropped, by case (None: outside any case)."""
        with self._lock:
            return {case: n for case, n in self._dropped.items() if n}

    def note(self, case_id: str | None, dropped: int) -> str:
        """What a person is told about the lines dropped of one case."""
        where = f"case `{case_id}`" if case_id else "the run (outside any case)"
        return (f"{dropped} log line(s) of {where} dropped: a run keeps {self.per_case:,} "
                f"lines a case and {self.per_run:,} in all")  # fmt: skip
