"""Decoding of documents and JSONL records, and the public readers built on it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from tile_artifacts._base import MODE_KEY, SCHEMA_VERSION, ArtifactModel
from tile_artifacts._campaign import CampaignPlan, CampaignReport
from tile_artifacts._case_log import CaseLogRecord
from tile_artifacts._documents import (
    DOCUMENT_MODELS,
    RECORD_MODELS,
    Baseline,
    ComparisonDoc,
    Document,
    JsonlRecord,
    Manifest,
)
from tile_artifacts._errors import ArtifactReadError, SchemaVersionError
from tile_artifacts._lean import lean_report as _lean_report
from tile_artifacts._lines import JsonLines, NotUtf8Error
from tile_artifacts._merge import merge_case_log
from tile_artifacts._models import Report
from tile_artifacts._paths import CASES_JSONL, NotRegularFileError, open_regular
from tile_artifacts._strict_json import DecodeIssue, parse_json

__all__ = [
    "DecodeIssue",
    "complete_lines",
    "decode_document",
    "decode_record",
    "load_document",
    "parse_json",
    "read_baseline",
    "read_campaign",
    "read_campaign_plan",
    "read_case_log",
    "read_comparison",
    "iter_jsonl",
    "read_jsonl",
    "read_manifest",
    "read_report",
]

Mode = Literal["check", "read"]
M = TypeVar("M", bound=ArtifactModel)
_MAX_LISTED_ERRORS = 3


def _model_for(data: Any, expected: str | None, models: Mapping[str, type[M]]) -> type[M]:
    if not isinstance(data, dict):
        raise DecodeIssue(["expected a JSON object"], schema=True)
    header = cast(dict[str, Any], data)
    name = header.get("schema_name")
    version = header.get("schema_version")
    if not isinstance(name, str):
        raise DecodeIssue(["missing or non-string `schema_name`"], schema=True)
    if expected is not None and name != expected:
        raise DecodeIssue([f"schema_name is `{name}`, expected `{expected}`"], schema=True)
    if name not in models:
        known = ", ".join(f"`{n}`" for n in models)
        raise DecodeIssue([f"unknown schema_name `{name}` (known here: {known})"], schema=True)
    if type(version) is not int:
        raise DecodeIssue([f"schema_version must be an integer, got {version!r}"], schema=True)
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        raise DecodeIssue(
            [f"schema_version {version} of `{name}` is not supported (this tile reads 1)"],
            schema=True,
            hint="this file was written by a newer tile; upgrade tile to read it"
            if newer
            else None,
        )
    return models[name]


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _validate(model: type[M], source: str | dict[str, Any], mode: Mode) -> M:
    """`source` as `model`: a JSON text, or the objects `parse_json` built of one (a report's
    models from them take a fraction of the memory pydantic's own JSON path takes; they hold
    no tuple or other type that JSON input alone would allow)."""
    context = {MODE_KEY: mode}
    try:
        if isinstance(source, str):
            return model.model_validate_json(source, context=context)
        return model.model_validate(source, context=context)
    except ValidationError as e:
        messages = [f"{_location(err['loc'])}: {err['msg']}" for err in e.errors()]
        raise DecodeIssue(messages) from None


class _Header(BaseModel):
    """The envelope's two keys, read without building the rest of a document."""

    model_config = ConfigDict(extra="ignore")
    schema_name: JsonValue = None
    schema_version: JsonValue = None


def _read_directly(text: str, expected: str | None) -> Document | None:
    """A document decoded by pydantic alone, or None where the careful path must decide.

    `parse_json` builds the whole document as Python objects only to read its header, and
    scans it for its depth: most of the time `read_report` took on a large report. Its rules
    still hold: a text with `NaN` or `Infinity` anywhere (pydantic would take them as numbers)
    and every document pydantic refuses, nested past its own limit included, go the careful
    way, which says what is wrong in its own words. (A reader takes free-form fields nested
    deeper than MAX_DEPTH but within pydantic's limit; `tile schema-check` refuses them.)"""
    if "NaN" in text or "Infinity" in text:
        return None
    try:
        header = _Header.model_validate_json(text)
        model = _model_for(header.model_dump(), expected, DOCUMENT_MODELS)
        return model.model_validate_json(text, context={MODE_KEY: "read"})
    except (ValidationError, DecodeIssue):
        return None


def decode_document(text: str, *, expected: str | None = None, mode: Mode = "read") -> Document:
    """Decode one JSON document, dispatching on `schema_name`; raise DecodeIssue if invalid."""
    if mode == "read" and (document := _read_directly(text, expected)) is not None:
        return document
    data = parse_json(text, unique_keys=mode == "check")
    model = _model_for(data, expected, DOCUMENT_MODELS)
    if model is Report:
        return _validate(Report, cast(dict[str, Any], data), mode)
    return _validate(model, text, mode)


def decode_record(text: str, *, expected: str | None = None, mode: Mode = "read") -> JsonlRecord:
    """Decode one JSONL line (without its newline); raise DecodeIssue if invalid."""
    model = _model_for(parse_json(text, unique_keys=mode == "check"), expected, RECORD_MODELS)
    return _validate(model, text, mode)


@contextlib.contextmanager
def _reading(path: Path) -> Generator[None]:
    """Turn what reading `path` can raise into one ArtifactReadError naming it."""
    try:
        yield
    except FileNotFoundError:
        raise ArtifactReadError(
            f"`{path}` does not exist",
            path=str(path),
            hint="check the path (a run directory lives under `.tile/runs/<run_id>/`)",
        ) from None
    except IsADirectoryError:
        raise ArtifactReadError(
            f"`{path}` is a directory, expected a file",
            path=str(path),
            hint="pass the JSON file inside it, e.g. `report.json`",
        ) from None
    except NotRegularFileError as e:
        raise ArtifactReadError(
            f"`{path}` {e.strerror}, not a regular file: tile reads documents only from files",
            path=str(path),
            hint="pass the file itself (copy what the pipe or device gives into a file first)",
        ) from None
    except OSError as e:
        raise ArtifactReadError(
            f"cannot read `{path}`: {e.strerror}",
            path=str(path),
            hint="check the file's permissions",
        ) from None
    except (UnicodeDecodeError, NotUtf8Error) as e:
        byte = e.byte if isinstance(e, NotUtf8Error) else e.start
        raise ArtifactReadError(
            f"`{path}` is not UTF-8 text (byte {byte})",
            path=str(path),
            hint="the file is corrupt; restore it or re-run the command that wrote it",
        ) from None


def _read_bytes(path: Path) -> bytes:
    with _reading(path), open_regular(path) as f:
        return f.read()


def _read_text(path: Path) -> str:
    with _reading(path):
        return _read_bytes(path).decode("utf-8")


def _raise_for(path: Path, issue: DecodeIssue, expected: str | None) -> ArtifactReadError:
    listed = "; ".join(issue.messages[:_MAX_LISTED_ERRORS])
    more = len(issue.messages) - _MAX_LISTED_ERRORS
    if more > 0:
        listed += f" (and {more} more)"
    if issue.schema:
        hint = issue.hint or (
            f"pass a `{expected}` document"
            if expected
            else "pass a tile document: report.json, artifact_manifest.json, comparisons.json "
            "or a baseline"
        )
        return SchemaVersionError(f"`{path}`: {listed}", path=str(path), hint=hint)
    return ArtifactReadError(
        f"`{path}` is not a valid artifact: {listed}",
        path=str(path),
        hint=f"run `tile schema-check {path}` to list every problem",
    )


def _read_as(path: str | os.PathLike[str], model: type[M]) -> M:
    file = Path(path)
    expected = cast(str, model.model_fields["schema_name"].default)
    try:
        return cast(M, decode_document(_read_text(file), expected=expected))
    except DecodeIssue as issue:
        raise _raise_for(file, issue, expected) from None


def read_report(path: str | os.PathLike[str], *, metrics: bool = True) -> Report:
    """Read a `report.json` (`tile.report`); of a run still writing or killed (`incomplete`),
    with the cases finished since it was written, from the `cases.jsonl` beside it.

    `metrics=False` may leave `metrics` empty (about three quarters of a large report's
    models, which compare, report and history never read): a reader's memory then grows
    with the cases alone."""
    if not metrics and (lean := _lean_report(Path(path), _read_bytes)) is not None:
        return _with_case_log(lean, Path(path))
    return _with_case_log(_read_as(path, Report), Path(path))


def _with_case_log(report: Report, path: Path) -> Report:
    """An `incomplete` report with the case log beside it laid over it (`merge_case_log`)."""
    if report.run.status != "incomplete":
        return report  # a finished report holds every case: read as written
    log = path.parent / CASES_JSONL
    if not log.is_file():
        return report
    return merge_case_log(report, read_case_log(log))


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read an `artifact_manifest.json` (`tile.artifact_manifest`)."""
    return _read_as(path, Manifest)


def read_comparison(path: str | os.PathLike[str]) -> ComparisonDoc:
    """Read a `comparisons.json` (`tile.comparison`)."""
    return _read_as(path, ComparisonDoc)


def read_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline file (`tile.baseline`)."""
    return _read_as(path, Baseline)


def read_campaign(path: str | os.PathLike[str]) -> CampaignReport:
    """Read a campaign's `campaign.json` (`tile.campaign`)."""
    return _read_as(path, CampaignReport)


def read_campaign_plan(path: str | os.PathLike[str]) -> CampaignPlan:
    """Read a campaign's `plan.json` (`tile.campaign_plan`)."""
    return _read_as(path, CampaignPlan)


def load_document(path: str | os.PathLike[str], *, metrics: bool = True) -> Document:
    """Read any tile JSON document, choosing the model from its `schema_name`; a report's
    `metrics` as `read_report` reads them."""
    file = Path(path)
    if not metrics and (lean := _lean_report(file, _read_bytes)) is not None:
        return _with_case_log(lean, file)
    try:
        document = decode_document(_read_text(file))
    except DecodeIssue as issue:
        raise _raise_for(file, issue, None) from None
    return _with_case_log(document, file) if isinstance(document, Report) else document


def complete_lines(text: str) -> list[str]:
    """The lines of a JSONL text that were written whole: a last line without its newline is
    what a writer killed mid-write left, and is not a record."""
    lines = text.split("\n")
    lines.pop()  # "" after a final newline, else the torn tail
    return lines


def read_jsonl(path: str | os.PathLike[str]) -> list[JsonlRecord]:
    """Read every record of a JSONL artifact (`events.jsonl`, `metrics.jsonl`, ...).

    A torn last line (no newline: the writer was killed while appending it) is skipped.
    """
    return list(iter_jsonl(path))


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[JsonlRecord]:
    """The records of a JSONL artifact one at a time, as `read_jsonl` reads them; only one
    line is in memory at a time, however large the file (a long run's `events.jsonl`)."""
    return _iter_lines(Path(path), None)


def read_case_log(path: str | os.PathLike[str]) -> list[CaseLogRecord]:
    """Read a run's case log (`cases.jsonl`, `tile.case`), a torn last line skipped."""
    return cast(list[CaseLogRecord], list(_iter_lines(Path(path), "tile.case")))


def _iter_lines(file: Path, expected: str | None) -> Iterator[JsonlRecord]:
    with _reading(file):
        for number, line in JsonLines(file):
            try:
                record = decode_record(line, expected=expected)
            except DecodeIssue as issue:
                error = _raise_for(Path(f"{file}:{number}"), issue, expected)
                error.path = str(file)
                raise error from None
            yield record
