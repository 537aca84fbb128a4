"""The configuration behind each point of a case's history, and where it changed: a step at a
point whose tunable values differ from the point before it may be the new values, not the
kernel's code. Worded as every other table words a configuration (`format_config`) and a
change of one (`tile_artifacts.compare.config_change`, which a comparison's row uses too)."""

from __future__ import annotations

from collections.abc import Sequence

import tile_artifacts as ta
from tile_protocol.format import MISSING, format_config, format_values
from tile_report._history_rows import RunConfig
from tile_report._steps import CommitPoint, Fit, Step

__all__ = ["commit_configs", "config_changes", "config_text", "step_config_change"]


def commit_configs(point: CommitPoint) -> tuple[RunConfig, ...]:
    """The configurations a commit's runs recorded, each once, in run order (empty when none
    did: runs recorded before the history kept them)."""
    seen: list[RunConfig] = []
    for run in point.runs:
        if run.config is not None and run.config not in seen:
            seen.append(run.config)
    return tuple(seen)


def config_text(point: CommitPoint) -> str:
    """`reps=8,variant=right (project tuning)`; several joined by ` · ` when a commit's runs
    ran different ones; `-` when none was recorded."""
    configs = commit_configs(point)
    return " · ".join(format_config(c) for c in configs) if configs else MISSING


def _values(configs: Sequence[RunConfig]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for config in configs:
        if config.values not in found:
            found.append(config.values)
    return found


def _same(was: Sequence[dict[str, str]], now: Sequence[dict[str, str]]) -> bool:
    """Whether two commits ran the same sets of values, in whatever order their runs did."""
    return {frozenset(v.items()) for v in was} == {frozenset(v.items()) for v in now}


def _change(before: CommitPoint, after: CommitPoint) -> str | None:
    was, now = _values(commit_configs(before)), _values(commit_configs(after))
    if not was or not now or _same(was, now):
        return None  # unknown on a side (recorded before the history kept it), or the same
    if len(was) == 1 and len(now) == 1:
        return ta.compare.config_change(was[0], now[0])
    words = [" / ".join(format_values(d) for d in side) for side in (was, now)]
    return f"configuration changed: {words[0]} -> {words[1]}"


def config_changes(fit: Fit) -> dict[int, str]:
    """Point index -> `configuration changed: reps=1 -> reps=8`, for each point whose tunable
    values differ from the point before it (both recorded; the source alone, a tuning file
    that names the default's values, is no change)."""
    points = fit.points
    return {
        i: change
        for i in range(1, len(points))
        if (change := _change(points[i - 1], points[i])) is not None
    }


def step_config_change(fit: Fit, step: Step) -> str | None:
    """What changed in the configuration at a step's first commit; None when nothing did."""
    if step.index == 0:
        return None
    return _change(fit.points[step.index - 1], fit.points[step.index])
