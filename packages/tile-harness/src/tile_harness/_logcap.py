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

__all__ = ["NOISE", "PER_CASE", "PER_RUN", "LogCap"]

PER_CASE = 10_000
"""Log lines kept of one case (or of the run outside any case)."""
PER_RUN = 200_000
"""Log lines kept of the whole run."""
NOISE = 1_000
"""Lines that are not protocol messages (stray prints, a forked child's writes) kept as
`protocol_noise` events: each is a warning, and a runner printing a million of them made an
events.jsonl without bound (the sweep of 2026-12-05: 38 MB in five minutes, still going)."""


class LogCap:
    """Counts a run's log lines by case and says which to keep; thread-safe (shards share it)."""

    def __init__(self, per_case: int = PER_CASE, per_run: int = PER_RUN) -> None:
        self.per_case = per_case
        self.per_run = per_run
        self._kept: Counter[str | None] = Counter()
        self._dropped: Counter[str | None] = Counter()
        self._total = 0
        self._noise = 0
        self.noise_dropped = 0
        """Lines that were not protocol messages, beyond `NOISE`, not kept."""
        self._lock = threading.Lock()

    def admit_noise(self) -> bool:
        """Whether this line that is not a protocol message is kept as an event."""
        with self._lock:
            self._noise += 1
            self.noise_dropped += self._noise > NOISE
            return self._noise <= NOISE

    def notes(self) -> list[tuple[str | None, int, str]]:
        """(case, lines dropped, what a person is told) for each case that lost lines, and
        once for the lines that were not protocol messages (case None)."""
        notes = [(case_id, n, self.note(case_id, n)) for case_id, n in self.dropped().items()]
        if self.noise_dropped:
            notes.append((None, self.noise_dropped, f"{self.noise_dropped} line(s) that are not "
                          f"protocol messages dropped: a run keeps the first {NOISE:,}"))  # fmt: skip
        return notes

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
