"""`tile tune`'s engine: which configurations a rung keeps, the winner, the tuning files."""

from __future__ import annotations

from tile_harness.tune._files import tune_findings, write_tuning
from tile_harness.tune._impls import ImplDecision, impl_lines, pick_impls
from tile_harness.tune._pick import Decision, Measured, keep_fastest, margin_text, pick
from tile_harness.tune._run import (
    TuneEnded,
    Tuner,
    TuneState,
    allowed_counts,
    budget_scale,
    estimate_s,
    rung_settings,
)
from tile_harness.tune._table import Tried, progress_line, tried_markdown, tried_rows

__all__ = [
    "TuneEnded",
    "TuneState",
    "Tuner",
    "allowed_counts",
    "budget_scale",
    "estimate_s",
    "progress_line",
    "rung_settings",
    "Tried",
    "tried_markdown",
    "tried_rows",
    "Decision",
    "Measured",
    "keep_fastest",
    "pick",
    "ImplDecision",
    "impl_lines",
    "margin_text",
    "pick_impls",
    "tune_findings",
    "write_tuning",
]
