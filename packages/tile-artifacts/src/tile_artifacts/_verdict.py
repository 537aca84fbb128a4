"""One verdict from two sets of samples, for callers that hold samples rather than reports."""

from __future__ import annotations

from collections.abc import Sequence

import tile_stats
from tile_artifacts._base import Judgement
from tile_artifacts._compare import judge

__all__ = ["judge_samples"]


def judge_samples(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    noise_floor_pct: float,
    alpha: float,
) -> tuple[Judgement, str, float]:
    """(judgement, reason, ratio) of `current` against `baseline` (times, lower is better).

    The ratio of medians with its bootstrap CI and the Mann-Whitney p-value, judged by the
    same rule as `tile compare` (`judge`); `tile tune` uses it to tell configurations apart.
    """
    c = tile_stats.compare(list(baseline), list(current))
    verdict, reason = judge(
        c.ratio, c.ci_low, c.ci_high, c.p_value, noise_floor_pct=noise_floor_pct, alpha=alpha
    )
    return verdict, reason, c.ratio
