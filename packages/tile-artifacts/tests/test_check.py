"""Validator: a clean run passes; every kind of corruption is caught and names its file/line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tile_artifacts import ArtifactError
from tile_artifacts.check import Problem, check_path


def _messages(problems: list[Problem], file: str, line: int | None = None) -> list[str]:
    return [p.message for p in problems if p.file == file and (line is None or p.line == line)]


def _edit_json(path: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def _edit_line(path: Path, number: int, edit: Callable[[dict[str, Any]], object]) -> None:
    lines = path.read_text().splitlines(keepends=True)
    data = json.loads(lines[number - 1])
    edit(data)
    lines[number - 1] = json.dumps(data) + "\n"
    path.write_text("".join(lines))


def test_clean_run_directory(run_dir: Path) -> None:
    assert check_path(run_dir) == []
    for name in (
        "report.json",
        "artifact_manifest.json",
        "events.jsonl",
        "commands/commands.jsonl",
    ):
        assert check_path(run_dir / name) == []


def test_problem_rendering() -> None:
    assert str(Problem("events.jsonl", 3, "blank line")) == "events.jsonl:3: blank line"
    assert str(Problem("report.json", None, "bad")) == "report.json: bad"


def test_truncated_json(run_dir: Path) -> None:
    path = run_dir / "report.json"
    path.write_bytes(path.read_bytes()[:-200])
    problems = check_path(run_dir)
    truncated = [p for p in problems if p.file == "report.json" and "not valid JSON" in p.message]
    assert len(truncated) == 1 and truncated[0].line is not None
    assert str(truncated[0]).startswith(f"report.json:{truncated[0].line}: not valid JSON")
    assert any("sha256 differs" in m for m in _messages(problems, "report.json"))


def test_flipped_byte(run_dir: Path) -> None:
    path = run_dir / "logs/runner-1.stderr.log"
    data = bytearray(path.read_bytes())
    data[3] ^= 0x01
    path.write_bytes(bytes(data))
    problems = check_path(run_dir)
    assert problems == [
        Problem(
            "logs/runner-1.stderr.log",
            None,
            "sha256 differs from artifact_manifest.json: the file changed after the run was "
            "finalized",
        )
    ]


def test_deleted_file(run_dir: Path) -> None:
    (run_dir / "outputs/softmax.hlo").unlink()
    assert _messages(check_path(run_dir), "outputs/softmax.hlo") == [
        "listed in artifact_manifest.json but missing"
    ]


def test_deleted_required_file(run_dir: Path) -> None:
    (run_dir / "metrics.jsonl").unlink()
    assert "required file is missing" in _messages(check_path(run_dir), "metrics.jsonl")


def test_unlisted_extra_file(run_dir: Path) -> None:
    (run_dir / "outputs" / "notes.txt").write_text("added later\n")
    assert check_path(run_dir) == [
        Problem("outputs/notes.txt", None, "not listed in artifact_manifest.json")
    ]


def test_invalid_status_in_report(run_dir: Path) -> None:
    _edit_json(run_dir / "report.json", lambda d: d["cases"][1].update(status="ok"))
    messages = _messages(check_path(run_dir), "report.json")
    assert any(m.startswith("cases[1].status: Input should be 'success'") for m in messages)


def test_invalid_status_in_jsonl_names_the_line(run_dir: Path) -> None:
    _edit_line(run_dir / "commands/commands.jsonl", 1, lambda d: d.update(status="crashed"))
    messages = _messages(check_path(run_dir), "commands/commands.jsonl", line=1)
    assert any(m.startswith("status: Input should be 'success'") for m in messages)


def test_schema_version_2(run_dir: Path) -> None:
    _edit_json(run_dir / "report.json", lambda d: d.update(schema_version=2))
    assert "schema_version 2 of `tile.report` is not supported (this tile reads 1)" in _messages(
        check_path(run_dir), "report.json"
    )


def test_schema_version_2_in_a_jsonl_line(run_dir: Path) -> None:
    _edit_line(run_dir / "events.jsonl", 2, lambda d: d.update(schema_version=2))
    problems = check_path(run_dir)
    assert any("schema_version 2" in m for m in _messages(problems, "events.jsonl", line=2))
    assert str(next(p for p in problems if p.line == 2)).startswith("events.jsonl:2: ")


def test_wrong_schema_name(run_dir: Path) -> None:
    _edit_line(run_dir / "metrics.jsonl", 4, lambda d: d.update(schema_name="tile.event"))
    assert "schema_name is `tile.event`, expected `tile.metric`" in _messages(
        check_path(run_dir), "metrics.jsonl", line=4
    )


def test_absolute_path_where_relative_is_claimed(run_dir: Path) -> None:
    manifest = run_dir / "artifact_manifest.json"
    target = str(run_dir / "summary.md")
    _edit_json(
        manifest,
        lambda d: next(a for a in d["artifacts"] if a["path"] == "summary.md").update(path=target),
    )
    messages = _messages(check_path(run_dir), "artifact_manifest.json")
    assert any(
        f"absolute path `{target}` where `artifact_relative` is claimed" in m for m in messages
    )


def test_absolute_log_path_in_a_command_line(run_dir: Path) -> None:
    _edit_line(
        run_dir / "commands/commands.jsonl", 1, lambda d: d.update(stderr_log="/var/log/x.log")
    )
    messages = _messages(check_path(run_dir), "commands/commands.jsonl", line=1)
    assert messages == [
        "stderr_log: absolute path `/var/log/x.log` where `artifact_relative` is claimed"
    ]


def test_success_run_with_failures(make_run: Callable[..., Path]) -> None:
    run_dir = make_run(status="success", with_failure=True)
    problems = check_path(run_dir)
    assert problems == [
        Problem(
            "report.json",
            None,
            "run status is `success` but the run has 1 failure(s); it should be `partial` or "
            "`failed`",
        )
    ]
    assert check_path(make_run(status="partial", with_failure=True)) == []


def test_success_run_with_a_failed_case(
    make_run: Callable[..., Path], case_factory: Callable[..., object]
) -> None:
    cases = [case_factory("k[a=1]", 1e-3), case_factory("k[a=2]", 1e-3, status="failed")]
    problems = check_path(make_run(status="success", cases=cases))
    assert any("1 failed case(s)" in m for m in _messages(problems, "report.json"))


def test_manifest_status_must_equal_report_status(run_dir: Path) -> None:
    _edit_json(run_dir / "artifact_manifest.json", lambda d: d["run"].update(status="failed"))
    assert "run status `failed` differs from report.json's `success`" in _messages(
        check_path(run_dir), "artifact_manifest.json"
    )


def test_half_written_jsonl_line(run_dir: Path) -> None:
    with (run_dir / "events.jsonl").open("a") as f:
        f.write('{"schema_name": "tile.event", "sche')
    messages = _messages(check_path(run_dir), "events.jsonl", line=3)
    # One problem that says what happened, not a JSON error about a line no reader uses.
    assert messages == [
        "last line has no newline: the writer was killed mid-line (readers skip it)"
    ]


def test_missing_key_is_a_problem(run_dir: Path) -> None:
    _edit_json(run_dir / "report.json", lambda d: d["run"].pop("status_reason"))
    assert any(
        "missing key(s) status_reason" in m for m in _messages(check_path(run_dir), "report.json")
    )


def test_single_file_problems_use_the_given_path(run_dir: Path) -> None:
    path = run_dir / "events.jsonl"
    path.write_text(path.read_text() + "\n")
    assert check_path(path) == [Problem(str(path), 3, "blank line")]


def test_unusable_paths_raise(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        check_path(tmp_path / "missing")
    with pytest.raises(ArtifactError, match="not a run directory") as info:
        check_path(tmp_path)
    assert info.value.hint is not None
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ArtifactError, match="not a tile artifact"):
        check_path(tmp_path / "notes.txt")


def test_symlink_in_run_directory(run_dir: Path) -> None:
    (run_dir / "outputs" / "link.hlo").symlink_to(run_dir / "outputs" / "softmax.hlo")
    assert _messages(check_path(run_dir), "outputs/link.hlo") == [
        "not a regular file (link or special file); a run directory holds regular files only"
    ]


def test_single_jsonl_file_is_checked_against_its_name(run_dir: Path) -> None:
    path = run_dir / "commands/commands.jsonl"
    _edit_line(path, 1, lambda d: d.update(schema_name="tile.metric"))
    assert check_path(path) == [
        Problem(str(path), 1, "schema_name is `tile.metric`, expected `tile.command`")
    ]
