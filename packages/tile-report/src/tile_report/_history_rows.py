"""What the history holds, as values: a run's point of a case, a case's series, and the rows
a report becomes. A hand-edited file is refused, not drawn (`checked_median`)."""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import tile_artifacts as ta
from tile_report._errors import HistoryError
from tile_report._git import GitInfo

__all__ = [
    "Added",
    "Point",
    "RunConfig",
    "Series",
    "SeriesOp",
    "checked_median",
    "config_json",
    "read_config",
    "matches",
    "measured_cases",
    "result_rows",
    "run_row",
]


@dataclass(frozen=True, slots=True)
class RunConfig:
    """The tunable values a run's case ran with and where they came from (`default`,
    `tuned`, `override`...: the report's `ConfigRecord.source`), and its note when it has one;
    `tile_protocol.format.format_config` words it as every table does."""

    values: dict[str, str]
    source: str
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Point:
    """One run's median of one case, with the run's CI of that median and where it came from."""

    run_id: str
    created_at: str
    commit: str | None
    commit_time: str | None
    subject: str | None
    branch: str | None
    dirty: bool | None
    median_s: float
    ci_low_s: float | None
    ci_high_s: float | None
    n: int
    kernels: tuple[tuple[str, str, float], ...] = ()
    """The run's device kernels of this case: (name, label, median seconds); none when the
    run was not CUPTI-timed."""
    config: RunConfig | None = None
    """The configuration the case ran with; None for a row recorded before the history kept
    it (or a run that recorded none)."""


@dataclass(frozen=True, slots=True)
class SeriesOp:
    """The op a series' kernel implements (`@tile.kernel(op=...)`), as its latest run said."""

    name: str
    impl: str
    baseline: bool = False


@dataclass(frozen=True, slots=True)
class Series:
    """A case's points in commit order, on one device (kind, and model on a CPU), timer and
    warm/cold mode."""

    case_id: str
    kernel: str
    device_kind: str | None
    timer: str | None
    cold: bool | None
    points: tuple[Point, ...]
    device_model: str | None = None
    """On a CPU, its model and core count; None on an accelerator and for runs recorded
    before the history kept it (those form a series of their own: their CPU is unknown)."""
    op: SeriesOp | None = None

    @property
    def device(self) -> str:
        """The device as a person reads it: `cpu (AMD EPYC 7763, 16 cores)`, `NVIDIA H200`."""
        kind = self.device_kind or "-"
        return f"{kind} ({self.device_model})" if self.device_model else kind


@dataclass(frozen=True, slots=True)
class Added:
    """What `History.add_run` did: how many cases went in, or that the run was there already."""

    run_id: str
    cases: int
    already: bool = False


def measured_cases(report: ta.Report) -> list[ta.CaseRecord]:
    """The cases worth keeping: timed, with statistics, and not failed (a wrong kernel's
    speed means nothing)."""
    return [
        c
        for c in report.cases
        if c.status in ("success", "partial") and c.stats is not None and c.samples
    ]


def matches(case_id: str, kernel: str, filters: Sequence[str], kernels: Sequence[str]) -> bool:
    """The CLI's selection rule: `-k` substring or glob on case ids, `--kernel` name or glob."""
    if filters and not any(
        fnmatch.fnmatchcase(case_id, f) if any(ch in f for ch in "*?[") else f in case_id
        for f in filters
    ):
        return False
    return not kernels or any(fnmatch.fnmatchcase(kernel, k) for k in kernels)


def checked_median(value: object, *, path: Path, run_id: object, case_id: object) -> float:
    """A row's `median_s` as a time, or HistoryError naming the row: SQLite keeps whatever a
    hand edit put in a REAL column (`'fast'`, -0.001), which ended `tile history show` in a
    TypeError or drew negative times."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number > 0:
            return number
    raise HistoryError(
        f"`{path}`: the row of run `{run_id}`, case `{case_id}` has median_s {value!r}, "
        "not a positive time; it was left as it is",
        hint=f"move it aside (`mv {path} {path}.broken`) and rebuild it with "
        "`tile history add .tile/runs/*`",
    )


def config_json(config: ta.ConfigRecord | None) -> str | None:
    """A case's configuration as the `results.config` column holds it: compact JSON of its
    values and source, and its note when it has one (the signature is left out: it names the
    kernel's declaration, not what ran)."""
    if config is None:
        return None
    kept: dict[str, object] = {"values": config.values, "source": config.source}
    if config.note is not None:
        kept["note"] = config.note
    return json.dumps(kept, separators=(",", ":"))


def read_config(text: object, *, path: Path, run_id: object, case_id: object) -> RunConfig | None:
    """The `results.config` column of a row (None when NULL), or HistoryError naming the row
    when a hand edit left something that is not a configuration. A source this tile does not
    know (a newer tile's) is kept as it is."""
    if text is None:
        return None
    try:
        found = _as_config(json.loads(text)) if isinstance(text, str) else None
    except ValueError:
        found = None
    if found is not None:
        return found
    raise HistoryError(
        f"`{path}`: the row of run `{run_id}`, case `{case_id}` has config {text!r}, not a "
        'configuration (`{"values": {...}, "source": "..."}`); it was left as it is',
        hint=f"move it aside (`mv {path} {path}.broken`) and rebuild it with "
        "`tile history add .tile/runs/*`",
    )


def _as_config(found: object) -> RunConfig | None:
    if not isinstance(found, dict):
        return None
    doc = cast("dict[object, object]", found)
    values, source, note = doc.get("values"), doc.get("source"), doc.get("note")
    if not isinstance(values, dict) or not isinstance(source, str):
        return None
    pairs = cast("dict[object, object]", values)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs.items()):
        return None
    return RunConfig({str(k): str(v) for k, v in pairs.items()}, source,
                     note if isinstance(note, str) else None)  # fmt: skip


def run_row(report: ta.Report, git: GitInfo, run_dir: str | None) -> dict[str, object]:
    """The `runs` row of a report, by column."""
    run, device = report.run, report.device
    return {
        "run_id": run.run_id,
        "created_at": _iso(run.created_at),
        "status": run.status,
        "git_commit": git.commit,
        "branch": git.branch,
        "dirty": None if git.dirty is None else int(git.dirty),
        "commit_time": git.commit_time,
        "commit_subject": git.subject,
        "device_kind": device.device_kind,
        "device_model": device.model,
        "backend": device.backend,
        "hostname": report.context.hostname,
        "tool_version": report.producer.tool_version,
        "run_dir": run_dir,
        "added_at": _iso(ta.utc_now()),
    }


def result_rows(run_id: str, cases: Sequence[ta.CaseRecord]) -> list[dict[str, object]]:
    """The `results` rows of a run's measured cases, by column."""
    return [
        {
            "run_id": run_id,
            "case_id": c.case_id,
            "kernel": c.kernel,
            "timer": c.timer,
            "cold": None if c.cold is None else int(c.cold),
            "median_s": c.stats.median,
            "ci_low_s": c.stats.ci_low,
            "ci_high_s": c.stats.ci_high,
            "n": c.stats.n,
            "ref_median_s": c.reference.stats.median if c.reference and c.reference.stats else None,
            "op": c.op.name if c.op else None,
            "impl": c.op.impl if c.op else None,
            "op_baseline": None if c.op is None else int(c.op.baseline),
            "config": config_json(c.config),
        }
        for c in cases
        if c.stats is not None
    ]


def _iso(moment: datetime) -> str:
    """A datetime as the artifacts write it: UTC ISO-8601 with `Z`."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
