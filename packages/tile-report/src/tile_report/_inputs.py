"""What a report is drawn from: a run directory read back, with its config and time accounting.

The report model is read tolerantly (tile-artifacts drops keys a newer v1 producer added), so
the optional `accounting` objects are also read from the raw JSON: a run written before they
existed has none, and a run written after shows them even where this package's copy of the
models does not know the key yet.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import tile_artifacts as ta
from tile_report._errors import ReportError

__all__ = ["Accounting", "ConfigValue", "RunData", "load_run"]

_TOTAL_KEYS = ("total_s", "total")


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One resolved configuration value, as `tile config` shows it, and where it came from."""

    key: str
    value: str
    origin: str


@dataclass(frozen=True, slots=True)
class Accounting:
    """Where wall time went: named parts in seconds, in the order written, and the total."""

    parts: tuple[tuple[str, float], ...]
    total: float | None = None

    @property
    def whole(self) -> float:
        """The total when known, else the sum of the parts."""
        summed = sum(seconds for _, seconds in self.parts)
        return self.total if self.total is not None and self.total >= summed else summed

    @classmethod
    def from_json(cls, obj: object) -> Accounting | None:
        """Numeric fields of a JSON object; `name_s` reads as `name`; None when there are none."""
        fields = _object(obj)
        if fields is None:
            return None
        parts: list[tuple[str, float]] = []
        total: float | None = None
        for key, value in fields.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            seconds = float(value)
            if not math.isfinite(seconds) or seconds < 0:
                continue
            if key in _TOTAL_KEYS:
                total = seconds
            else:
                parts.append((str(key).removesuffix("_s").replace("_", " "), seconds))
        if not parts and total is None:
            return None
        return cls(tuple(parts), total)


@dataclass(frozen=True, slots=True)
class RunData:
    """A run read back for reporting: the report, its resolved config, accounting, comparison."""

    report: ta.Report
    source: Path
    config: tuple[ConfigValue, ...] = ()
    accounting: Mapping[str, Accounting] = field(default_factory=dict[str, Accounting])
    run_accounting: Accounting | None = None
    comparison: ta.compare.ComparisonDoc | None = None

    @property
    def run_dir(self) -> Path:
        """The run directory (the folder holding report.json)."""
        return self.source.parent


def load_run(path: str | Path) -> RunData:
    """Read a run directory (or its report.json) for a report; ReportError names what is wrong."""
    given = Path(path)
    source = given / ta.REPORT_JSON if given.is_dir() else given
    campaign = ta.campaign.not_one_run(given)
    if campaign is not None:
        raise ReportError(campaign[0], hint=campaign[1])
    if not source.is_file():
        raise ReportError(
            f"`{given}` is not a run directory or report.json (`{source}` is missing)",
            hint="pass a run directory such as `.tile/latest`, written by `tile bench` or "
            "`tile test`",
        )
    try:
        report = ta.read_report(source, metrics=False)
    except ta.ArtifactError as exc:
        raise ReportError(exc.message, hint=exc.hint) from None
    accounting: dict[str, Accounting] = {}
    for case in report.cases:
        found = (
            Accounting.from_json(case.accounting.model_dump())
            if case.accounting is not None
            else None
        )
        if found is not None:
            accounting[case.case_id] = found
    return RunData(
        report=report,
        source=source,
        config=_config(source.parent),
        accounting=accounting,
        run_accounting=_run_timing(
            report.timing.model_dump() if report.timing is not None else None
        ),
        comparison=_comparison(source.parent),
    )


def _run_timing(timing: object) -> Accounting | None:
    """The run's wall time (report.json `timing`): runner start, then the cases' parts summed.

    What neither explains (the CLI, discovery of kernel modules) shows as the unaccounted rest.
    """
    fields = _object(timing)
    if fields is None:
        return None
    cases = Accounting.from_json(fields.get("parts"))
    start = fields.get("runner_start_s")
    wall = fields.get("wall_s")
    parts = [("runner start", float(start))] if isinstance(start, int | float) else []
    parts += list(cases.parts) if cases is not None else []
    total = float(wall) if isinstance(wall, int | float) else None
    return Accounting(tuple(parts), total) if parts else None


def _object(value: object) -> dict[str, object] | None:
    """`value` as a JSON object (its keys are strings), or None when it is something else."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _config(run_dir: Path) -> tuple[ConfigValue, ...]:
    """`config/resolved_tool.json` as rows; an old or hand-made run without it has none."""
    try:
        data: object = json.loads(
            (run_dir / "config" / "resolved_tool.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError, RecursionError):
        return ()
    doc = _object(data)
    if doc is None:
        return ()
    rows: list[ConfigValue] = []
    for key, item in doc.items():
        entry = _object(item)
        if entry is not None and "value" in entry:
            value = json.dumps(entry["value"], sort_keys=True)
            rows.append(ConfigValue(str(key), value, str(entry.get("origin", "?"))))
    return tuple(rows)


def _comparison(run_dir: Path) -> ta.compare.ComparisonDoc | None:
    """The run's own comparisons.json (`tile bench --compare`), when it has a readable one."""
    target = run_dir / ta.COMPARISONS_JSON
    if not target.is_file():
        return None
    try:
        return ta.compare.read_comparison(target)
    except ta.ArtifactError:
        return None
