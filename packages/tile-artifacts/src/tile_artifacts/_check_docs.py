"""What one artifact file must say: decoding it, and the checks within one document.

The run-directory check (`_check_run`) and the one-file check (`_check`) share these; the
checks across files (manifest against disk, report against manifest) are `_check_run`'s.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final, cast

from tile_artifacts._check_facts import CaseLine, Kept, MetricLine, kept, scan_report
from tile_artifacts._documents import ComparisonDoc, Document
from tile_artifacts._lines import JsonLines, NotUtf8Error
from tile_artifacts._models import Report
from tile_artifacts._paths import (
    CASES_JSONL,
    COMMANDS_JSONL,
    EVENTS_JSONL,
    METRICS_JSONL,
    RUN_LAYOUT,
    Layout,
    open_regular,
    relative_path_problem,
)
from tile_artifacts._read import (
    DecodeIssue,
    decode_document,
    decode_record,
    parse_json,
)
from tile_artifacts._records import EventRecord
from tile_artifacts._report_scan import ReportScan

__all__ = [
    "EXPECTED_DOCUMENT",
    "EXPECTED_RECORD",
    "Found",
    "TORN",
    "Problem",
    "check_comparison",
    "check_json",
    "check_jsonl",
    "check_records",
    "check_relative",
    "check_run_file",
    "issue_problems",
    "keep_document",
    "read_bytes",
    "read_text",
    "utf8_text",
]

EXPECTED_DOCUMENT: Final = RUN_LAYOUT.documents
# By file name, so that `commands/commands.jsonl` is recognised when checked on its own too.
EXPECTED_RECORD: Final = {
    EVENTS_JSONL: "tile.event",
    METRICS_JSONL: "tile.metric",
    PurePosixPath(COMMANDS_JSONL).name: "tile.command",
    CASES_JSONL: "tile.case",
}


@dataclass(frozen=True)
class Problem:
    """One validation problem; `str()` gives `<file>[:<line>]: <message>`."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


TORN: Final = "last line has no newline: the writer was killed mid-line (readers skip it)"


@dataclass
class Found:
    """What the run-directory check decoded, for the cross-file checks."""

    documents: dict[str, Document] = field(default_factory=dict[str, Document])
    """Each document; a report without its cases and metrics (see `reports`)."""
    reports: dict[str, ReportScan] = field(default_factory=dict[str, ReportScan])
    """Each report's rules, checked a case and a metric at a time, and what they kept."""
    records: dict[str, list[tuple[int, Kept]]] = field(
        default_factory=dict[str, list[tuple[int, Kept]]]
    )
    """What the cross-file checks need of each line (events: see `event_run_ids`)."""
    event_run_ids: dict[str, dict[str, array[int]]] = field(
        default_factory=dict[str, dict[str, "array[int]"]]
    )
    """file -> run id -> the numbers of the event lines that name it. Events are most of a
    long run's lines and only their run id is checked across files, so this is all that is
    kept of them: four bytes a line instead of a decoded record."""
    problems: list[Problem] = field(default_factory=list[Problem])

    def add(self, file: str, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(file, line, message))


def issue_problems(found: Found, file: str, issue: DecodeIssue, line: int | None) -> None:
    for message in issue.messages:
        found.add(file, message, issue.line if line is None else line)


def keep_document(found: Found, file: str, document: Document) -> None:
    """A decoded document, for the cross-file checks; a report's own rules checked now."""
    if isinstance(document, Report):
        scan = found.reports[file] = ReportScan.of(document)
        document = scan.header
    found.documents[file] = document


def check_json(found: Found, file: str, data: bytes, expected: str | None) -> None:
    """Decode one JSON document of a run: a report a piece at a time (`scan_report`) where
    it can be, else whole (`expected` None: plain JSON is only parsed)."""
    if expected in (None, "tile.report") and (scan := scan_report(data)) is not None:
        found.reports[file] = scan
        found.documents[file] = scan.header
        return
    text = utf8_text(found, file, data)
    del data
    if text is None:
        return
    try:
        if expected is None:
            parsed: object = parse_json(text)
            fields = cast("dict[str, object]", parsed) if isinstance(parsed, dict) else {}
            if not str(fields.get("schema_name", "")).startswith("tile."):
                return  # Plain JSON (resolved config, cost analysis): parsing is all we check.
        keep_document(found, file, decode_document(text, expected=expected, mode="check"))
    except DecodeIssue as issue:
        issue_problems(found, file, issue, None)


def check_jsonl(found: Found, file: str, lines: JsonLines, expected: str | None) -> None:
    """Decode a JSON Lines file line by line: its size never decides the memory used."""
    records = found.records.setdefault(file, [])
    try:
        for number, line in lines:
            _check_line(found, file, (number, line), expected, records)
    except NotUtf8Error as e:
        found.add(file, str(e))
    except OSError as e:
        found.add(file, f"cannot read: {e.strerror}")
    if lines.torn is not None:
        # Readers skip it; the run itself was killed, which the missing manifest says too.
        found.add(file, TORN, lines.torn)


def _check_line(
    found: Found,
    file: str,
    numbered: tuple[int, str],
    expected: str | None,
    records: list[tuple[int, Kept]],
) -> None:
    """One line of a JSON Lines file: decoded, then kept (an event: only its run id)."""
    number, line = numbered
    if not line.strip():
        found.add(file, "blank line", number)
        return
    try:
        if expected is None:
            data = parse_json(line)
            if not (isinstance(data, dict) and "schema_name" in data):
                return
        record = decode_record(line, expected=expected, mode="check")
    except DecodeIssue as issue:
        issue_problems(found, file, issue, number)
        return
    if isinstance(record, EventRecord):
        by_id = found.event_run_ids.setdefault(file, {})
        by_id.setdefault(record.run_id, array("I")).append(number)
    else:
        records.append((number, kept(record)))


def check_run_file(found: Found, file: str, path: Path, layout: Layout = RUN_LAYOUT) -> None:
    """Decode one `.json` (read whole) or `.jsonl` (read line by line) file of a run."""
    if PurePosixPath(file).suffix == ".jsonl":
        check_jsonl(found, file, JsonLines(path), EXPECTED_RECORD.get(PurePosixPath(file).name))
        return
    data = read_bytes(found, path, file)
    if data is not None:
        check_json(found, file, data, layout.documents.get(file))


def read_bytes(found: Found, path: Path, file: str) -> bytes | None:
    try:
        with open_regular(path) as f:  # a FIFO in a run directory must not hang the check
            return f.read()
    except OSError as e:
        found.add(file, f"cannot read: {e.strerror}")
    return None


def utf8_text(found: Found, file: str, data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        found.add(file, f"not UTF-8 text (byte {e.start})")
    return None


def read_text(found: Found, path: Path, file: str) -> str | None:
    data = read_bytes(found, path, file)
    return None if data is None else utf8_text(found, file, data)


def check_relative(
    found: Found,
    file: str,
    where: str,
    path: str | None,
    *,
    line: int | None = None,
    on_disk: set[str] | None = None,
) -> None:
    if path is None:
        return
    problem = relative_path_problem(path)
    if problem is not None:
        found.add(file, f"{where}: {problem}", line)
    elif on_disk is not None and PurePosixPath(path).as_posix() not in on_disk:
        found.add(file, f"{where}: `{path}` does not exist in the run directory", line)


def _other_run_ids(found: Found, run_id: str | None) -> None:
    """Each event line that names a run other than `run_id`."""
    for file, by_id in found.event_run_ids.items():
        for other, lines in by_id.items():
            if run_id and other != run_id:
                for line in lines:
                    found.add(file, f"run_id `{other}` differs from the run's `{run_id}`", line)


def check_records(found: Found, run_id: str | None, on_disk: set[str] | None) -> None:
    _other_run_ids(found, run_id)
    for file, records in found.records.items():
        for line, record in records:
            if isinstance(record, MetricLine | CaseLine) and run_id and record.run_id != run_id:
                found.add(file, f"run_id `{record.run_id}` differs from the run's `{run_id}`", line)
            if isinstance(record, CaseLine):
                _check_case_line(found, file, line, record, on_disk)
            elif isinstance(record, MetricLine):
                path = record.facts.artifact_path
                check_relative(found, file, "source.artifact_path", path, line=line)
            else:
                check_relative(
                    found, file, "stdout_log", record.stdout_log, line=line, on_disk=on_disk
                )
                check_relative(
                    found, file, "stderr_log", record.stderr_log, line=line, on_disk=on_disk
                )


def _check_case_line(
    found: Found, file: str, line: int, record: CaseLine, on_disk: set[str] | None
) -> None:
    """A case log line holds what report.json would: the same rules for its case."""
    for message in record.problems:
        found.add(file, f"case {message}", line)
    for i, stderr_log in enumerate(record.stderr_logs):
        where = f"failures[{i}].stderr_log"
        check_relative(found, file, where, stderr_log, line=line, on_disk=on_disk)


def check_comparison(found: Found, file: str, doc: ComparisonDoc) -> None:
    counted = {
        "regression": doc.summary.regression_count,
        "improvement": doc.summary.improvement_count,
        "neutral": doc.summary.neutral_count,
        "inconclusive": doc.summary.inconclusive_count,
        "not_comparable": doc.summary.not_comparable_count,
    }
    for judgement, count in counted.items():
        actual = sum(1 for row in doc.rows if row.judgement == judgement)
        if actual != count:
            found.add(
                file, f"summary.{judgement}_count is {count} but {actual} row(s) say `{judgement}`"
            )
