"""The validator behind `tile schema-check`: a run directory or one artifact file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Final

from tile_artifacts._base import Status
from tile_artifacts._consistency import baseline_problems, metrics_file_problems, report_problems
from tile_artifacts._documents import (
    ArtifactEntry,
    Baseline,
    ComparisonDoc,
    Document,
    JsonlRecord,
    Manifest,
)
from tile_artifacts._errors import ArtifactError
from tile_artifacts._models import Report
from tile_artifacts._paths import (
    COMMANDS_JSONL,
    EVENTS_JSONL,
    MANIFEST_JSON,
    METRICS_JSONL,
    REPORT_JSON,
    RUN_LAYOUT,
    Layout,
    relative_path_problem,
    run_files,
    sha256_file,
)
from tile_artifacts._read import (
    DecodeIssue,
    complete_lines,
    decode_document,
    decode_record,
    parse_json,
)
from tile_artifacts._records import CommandRecord, EventRecord, MetricRecord

__all__ = ["Problem", "check_path"]

_EXPECTED_DOCUMENT: Final = RUN_LAYOUT.documents
# By file name, so that `commands/commands.jsonl` is recognised when checked on its own too.
_EXPECTED_RECORD: Final = {
    EVENTS_JSONL: "tile.event",
    METRICS_JSONL: "tile.metric",
    PurePosixPath(COMMANDS_JSONL).name: "tile.command",
}
# What the writer only appends to: a checkpoint's record of it stays a prefix of the file.
# (Runner logs are not among them: they are redacted in place when their runner ends.)
_APPEND_ONLY: Final = frozenset({".jsonl"})
# A run with any of these among its cases did not do all its required work.
_FAILED_STATUSES: Final[frozenset[Status]] = frozenset(
    {"failed", "timed_out", "invalid", "interrupted"}
)


@dataclass(frozen=True)
class Problem:
    """One validation problem; `str()` gives `<file>[:<line>]: <message>`."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


_TORN: Final = "last line has no newline: the writer was killed mid-line (readers skip it)"


@dataclass
class _Found:
    """What the run-directory check decoded, for the cross-file checks."""

    documents: dict[str, Document] = field(default_factory=dict)
    records: dict[str, list[tuple[int, JsonlRecord]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def add(self, file: str, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(file, line, message))


def _issue_problems(found: _Found, file: str, issue: DecodeIssue, line: int | None) -> None:
    for message in issue.messages:
        found.add(file, message, issue.line if line is None else line)


def _check_json(found: _Found, file: str, text: str, expected: str | None) -> None:
    try:
        if expected is None:
            data = parse_json(text)
            is_tile = isinstance(data, dict) and str(data.get("schema_name", "")).startswith(
                "tile."
            )
            if not is_tile:
                return  # Plain JSON (resolved config, cost analysis): parsing is all we check.
        found.documents[file] = decode_document(text, expected=expected, mode="check")
    except DecodeIssue as issue:
        _issue_problems(found, file, issue, None)


def _check_jsonl(found: _Found, file: str, text: str, expected: str | None) -> None:
    records = found.records.setdefault(file, [])
    lines = complete_lines(text)
    if not text.endswith("\n") and text:
        # Readers skip it; the run itself was killed, which the missing manifest says too.
        found.add(file, _TORN, len(lines) + 1)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            found.add(file, "blank line", number)
            continue
        try:
            if expected is None:
                data = parse_json(line)
                if not (isinstance(data, dict) and "schema_name" in data):
                    continue
            records.append((number, decode_record(line, expected=expected, mode="check")))
        except DecodeIssue as issue:
            _issue_problems(found, file, issue, number)


def _check_text(
    found: _Found, file: str, text: str, suffix: str, layout: Layout = RUN_LAYOUT
) -> None:
    if suffix == ".jsonl":
        _check_jsonl(found, file, text, _EXPECTED_RECORD.get(PurePosixPath(file).name))
    else:
        _check_json(found, file, text, layout.documents.get(file))


def _read(found: _Found, path: Path, file: str) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        found.add(file, f"not UTF-8 text (byte {e.start})")
    except OSError as e:
        found.add(file, f"cannot read: {e.strerror}")
    return None


def _check_relative(
    found: _Found,
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


def _check_entry(found: _Found, run_dir: Path, path: str, entry: ArtifactEntry, grow: bool) -> None:
    """Size and sha256 of one listed file; with `grow` (an incomplete run's checkpoint), an
    append-only file may have grown since, and any other file may have been rewritten."""
    appendable = PurePosixPath(path).suffix in _APPEND_ONLY
    if grow and not appendable:
        return
    try:
        size, digest = sha256_file(run_dir / path)
        if grow and size > entry.size_bytes:
            size, digest = sha256_file(run_dir / path, entry.size_bytes)
    except OSError as e:
        found.add(path, f"cannot read: {e.strerror}")
        return
    if size != entry.size_bytes:
        found.add(path, f"size is {size} bytes, artifact_manifest.json records {entry.size_bytes}")
    if digest != entry.sha256:
        found.add(
            path,
            "its first bytes differ from what the checkpoint recorded: an append-only file "
            "was rewritten"
            if grow
            else "sha256 differs from artifact_manifest.json: the file changed "
            "after the run was finalized",
        )


def _check_manifest(found: _Found, manifest: Manifest, run_dir: Path, regular: list[str]) -> None:
    on_disk = set(regular)
    listed: set[str] = set()
    incomplete = manifest.run.status == "incomplete"
    for i, entry in enumerate(manifest.artifacts):
        where = f"artifacts[{i}]"
        if entry.path_type != "artifact_relative":
            found.add(
                MANIFEST_JSON,
                f"{where}: path_type must be `artifact_relative` "
                "(files outside the run directory belong in input_files)",
            )
        problem = relative_path_problem(entry.path)
        if problem is not None:
            found.add(MANIFEST_JSON, f"{where}: {problem}")
            continue
        path = PurePosixPath(entry.path).as_posix()
        if path in listed:
            found.add(MANIFEST_JSON, f"{where}: `{path}` is listed twice")
        listed.add(path)
        if path == MANIFEST_JSON:
            found.add(MANIFEST_JSON, f"{where}: the manifest must not list itself")
        elif path not in on_disk:
            found.add(path, "listed in artifact_manifest.json but missing")
        else:
            _check_entry(found, run_dir, path, entry, incomplete)
    # A checkpoint lists what was there when it was written; the run went on after it.
    unlisted = set[str]() if incomplete else on_disk - listed - {MANIFEST_JSON}
    for path in sorted(unlisted):
        found.add(path, "not listed in artifact_manifest.json")
    for name, path in manifest.primary_artifacts.model_dump().items():
        _check_relative(found, MANIFEST_JSON, f"primary_artifacts.{name}", path, on_disk=listed)
    for i, snap in enumerate(manifest.config_snapshots):
        if snap.path_type == "artifact_relative":
            _check_relative(
                found, MANIFEST_JSON, f"config_snapshots[{i}].path", snap.path, on_disk=listed
            )
    for i, item in enumerate(manifest.input_files):
        where = f"input_files[{i}].path"
        if item.path_type == "artifact_relative":
            _check_relative(found, MANIFEST_JSON, where, item.path, on_disk=on_disk)
        elif not (
            PurePosixPath(item.path).is_absolute() or PureWindowsPath(item.path).is_absolute()
        ):
            found.add(
                MANIFEST_JSON, f"{where}: `{item.path}` is claimed `absolute_input` but is relative"
            )


def _check_report(found: _Found, report: Report, on_disk: set[str] | None) -> None:
    run_status = report.run.status
    if report.summary.status != run_status:
        found.add(
            REPORT_JSON,
            f"summary.status `{report.summary.status}` differs from run.status `{run_status}`",
        )
    if report.summary.counts.cases != len(report.cases):
        found.add(
            REPORT_JSON,
            f"summary.counts.cases is {report.summary.counts.cases} but the "
            f"report has {len(report.cases)} case(s)",
        )
    failed = [c.case_id for c in report.cases if c.status in _FAILED_STATUSES]
    if run_status == "success" and (report.failures or failed):
        what = [f"{len(report.failures)} failure(s)"] if report.failures else []
        what += [f"{len(failed)} failed case(s)"] if failed else []
        found.add(
            REPORT_JSON,
            f"run status is `success` but the run has {' and '.join(what)}; "
            "it should be `partial` or `failed`",
        )
    for i, case in enumerate(report.cases):
        if case.status == "success" and case.check is not None and not case.check.passed:
            found.add(
                REPORT_JSON,
                f"cases[{i}] `{case.case_id}`: status is `success` but its check failed",
            )
    seen: set[str] = set()
    for i, failure in enumerate(report.failures):
        if failure.failure_id in seen:
            found.add(REPORT_JSON, f"failures[{i}]: failure_id `{failure.failure_id}` is repeated")
        seen.add(failure.failure_id)
        _check_relative(
            found, REPORT_JSON, f"failures[{i}].stderr_log", failure.stderr_log, on_disk=on_disk
        )
    for i, metric in enumerate(report.metrics):
        _check_relative(
            found, REPORT_JSON, f"metrics[{i}].source.artifact_path", metric.source.artifact_path
        )
    report_problems(report, lambda message: found.add(REPORT_JSON, message))


def _check_metrics_file(found: _Found, report: Report, *, final: bool) -> None:
    """metrics.jsonl must repeat report.json's metrics (the same run, written twice)."""
    lines = [
        (line, record)
        for line, record in found.records.get(METRICS_JSONL, [])
        if isinstance(record, MetricRecord)
    ]
    metrics_file_problems(
        report,
        lines,
        lambda message, line: found.add(METRICS_JSONL, message, line or None),
        final=final,
    )


def _check_records(found: _Found, run_id: str | None, on_disk: set[str] | None) -> None:
    for file, records in found.records.items():
        for line, record in records:
            if (
                isinstance(record, EventRecord | MetricRecord)
                and run_id
                and record.run_id != run_id
            ):
                found.add(file, f"run_id `{record.run_id}` differs from the run's `{run_id}`", line)
            if isinstance(record, MetricRecord):
                _check_relative(
                    found, file, "source.artifact_path", record.source.artifact_path, line=line
                )
            elif isinstance(record, CommandRecord):
                _check_relative(
                    found, file, "stdout_log", record.stdout_log, line=line, on_disk=on_disk
                )
                _check_relative(
                    found, file, "stderr_log", record.stderr_log, line=line, on_disk=on_disk
                )


def _check_comparison(found: _Found, file: str, doc: ComparisonDoc) -> None:
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


def _outside(paths: list[str], nested: tuple[str, ...]) -> list[str]:
    """The paths not under one of the `nested` directories (whose runs check themselves)."""
    return [p for p in paths if p.split("/", 1)[0] not in nested]


def _check_run_dir(run_dir: Path, layout: Layout = RUN_LAYOUT) -> list[Problem]:
    regular, other = (_outside(paths, layout.nested) for paths in run_files(run_dir))
    if not set(layout.required) & set(regular):
        raise ArtifactError(
            f"`{run_dir}` is not a run directory: none of {', '.join(layout.required)} is in it",
            path=str(run_dir),
            hint="pass a run directory such as `.tile/runs/<run_id>` or one artifact file",
        )
    found = _Found()
    for rel in other:
        found.add(
            rel,
            "not a regular file (link or special file); a run directory holds regular files only",
        )
    for rel in layout.required:
        if rel not in regular:
            found.add(rel, "required file is missing")
    for rel in regular:
        suffix = PurePosixPath(rel).suffix
        if suffix in (".json", ".jsonl"):
            text = _read(found, run_dir / rel, rel)
            if text is not None:
                _check_text(found, rel, text, suffix, layout)
    on_disk = set(regular)
    manifest = found.documents.get(MANIFEST_JSON)
    report = found.documents.get(layout.primary)
    if isinstance(manifest, Manifest):
        _check_manifest(found, manifest, run_dir, regular)
        if manifest.run.status == "incomplete":
            # A kill after a checkpoint may tear the line it was appending: that is what a
            # kill leaves, and readers skip it (the recorded prefix is still checked).
            found.problems = [p for p in found.problems if p.message != _TORN]
    if isinstance(report, Report):
        _check_report(found, report, on_disk)
        final = isinstance(manifest, Manifest) and manifest.run.status != "incomplete"
        _check_metrics_file(found, report, final=final)
    if report is not None and isinstance(manifest, Manifest):
        # After an incomplete checkpoint the final report may be written before a kill
        # stops the final manifest.
        if manifest.run.status not in (report.run.status, "incomplete"):
            found.add(
                MANIFEST_JSON,
                f"run status `{manifest.run.status}` differs from "
                f"{layout.primary}'s `{report.run.status}`",
            )
        if manifest.run.run_id != report.run.run_id:
            found.add(
                MANIFEST_JSON,
                f"run_id `{manifest.run.run_id}` differs from "
                f"{layout.primary}'s `{report.run.run_id}`",
            )
    run_id = (
        report.run.run_id
        if report is not None
        else manifest.run.run_id
        if isinstance(manifest, Manifest)
        else None
    )
    _check_records(found, run_id, on_disk)
    for rel, doc in found.documents.items():
        if isinstance(doc, ComparisonDoc):
            _check_comparison(found, rel, doc)
    return sorted(found.problems, key=lambda p: (p.file, p.line or 0))


def _check_file(path: Path, display: str) -> list[Problem]:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl"):
        raise ArtifactError(
            f"`{display}` is not a tile artifact (expected a run directory, a .json document "
            "or a .jsonl file)",
            path=display,
            hint="pass a run directory such as `.tile/runs/<run_id>` or one of its files",
        )
    found = _Found()
    text = _read(found, path, display)
    if text is None:
        return found.problems
    if suffix == ".jsonl":
        _check_jsonl(found, display, text, _EXPECTED_RECORD.get(path.name))
    else:
        try:
            doc = decode_document(text, expected=_EXPECTED_DOCUMENT.get(path.name), mode="check")
        except DecodeIssue as issue:
            _issue_problems(found, display, issue, None)
        else:
            if isinstance(doc, ComparisonDoc):
                _check_comparison(found, display, doc)
            elif isinstance(doc, Report):
                _check_report(found, doc, on_disk=None)
            elif isinstance(doc, Baseline):
                baseline_problems(doc, lambda message: found.add(display, message))
    _check_records(found, None, None)
    return found.problems


def check_path(path: str | os.PathLike[str]) -> list[Problem]:
    """Validate a run directory, a campaign directory or one artifact file; [] means clean.

    Raises ArtifactError when the path is unusable: missing, or neither a run directory nor a
    `.json`/`.jsonl` file.
    """
    target = Path(path)
    if target.is_dir():
        # Imported here: the campaign check is built on the run-directory check above.
        from tile_artifacts._check_campaign import check_campaign_dir, is_campaign_dir

        return check_campaign_dir(target) if is_campaign_dir(target) else _check_run_dir(target)
    if target.is_file():
        return _check_file(target, str(path))
    if not target.exists():
        raise ArtifactError(
            f"`{path}` does not exist",
            path=str(path),
            hint="pass a run directory such as `.tile/runs/<run_id>` or one of its files",
        )
    raise ArtifactError(
        f"`{path}` is neither a directory nor a regular file",
        path=str(path),
        hint="pass a run directory such as `.tile/runs/<run_id>` or one of its files",
    )
