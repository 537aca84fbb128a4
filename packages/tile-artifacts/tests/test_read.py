"""Readers: the right model per schema_name; clear ArtifactErrors, never a pydantic error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tile_artifacts import (
    ArtifactError,
    ArtifactReadError,
    SchemaVersionError,
    load_document,
    read_jsonl,
    read_manifest,
    read_report,
)
from tile_artifacts.compare import read_baseline, read_comparison


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_future_schema_version_is_rejected_with_a_hint(run_dir: Path) -> None:
    path = run_dir / "report.json"
    _edit(path, schema_version=2)
    with pytest.raises(SchemaVersionError) as info:
        read_report(path)
    assert str(path) in str(info.value) and "schema_version 2" in str(info.value)
    assert info.value.hint is not None and "newer tile" in info.value.hint
    assert isinstance(info.value, ArtifactError) and isinstance(info.value, ValueError)
    with pytest.raises(SchemaVersionError):
        load_document(path)


def test_wrong_schema_name_is_rejected(run_dir: Path) -> None:
    with pytest.raises(SchemaVersionError, match=r"expected `tile\.report`") as info:
        read_report(run_dir / "artifact_manifest.json")
    assert info.value.hint == "pass a `tile.report` document"
    with pytest.raises(SchemaVersionError, match=r"tile\.comparison"):
        read_comparison(run_dir / "report.json")
    with pytest.raises(SchemaVersionError, match=r"tile\.baseline"):
        read_baseline(run_dir / "report.json")


def test_invalid_document_names_file_and_field(run_dir: Path) -> None:
    path = run_dir / "report.json"
    data = json.loads(path.read_text())
    data["cases"][1]["status"] = "ok"
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactReadError) as info:
        read_report(path)
    message = str(info.value)
    assert str(path) in message and "cases[1].status" in message
    assert "ValidationError" not in message and info.value.__cause__ is None
    assert info.value.hint is not None and "tile schema-check" in info.value.hint


def test_truncated_json_names_the_line(run_dir: Path) -> None:
    path = run_dir / "artifact_manifest.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ArtifactReadError, match=r"not valid JSON: .* \(line \d+, column \d+\)"):
        read_manifest(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ArtifactReadError, match="does not exist") as info:
        read_report(tmp_path / "nope.json")
    assert info.value.path == str(tmp_path / "nope.json")
    with pytest.raises(ArtifactReadError, match="is a directory"):
        load_document(tmp_path)


def test_nan_is_not_json(run_dir: Path) -> None:
    path = run_dir / "report.json"
    path.write_text(path.read_text().replace('"seed": 0', '"seed": NaN'))
    with pytest.raises(ArtifactReadError, match="NaN"):
        read_report(path)


def test_read_jsonl_names_the_line(run_dir: Path) -> None:
    path = run_dir / "events.jsonl"
    with path.open("a") as f:
        f.write('{"schema_name": "tile.event", "schema_version": 1}\n')
    with pytest.raises(ArtifactReadError) as info:
        read_jsonl(path)
    assert f"{path}:3" in str(info.value) and info.value.path == str(path)
