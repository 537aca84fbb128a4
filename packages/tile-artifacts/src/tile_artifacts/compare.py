"""Comparing runs (`tile compare`): the comparison document and its rows, the verdict rule
weighed against the runs' noise, the gate that turns verdicts into an exit code, and the
baseline files a run is compared against."""

from __future__ import annotations

from tile_artifacts._base import Basis, BasisSetting, Judgement
from tile_artifacts._compare import (
    COMPARABLE_METRICS,
    MIN_ROUNDS,
    MIN_RUNS,
    MIN_SAMPLES,
    compare_runs,
    judge,
)
from tile_artifacts._documents import (
    Baseline,
    BaselineCase,
    ComparisonDoc,
    ComparisonSide,
    ComparisonSummary,
    FalseDiscoveryControl,
    Thresholds,
    Versions,
    baseline_from_report,
    baseline_from_reports,
)
from tile_artifacts._gate import ONE_SIDED, GateResult, GateVerdict, gate_comparison
from tile_artifacts._read import read_baseline, read_comparison
from tile_artifacts._records import ComparisonRow, config_change
from tile_artifacts._summary import render_comparison_markdown
from tile_artifacts._verdict import judge_samples

__all__ = [
    # comparing two runs
    "COMPARABLE_METRICS",
    "compare_runs",
    "render_comparison_markdown",
    # the comparison document (`tile.comparison`)
    "ComparisonDoc",
    "ComparisonRow",
    "ComparisonSide",
    "config_change",
    "ComparisonSummary",
    "FalseDiscoveryControl",
    "Thresholds",
    "read_comparison",
    # the verdict rule and its noise
    "MIN_ROUNDS",
    "MIN_RUNS",
    "MIN_SAMPLES",
    "Basis",
    "BasisSetting",
    "Judgement",
    "judge",
    "judge_samples",
    # the gate
    "ONE_SIDED",
    "GateResult",
    "GateVerdict",
    "gate_comparison",
    # baselines (`tile.baseline`)
    "Baseline",
    "BaselineCase",
    "Versions",
    "baseline_from_report",
    "baseline_from_reports",
    "read_baseline",
]
