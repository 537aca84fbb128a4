"""The JSONL records (`tile.metric`, `tile.event`, `tile.command`) and the comparison row."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, JsonValue

from tile_artifacts._base import (
    Aggregation,
    ArtifactModel,
    Basis,
    Judgement,
    Level,
    Status,
    Timer,
    Unit,
    UtcDatetime,
)
from tile_protocol.format import format_values

__all__ = [
    "CommandRecord",
    "ComparisonRow",
    "EventRecord",
    "MetricRecord",
    "MetricSource",
    "config_change",
]


def config_change(before: dict[str, str] | None, after: dict[str, str] | None) -> str | None:
    """`configuration changed: block=2 -> block=4`: the tunable values that differ between two
    results of one case, when both recorded theirs and they differ; else None. One wording for
    a comparison's row and a history's point."""
    if before is None or after is None or before == after:
        return None
    names = [n for n in {**before, **after} if before.get(n) != after.get(n)]
    was = ",".join(f"{n}={before.get(n, '-')}" for n in names)
    now = ",".join(f"{n}={after.get(n, '-')}" for n in names)
    return f"configuration changed: {was} -> {now}"


class MetricSource(ArtifactModel):
    """Where a metric value is found: a run-relative file and a JSON pointer into it."""

    artifact_path: str | None = None
    json_pointer: str | None = None


class MetricRecord(ArtifactModel):
    """One line of `metrics.jsonl` (`tile.metric`)."""

    schema_name: Literal["tile.metric"] = "tile.metric"
    schema_version: Literal[1] = 1
    run_id: str
    case_id: str | None = None
    metric_name: str
    value: float | None
    unit: Unit
    aggregation: Aggregation
    higher_is_better: bool | None = None
    timer: Timer | None = None
    dimensions: dict[str, str] = Field(default_factory=dict)
    source: MetricSource = Field(default_factory=MetricSource)


class EventRecord(ArtifactModel):
    """One line of `events.jsonl` (`tile.event`)."""

    schema_name: Literal["tile.event"] = "tile.event"
    schema_version: Literal[1] = 1
    timestamp: UtcDatetime
    level: Level
    tool_name: str
    run_id: str
    phase: str | None = None
    event: str
    message: str
    fields: dict[str, JsonValue] = Field(default_factory=dict)


class CommandRecord(ArtifactModel):
    """One line of `commands/commands.jsonl` (`tile.command`): a child process tile started."""

    schema_name: Literal["tile.command"] = "tile.command"
    schema_version: Literal[1] = 1
    command_id: str
    phase: str | None = None
    args: list[str]
    display: str
    cwd: str
    environment_overrides: dict[str, str] = Field(default_factory=dict)
    redacted_environment_keys: list[str] = Field(default_factory=list)
    stdout_log: str | None = None
    stderr_log: str | None = None
    status: Status
    return_code: int | None = None
    signal: str | None = None
    started_at: UtcDatetime | None = None
    finished_at: UtcDatetime | None = None
    wall_time_s: float | None = None


class ComparisonRow(ArtifactModel):
    """One case of a comparison; `ratio` is current / baseline with its bootstrap CI.

    `basis`: what the ratio, CI and p-value were computed from: `absolute` the case's times,
    `relative` its per-sample ratios to its reference (timed interleaved); null when no
    statistics were computed (not comparable). `baseline_value` and `current_value` are
    always the absolute medians; a relative row also has `baseline_relative` and
    `current_relative`, the medians of each side's kernel/reference ratios, whose quotient is
    the `ratio` judged (null on absolute rows, and in files written before tile recorded them).
    `moved_kernel` and `moved_share`: on a judged change between two runs with a per-kernel
    breakdown, the device kernel that carries most of it and its share of the change.
    `baseline_config` and `current_config`: the tunable values each side ran with (null for a
    kernel without tunables, or a side that did not record them); when they differ the row
    compares two configurations, not only two versions of the code (`config_changed`).
    `baseline_other_configs`: the tunable values of the runs of a pooled baseline left out of
    its pool for this case because they ran another configuration (`config_note` says so).
    `op` and `impl`: the op the case's kernel implements and its implementation label
    (`@tile.kernel(op=...)`; null for a kernel of no op), so that implementations compared
    side by side are told apart by op as well as by case id.
    """

    added_keys: ClassVar[frozenset[str]] = frozenset(
        {
            "basis",
            "baseline_relative",
            "current_relative",
            "moved_kernel",
            "moved_share",
            "baseline_config",
            "current_config",
            "op",
            "impl",
            "baseline_other_configs",
        }
    )

    case_id: str
    metric_name: str
    unit: Unit
    baseline_value: float | None = None
    current_value: float | None = None
    ratio: float | None = None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    percent_change: float | None = None
    p_value: float | None = None
    higher_is_better: bool
    judgement: Judgement
    reason: str | None = None
    basis: Basis | None = None
    baseline_relative: float | None = None
    current_relative: float | None = None
    moved_kernel: str | None = None
    moved_share: float | None = None
    baseline_config: dict[str, str] | None = None
    current_config: dict[str, str] | None = None
    op: str | None = None
    impl: str | None = None
    baseline_other_configs: list[dict[str, str]] | None = None

    def op_label(self) -> str | None:
        """`op layernorm: pallas`, beside the case id of an implementation of an op."""
        return f"op {self.op}: {self.impl}" if self.op is not None else None

    def config_changed(self) -> str | None:
        """`block=2 -> block=4`: what changed between the sides' tunable values, when both
        recorded them and they differ; else None."""
        return config_change(self.baseline_config, self.current_config)

    def config_note(self) -> str | None:
        """What a row says about configurations: a change between the sides
        (`config_changed`), and runs a pooled baseline left out because they ran other
        values (`baseline pooled only block=4: 2 runs of block=2 left out`); else None."""
        notes = [self.config_changed()]
        if self.baseline_other_configs:
            counts: dict[str, int] = {}
            for values in self.baseline_other_configs:
                text = format_values(values) or "no tunables"
                counts[text] = counts.get(text, 0) + 1
            kept = format_values(self.baseline_config or {})
            left = ", ".join(f"{n} run{'s' if n > 1 else ''} of {t}" for t, n in counts.items())
            notes.append(
                f"baseline pooled only {kept or 'its last configuration'}: {left} left out"
            )
        return "; ".join(n for n in notes if n) or None

    def relative_values(self) -> tuple[str, str] | None:
        """Baseline and current as a relative row was judged, for a table (`1.38× ref`,
        `1.39× ref`: their quotient is the change shown); None on any other row, which shows
        its medians."""
        if self.baseline_relative is None or self.current_relative is None:
            return None
        return f"{self.baseline_relative:#.3g}× ref", f"{self.current_relative:#.3g}× ref"
