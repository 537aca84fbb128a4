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

Only a hot sampling is owed a rest. The same grid with memory-bound heaters on an H100
(2026-12-07, `benchmarks/results/clock-recovery-h100-2026-12-07.txt`): after 0.05-0.3 s of
add 16M, LayerNorm or softmax 16384x8192 (float32, 120-440 W), attention's first calls ran
within 2% of steady and calls 10-40 within 1%, with no rest; after matmul 8192^3 (560-770 W),
12-26% slow. What draws the power is the tensor cores, so a case that ran below
`HOT_PCT_FLOPS` of its dtype's flops peak (`runs_hot`) leaves nothing due; one whose flops or
peaks tile does not know is taken to be hot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tile_protocol import Peaks, Work
from tile_runner._roofline import roofline

__all__ = ["GPU_REST", "HOT_PCT_FLOPS", "REST_FACTOR", "REST_MAX_S", "DeviceRest", "runs_hot"]

REST_FACTOR = 2.0
REST_MAX_S = 0.2
HOT_PCT_FLOPS = 10.0
"""A sampling at this % of the flops peak or more may leave the clocks low (the memory-bound
heaters measured ran at 1% or less, matmul at 60-75%)."""


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

    def cooled(self) -> None:
        """The last sampling ran cool (`runs_hot` said no): the next one owes it nothing."""
        self.busy_s = 0.0


def runs_hot(work: Work, median_s: float, peaks: Peaks | None, dtype: str | None) -> bool:
    """Whether a case that takes `median_s` a call may leave the GPU's clocks low: it ran at
    `HOT_PCT_FLOPS` of the flops peak or more, or tile cannot tell (no flops, no peaks)."""
    pct = roofline(work, median_s, peaks, dtype).pct_peak_flops
    return pct is None or pct >= HOT_PCT_FLOPS


GPU_REST = DeviceRest()
"""The process' one GPU: every sampling on it, by any door, rests by the same clock."""
