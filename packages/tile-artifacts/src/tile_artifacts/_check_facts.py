"""What schema-check keeps of a run's records for the checks across files, and a report
decoded a piece at a time.

A 10,000-case run has 50,000 lines in metrics.jsonl and a case log line per case; kept as
models they took about 260 MB, though the checks across files read only a few fields of
each. A line is checked on its own when decoded; what is kept of it is a `MetricLine` or a
`CaseLine`, a few hundred bytes.
"""

from __future__ import annotations

import sys
from typing import Any, Final, NamedTuple

from pydantic import ValidationError

from tile_artifacts._base import MODE_KEY
from tile_artifacts._case_log import CaseLogRecord
from tile_artifacts._consistency import case_problems
from tile_artifacts._metrics import case_metric_values
from tile_artifacts._models import CaseRecord, Report
from tile_artifacts._pieces import ReportPieces, report_pieces
from tile_artifacts._records import CommandRecord, MetricRecord
from tile_artifacts._report_scan import MetricFacts, MetricKey, ReportScan
from tile_artifacts._strict_json import DecodeIssue, parse_json

__all__ = ["CaseLine", "Kept", "MetricLine", "kept", "scan_report"]

_CHECK: Final = {MODE_KEY: "check"}


class MetricLine(NamedTuple):
    """A metrics.jsonl line: its run, which metric it is, its value and source."""

    run_id: str
    key: MetricKey
    facts: MetricFacts


class CaseLine(NamedTuple):
    """A case log line: its run and case, the case's own problems (found when decoded), its
    failures' log paths, and its metrics as (name, value, pointer within the case)."""

    run_id: str
    case_id: str
    problems: tuple[str, ...]
    stderr_logs: tuple[str | None, ...]
    metrics: tuple[tuple[str, float, str], ...]


Kept = MetricLine | CaseLine | CommandRecord
"""What the checks across files keep of a JSON Lines record (events: only their run id)."""


def _same(text: str | None) -> str | None:
    """One string object for the many equal ones (run ids, case ids, metric names)."""
    return None if text is None else sys.intern(text)


def kept(record: MetricRecord | CaseLogRecord | CommandRecord) -> Kept:
    """What is kept of a decoded line."""
    if isinstance(record, MetricRecord):
        key = (_same(record.case_id), sys.intern(record.metric_name))
        source = record.source
        facts = MetricFacts(record.value, _same(source.artifact_path), source.json_pointer)
        return MetricLine(sys.intern(record.run_id), key, facts)
    if isinstance(record, CaseLogRecord):
        case = record.case
        return CaseLine(
            sys.intern(record.run_id),
            sys.intern(case.case_id),
            tuple(case_problems(case)),
            tuple(failure.stderr_log for failure in record.failures),
            tuple(case_metric_values(case)),
        )
    return record


def _item(text: str, model: type[CaseRecord] | type[MetricRecord]) -> Any:
    return model.model_validate(parse_json(text, unique_keys=True, within=2), context=_CHECK)


def _scan(pieces: ReportPieces) -> ReportScan | None:
    envelope = pieces.envelope
    version = envelope.get("schema_version")
    if envelope.get("schema_name") != "tile.report" or type(version) is not int or version != 1:
        return None
    scan = ReportScan(Report.model_validate(envelope, context=_CHECK))
    for text in pieces.texts(pieces.cases):
        scan.case(_item(text, CaseRecord))
    for text in pieces.texts(pieces.metrics):
        scan.metric(_item(text, MetricRecord))
    return scan


def scan_report(data: bytes) -> ReportScan | None:
    """A valid report's bytes checked a case and a metric at a time, holding one of each at
    once; None where the whole-document path must decide (not a report, or a problem to
    name in its words: that path says where, in the document's lines)."""
    try:
        pieces = report_pieces(data, lambda text: parse_json(text, unique_keys=True))
        return None if pieces is None else _scan(pieces)
    except (DecodeIssue, ValidationError, UnicodeDecodeError, RecursionError):
        return None
