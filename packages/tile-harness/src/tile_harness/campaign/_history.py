"""What earlier runs cost: the history a campaign plan estimates from.

Every run directory records, per case, where its wall time went (`cases[].accounting`), and
per run how long the runners took to start and what the run spent around its cases
(`timing`). A campaign's `campaign.json` adds what the `tile bench` process of each unit took
beyond its run. These are read back here, by device kind, from `[output] dir` and from the
unit directories of every campaign, newest first.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

__all__ = ["History", "Observation", "bench_fingerprint", "read_history"]

MAX_REPORTS: Final = 300
"""Read at most this many run directories (the newest): a plan must stay quick."""
_LAST: Final = 5
"""A case's estimate is the median of its last few runs: recent enough, robust to one outlier."""
_MEASURED: Final = frozenset({"success", "failed"})


@dataclass(frozen=True)
class Observation:
    """One earlier run of one case: its wall time, the part spent sampling, its settings."""

    settings: str
    total_s: float
    sampling_s: float
    mtime: float


@dataclass
class History:
    """Earlier runs by device kind: per case, per run's runner start and per run's overhead."""

    cases: dict[tuple[str, str], list[Observation]] = field(
        default_factory=lambda: defaultdict(list)
    )
    starts: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    overheads: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    process: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    reports: int = 0

    def case(self, device_kind: str, case_id: str) -> list[Observation]:
        """That case's runs on that device kind, newest first."""
        found = self.cases.get((device_kind, case_id), [])
        return sorted(found, key=lambda o: o.mtime, reverse=True)

    @staticmethod
    def median_of_last(values: Iterable[float]) -> float | None:
        """Median of the first `_LAST` values (newest first), None when there are none."""
        recent = list(values)[:_LAST]
        return statistics.median(recent) if recent else None


def bench_fingerprint(values: Mapping[str, object]) -> str:
    """The `[bench]` settings that decide how long sampling takes, as one comparable string.

    `values` are flattened config keys (`bench.max_time`...), as `tile_config.flatten` and a
    run directory's `config/resolved_tool.json` give them.
    """
    bench = {k: values[k] for k in sorted(values) if k.startswith("bench.")}
    return json.dumps(bench, sort_keys=True, default=str)


def _report_dirs(runs_dir: Path, campaigns_dir: Path) -> list[Path]:
    """Run directories with a report, newest first, at most MAX_REPORTS."""
    found: list[tuple[float, Path]] = []
    patterns = ((runs_dir, "*/report.json"), (campaigns_dir, "*/units/*/attempt-*/report.json"))
    for base, pattern in patterns:
        if not base.is_dir():
            continue
        for report in base.glob(pattern):
            try:
                found.append((report.stat().st_mtime, report.parent))
            except OSError:
                continue
    found.sort(key=lambda item: item[0], reverse=True)
    return [path for _, path in found[:MAX_REPORTS]]


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _object(value: object) -> dict[str, object] | None:
    """`value` as a JSON object (its keys are strings), or None when it is something else."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _array(value: object) -> list[object]:
    """A JSON array's items; null or an absent key reads as none."""
    return cast("list[object]", value or [])


def _settings(run_dir: Path) -> tuple[str, int]:
    """The run's bench fingerprint and how many runners ran its cases (1 unless sharded)."""
    doc = _object(_load(run_dir / "config" / "resolved_tool.json"))
    if doc is None:
        return "", 0
    values: dict[str, object] = {}
    for key, item in doc.items():
        entry = _object(item)
        if entry is not None:
            values[str(key)] = entry.get("value")
    shards = values.get("launcher.shards")
    sharded = values.get("launcher.kind") != "local" or (isinstance(shards, int) and shards > 1)
    return bench_fingerprint(values), 0 if sharded else 1


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _cases(report: dict[str, object]) -> Iterator[tuple[str, float, float]]:
    """(case id, total_s, sampling_s) of every measured case with an accounting."""
    for item in _array(report.get("cases")):
        case = _object(item)
        if case is None or case.get("status") not in _MEASURED:
            continue
        acc = _object(case.get("accounting"))
        total = _float(acc.get("total_s")) if acc is not None else None
        case_id = case.get("case_id")
        if total is None or not isinstance(case_id, str):
            continue
        assert acc is not None
        parts = ("warmup_s", "sample_s", "reference_sample_s")
        sampling = sum(_float(acc.get(p)) or 0.0 for p in parts)
        yield case_id, total, sampling


def _add_run(history: History, run_dir: Path) -> None:
    report = _object(_load(run_dir / "report.json"))
    if report is None or report.get("schema_name") != "tile.report":
        return
    device = _object(report.get("device"))
    kind = device.get("device_kind") if device is not None else None
    if not isinstance(kind, str):
        return
    settings, runners = _settings(run_dir)
    mtime = (run_dir / "report.json").stat().st_mtime
    history.reports += 1
    case_total = 0.0
    for case_id, total, sampling in _cases(report):
        history.cases[(kind, case_id)].append(Observation(settings, total, sampling, mtime))
        case_total += total
    timing = _object(report.get("timing"))
    if timing is None or runners != 1:
        return  # a sharded run's start and overhead overlap: they say little about one runner
    start, wall = _float(timing.get("runner_start_s")), _float(timing.get("wall_s"))
    if start is not None:
        history.starts[kind].append(start)
    if start is not None and wall is not None:
        history.overheads[kind].append(max(0.0, wall - start - case_total))


def _add_campaign(history: History, campaign_json: Path) -> None:
    """What each unit's `tile bench` process took beyond its run (interpreter, imports, exit)."""
    doc = _object(_load(campaign_json))
    if doc is None or doc.get("schema_name") != "tile.campaign":
        return
    for item in _array(doc.get("units")):
        unit = _object(item)
        for entry in _array(unit.get("attempts")) if unit is not None else []:
            attempt = _object(entry)
            if attempt is None or not attempt.get("done"):
                continue
            wall = _float(attempt.get("wall_s"))
            report = _object(_load(campaign_json.parent / str(attempt.get("path")) / "report.json"))
            timing = _object(report.get("timing")) if report is not None else None
            run_wall = _float(timing.get("wall_s")) if timing is not None else None
            kind = attempt.get("device_kind")
            if wall is not None and run_wall is not None and isinstance(kind, str):
                history.process[kind].append(max(0.0, wall - run_wall))


def read_history(runs_dir: Path, campaigns_dir: Path) -> History:
    """Every earlier run under `runs_dir` and in the campaigns under `campaigns_dir`."""
    history = History()
    for run_dir in _report_dirs(runs_dir, campaigns_dir):
        _add_run(history, run_dir)
    if campaigns_dir.is_dir():
        for campaign_json in sorted(campaigns_dir.glob("*/campaign.json")):
            _add_campaign(history, campaign_json)
    return history
