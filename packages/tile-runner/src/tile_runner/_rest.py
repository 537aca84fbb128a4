"""The GPU's rest between samplings: one case's clocks are not left to the next.

A GPU held at its power limit (a large matmul on an H100) runs at lower clocks, and its
controller raises them again only some time after the load ends. A case sampled right after
such a case reads the clocks that case left: in default tile-std runs on an H100
(2026-12-06), attention at 4x32x1024 read 173-200 µs right after matmul 8192^3 and 165-167 µs
alone, once compiling ahead had removed the gaps that compiling between cases used to leave.
`benchmarks/gpu/clock_recovery.py --grid` on that H100: after 0.05-0.3 s of matmul,
attention's first calls ran up to 19% slow with no rest, and within about 2% of their steady
time after a rest twice as long as the load, at most 0.2 s.

So before each sampling on a GPU, the runner waits until the time since the last sampling
ended is at least `REST_FACTOR` times that sampling's length, at most `REST_MAX_S`. Whatever
ran in between (inputs, a check, a compile) counts as rest, so a run pays only the part the
cases' own host work did not cover.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["GPU_REST", "REST_FACTOR", "REST_MAX_S", "DeviceRest"]

REST_FACTOR = 2.0
REST_MAX_S = 0.2


@dataclass
class DeviceRest:
    """When the last sampling on the device ended, and how long it kept the device busy."""

    ended: float | None = None
    busy_s: float = 0.0

    def due(self, now: float) -> float:
        """Seconds still to wait at `now` (perf_counter) before the next sampling."""
        if self.ended is None:
            return 0.0
        wanted = min(REST_MAX_S, REST_FACTOR * self.busy_s)
        return max(0.0, wanted - (now - self.ended))

    def wait(self) -> None:
        """Sleep what is due."""
        due = self.due(time.perf_counter())
        if due > 0:
            time.sleep(due)

    def busy(self, start: float, end: float) -> None:
        """A sampling kept the device busy from `start` to `end` (perf_counter seconds)."""
        self.ended, self.busy_s = end, max(0.0, end - start)


GPU_REST = DeviceRest()
"""The process' one GPU: every sampling on it, by any door, rests by the same clock."""
