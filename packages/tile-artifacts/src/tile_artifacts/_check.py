"""The validator behind `tile schema-check`: a run directory, a campaign or one artifact file."""

from __future__ import annotations

import os
from pathlib import Path

from tile_artifacts._check_campaign import check_campaign_dir, is_campaign_dir
from tile_artifacts._check_docs import (
    EXPECTED_DOCUMENT,
    EXPECTED_RECORD,
    Found,
    Problem,
    check_comparison,
    check_jsonl,
    check_records,
    issue_problems,
    keep_document,
    read_bytes,
    utf8_text,
)
from tile_artifacts._check_facts import scan_report
from tile_artifacts._check_run import check_run_dir
from tile_artifacts._consistency import baseline_problems
from tile_artifacts._documents import Baseline, ComparisonDoc
from tile_artifacts._errors import ArtifactError
from tile_artifacts._lines import JsonLines
from tile_artifacts._paths import REPORT_JSON
from tile_artifacts._read import DecodeIssue, decode_document

__all__ = ["Problem", "check_path"]


def _check_file(path: Path, display: str) -> list[Problem]:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl"):
        raise ArtifactError(
            f"`{display}` is not a tile artifact (expected a run directory, a .json document "
            "or a .jsonl file)",
            path=display,
            hint="pass a run directory such as `.tile/runs/<run_id>` or one of its files",
        )
    found = Found()
    if suffix == ".jsonl":
        check_jsonl(found, display, JsonLines(path), EXPECTED_RECORD.get(path.name))
    else:
        _check_document(found, path, display)
    check_records(found, None, None)
    return found.problems


def _check_document(found: Found, path: Path, display: str) -> None:
    """One JSON document on its own: a report a piece at a time where it can be."""
    expected = EXPECTED_DOCUMENT.get(path.name)
    data = read_bytes(found, path, display)
    if data is None:
        return
    if expected in (None, "tile.report") and (scan := scan_report(data)) is not None:
        found.reports[display] = scan
    elif (text := utf8_text(found, display, data)) is not None:
        del data
        try:
            keep_document(found, display, decode_document(text, expected=expected, mode="check"))
        except DecodeIssue as issue:
            issue_problems(found, display, issue, None)
    doc = found.documents.get(display)
    if isinstance(doc, ComparisonDoc):
        check_comparison(found, display, doc)
    elif isinstance(doc, Baseline):
        baseline_problems(doc, lambda message: found.add(display, message))
    if (scan := found.reports.get(display)) is not None:
        for message in scan.problems(None):
            found.add(REPORT_JSON, message)


def check_path(path: str | os.PathLike[str]) -> list[Problem]:
    """Validate a run directory, a campaign directory or one artifact file; [] means clean.

    Raises ArtifactError when the path is unusable: missing, or neither a run directory nor a
    `.json`/`.jsonl` file.
    """
    target = Path(path)
    if target.is_dir():
        return check_campaign_dir(target) if is_campaign_dir(target) else check_run_dir(target)
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
