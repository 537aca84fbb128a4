"""tile-report: results people look at.

A self-contained HTML report of a tile run (plots drawn as inline SVG, no script, no fetch),
and a SQLite run history whose per-case series are searched for the commits where a case
stepped beyond the noise between runs.
"""

from __future__ import annotations

from tile_report._errors import HistoryBusyError, HistoryError, ReportError
from tile_report._git import GitInfo, git_info
from tile_report._history import BUSY_TIMEOUT_S, DEFAULT_PATH, SCHEMA_VERSION, History
from tile_report._history_configs import (
    commit_configs,
    config_changes,
    config_text,
    step_config_change,
)
from tile_report._history_ops import OpTrends, op_trends
from tile_report._history_rows import (
    Added,
    Point,
    RunConfig,
    Series,
    SeriesOp,
    matches,
    measured_cases,
)
from tile_report._inputs import Accounting, ConfigValue, RunData, load_run
from tile_report._page import CSP, render_html, write_html
from tile_report._steps import (
    MIN_CHANGE,
    MIN_POINTS,
    MIN_RUNS,
    Z_MIN,
    CommitPoint,
    Fit,
    Level,
    Spike,
    Step,
    Trend,
    commit_points,
    fit_steps,
    step_carrier,
    trends,
)

__version__ = "0.1.0"

__all__ = [
    # errors
    "HistoryBusyError",
    "HistoryError",
    "ReportError",
    # the HTML report
    "CSP",
    "Accounting",
    "ConfigValue",
    "RunData",
    "load_run",
    "render_html",
    "write_html",
    # the run history
    "BUSY_TIMEOUT_S",
    "DEFAULT_PATH",
    "SCHEMA_VERSION",
    "Added",
    "GitInfo",
    "History",
    "Point",
    "RunConfig",
    "Series",
    "SeriesOp",
    "git_info",
    "matches",
    "measured_cases",
    # step detection
    "MIN_CHANGE",
    "MIN_POINTS",
    "MIN_RUNS",
    "Z_MIN",
    "CommitPoint",
    "Fit",
    "Level",
    "Spike",
    "Step",
    "Trend",
    "commit_points",
    "fit_steps",
    "OpTrends",
    "op_trends",
    "step_carrier",
    "trends",
    # the configuration behind each point
    "commit_configs",
    "config_changes",
    "config_text",
    "step_config_change",
]
