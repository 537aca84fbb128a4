"""The history keeps each run's per-kernel breakdown, and a step names the device kernel that
carries it (`tile history regressions`'s "carried by")."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
import tile_stats
from tile_report import GitInfo, History, step_carrier, trends

Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]
CASE = "k/gemm_softmax[n=1]"


def _case(make_case: Cases, gemm_s: float, softmax_s: float, seed: int) -> ta.CaseRecord:
    """A case of two kernels whose every call is their sum, with a little run-to-run noise."""
    rng = random.Random(seed)
    parts = {"gemm": gemm_s, "loop_softmax_fusion": softmax_s}
    per_kernel = {
        name: [s * math.exp(rng.gauss(0, 0.002)) for _ in range(30)] for name, s in parts.items()
    }
    calls = [sum(v) for v in zip(*per_kernel.values(), strict=True)]
    stats = ta.StatsRecord.from_summary(tile_stats.summarize(calls), stop_reason="precision")
    kernels: list[ta.kernels.KernelRecord] = []
    for name, values in per_kernel.items():
        k_stats = ta.StatsRecord.from_summary(tile_stats.summarize(values))
        kernels.append(ta.kernels.KernelRecord(name=name, short=name, origin=f"{name}.1 (kLoop)",
                                               stats=k_stats, share=k_stats.median / stats.median))  # fmt: skip
    base = make_case(CASE, sum(parts.values()), seed=seed)
    return base.model_copy(update={"samples": calls, "stats": stats, "kernels": kernels})


def test_a_step_names_the_kernel_that_carries_it(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    path = tmp_path / "h.sqlite"
    with History(path) as history:
        for i in range(8):  # 8 commits, two runs each; the softmax doubles from commit 4 on
            softmax = 1e-4 if i < 4 else 2e-4
            commit = f"{i:x}" * 40
            git = GitInfo(commit=commit[:40], branch="main", dirty=False,
                          commit_time=f"2026-01-0{i + 1}T00:00:00Z")  # fmt: skip
            for run in range(2):
                case = _case(make_case, 1e-3, softmax, seed=10 * i + run)
                history.add_run(make_report([case], git_head=commit[:40]), git=git)
        series = history.series()
    point = series[0].points[0]
    assert {name for name, _, _ in point.kernels} == {"gemm", "loop_softmax_fusion"}
    (trend,) = trends(series)
    (step,) = [s for s in trend.fit.steps if s.kind == "regression"]
    carried = step_carrier(trend.fit, step)
    assert carried is not None
    assert carried.endswith("in `loop_softmax_fusion [loop_softmax_fusion.1 (kLoop)]`")
    assert 90 <= int(carried.split("%")[0]) <= 110


def test_runs_without_a_breakdown_name_no_kernel(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    with History(tmp_path / "h.sqlite") as history:
        for i in range(8):
            commit = f"{i:x}" * 40
            git = GitInfo(commit=commit[:40], branch="main", dirty=False,
                          commit_time=f"2026-01-0{i + 1}T00:00:00Z")  # fmt: skip
            for run in range(2):
                case = make_case(CASE, 1e-3 if i < 4 else 2e-3, seed=10 * i + run)
                history.add_run(make_report([case], git_head=commit[:40]), git=git)
        series = history.series()
    (trend,) = trends(series)
    (step,) = [s for s in trend.fit.steps if s.kind == "regression"]
    assert step_carrier(trend.fit, step) is None
