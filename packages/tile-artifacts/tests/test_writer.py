"""Writer, run ids, producer info from real git, environment redaction, input fingerprints."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tile_artifacts import (
    MANIFEST_JSON,
    RUN_ID_PATTERN,
    ArtifactError,
    ArtifactWriteError,
    ArtifactWriter,
    Context,
    EventRecord,
    MetricRecord,
    Producer,
    fingerprint_input,
    new_run_id,
    producer_info,
    read_jsonl,
    read_manifest,
    redact_environment,
)

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")


def _writer(run_dir: Path, **kwargs: Any) -> ArtifactWriter:
    return ArtifactWriter(run_dir, run_id=new_run_id("bench"), producer=PRODUCER, **kwargs)


def test_run_id_format() -> None:
    now = datetime(2025, 1, 31, 13, 4, 5, tzinfo=timezone(timedelta(hours=1)))
    run_id = new_run_id("schema-check", now)
    assert re.fullmatch(r"schema-check-20250131T120405Z-[0-9a-f]{8}", run_id)
    assert re.fullmatch(RUN_ID_PATTERN, run_id)
    assert new_run_id("bench") != new_run_id("bench")
    with pytest.raises(ArtifactError, match="command name"):
        new_run_id("Bench Run")
    with pytest.raises(ArtifactError, match="timezone-aware"):
        new_run_id("bench", datetime(2025, 1, 31))


def test_redaction_by_name_pattern() -> None:
    env = {
        "HF_TOKEN": "t", "aws_secret_access_key": "s", "DB_PASSWORD": "p", "MYSQL_PASSWD": "p",
        "GH_AUTH": "a", "SSH_PRIVATE": "k", "COOKIE_JAR": "c", "X_SESSION_ID": "s",
        "GOOGLE_APPLICATION_CREDENTIALS": "/c.json", "CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin",
        "XLA_FLAGS": "--xla_dump_to=/tmp",
    }  # fmt: skip
    redacted, keys = redact_environment(env)
    assert keys == sorted(set(env) - {"CUDA_VISIBLE_DEVICES", "PATH", "XLA_FLAGS"})
    assert {k: v for k, v in redacted.items() if v != "<redacted>"} == {
        "CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin", "XLA_FLAGS": "--xla_dump_to=/tmp",
    }  # fmt: skip
    assert env["HF_TOKEN"] == "t"  # the input is not modified


def test_command_record_is_redacted_and_shell_free(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "run")
    record = writer.command(
        "C001", ["python", "-c", "print('a b')"], cwd=tmp_path, status="failed",
        environment_overrides={"API_KEY": "sekrit", "JAX_PLATFORMS": "cpu"}, return_code=-9,
        signal="SIGKILL",
    )  # fmt: skip
    line = (tmp_path / "run/commands/commands.jsonl").read_text()
    assert "sekrit" not in line and record.redacted_environment_keys == ["API_KEY"]
    assert record.display == "python -c 'print('\"'\"'a b'\"'\"')'"
    assert json.loads(line)["args"] == ["python", "-c", "print('a b')"]


def test_directory_errors_are_clear(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ArtifactWriteError, match="a file is in the way") as info:
        _writer(tmp_path / "file")
    assert info.value.hint is not None and "--output-dir" in info.value.hint
    with pytest.raises(ArtifactWriteError, match="parent is a file"):
        _writer(tmp_path / "file" / "run")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "report.json").write_text("{}")
    with pytest.raises(ArtifactWriteError, match="not empty"):
        _writer(tmp_path / "old")
    _writer(tmp_path / "old", allow_existing=True)  # explicitly allowed


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_directory_on_a_filesystem_that_refuses_it() -> None:
    with pytest.raises(ArtifactWriteError, match="cannot create run directory `/proc/"):
        _writer(Path("/proc/tile-artifacts-test/run"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ArtifactWriteError, match="Permission denied"):
        _writer(locked / "run")


def test_paths_must_stay_inside_the_run(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "run")
    for bad in ("../escape.json", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(ArtifactWriteError):
            writer.write_text(bad, "x")
    assert not (tmp_path / "escape.json").exists()


def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "run")
    for i in range(3):
        writer.write_json("outputs/state.json", Context(seed=i))
    assert json.loads((tmp_path / "run/outputs/state.json").read_text())["seed"] == 2
    assert sorted(p.name for p in (tmp_path / "run/outputs").iterdir()) == ["state.json"]
    assert oct((tmp_path / "run/outputs/state.json").stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("umask", [0o027, 0o002])
def test_run_files_get_the_mode_the_umask_asks_for(umask: int, tmp_path: Path) -> None:
    # Whole files (renamed into place) and appended lines alike: what `open()` would give.
    before = os.umask(umask)
    try:
        writer = _writer(tmp_path / "run")
        writer.write_json("outputs/state.json", Context(seed=1))
        writer.event("case_started", "k", phase="bench")
    finally:
        os.umask(before)
    for name in ("outputs/state.json", "events.jsonl"):
        assert oct((tmp_path / "run" / name).stat().st_mode & 0o777) == oct(0o666 & ~umask)


def test_events_metrics_and_finalize(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "run")
    writer.event("case_started", "softmax", phase="bench", fields={"i": 1, "nested": {"a": [1, 2]}})
    writer.metric("time_s", 1e-3, case_id="k[x=1]", timer="cupti")
    writer.metric("my_counter", 3, unit="count")
    with pytest.raises(ArtifactError, match="no unit"):
        writer.metric("my_thing", 1.0)
    log = writer.log_path("logs/runner-1.stderr.log", description="runner 1")
    log.write_text("boom\n")
    manifest = writer.finalize(status="partial", status_reason="one case failed")
    listed = {a.path: a for a in manifest.artifacts}
    assert set(listed) == {"events.jsonl", "metrics.jsonl", "logs/runner-1.stderr.log"}
    assert MANIFEST_JSON not in listed
    assert listed["logs/runner-1.stderr.log"].description == "runner 1"
    assert listed["logs/runner-1.stderr.log"].sha256 == hashlib.sha256(b"boom\n").hexdigest()
    assert (
        listed["metrics.jsonl"].kind == "metrics"
        and listed["events.jsonl"].media_type == "application/x-ndjson"
    )
    assert read_manifest(tmp_path / "run" / MANIFEST_JSON) == manifest
    metric = read_jsonl(tmp_path / "run/metrics.jsonl")[0]
    assert isinstance(metric, MetricRecord)
    assert (metric.unit, metric.aggregation, metric.higher_is_better) == ("s", "median", False)
    event = read_jsonl(tmp_path / "run/events.jsonl")[0]
    assert isinstance(event, EventRecord) and event.fields == {"i": 1, "nested": {"a": [1, 2]}}
    with pytest.raises(ArtifactWriteError, match="finalized"):
        writer.event("late", "too late")


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
        capture_output=True, timeout=30,
    ).stdout  # fmt: skip


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_producer_info_from_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    assert producer_info("tile", "0.1.0", repo).git_head is None  # no commit yet
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "first")
    head = _git(repo, "rev-parse", "HEAD").decode().strip()
    clean = producer_info("tile", "0.1.0", repo)
    assert (clean.git_head, clean.dirty, clean.dirty_diff_sha256) == (head, False, None)
    (repo / "a.txt").write_text("two\n")
    dirty = producer_info("tile", "0.1.0", repo)
    expected = hashlib.sha256(_git(repo, "diff", "HEAD", "--no-color", "--no-ext-diff")).hexdigest()
    assert (dirty.git_head, dirty.dirty, dirty.dirty_diff_sha256) == (head, True, expected)


def test_producer_info_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = producer_info("tile", "0.1.0", tmp_path)
    assert (outside.git_head, outside.dirty, outside.dirty_diff_sha256) == (None, None, None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git binary anywhere on PATH
    assert producer_info("tile", "0.1.0", tmp_path).git_head is None


def test_fingerprint_input(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"\x00" * 10)
    full = fingerprint_input(path, "data")
    assert (full.size_bytes, full.sha256) == (10, hashlib.sha256(b"\x00" * 10).hexdigest())
    assert full.path_type == "absolute_input" and Path(full.path).is_absolute()
    meta = fingerprint_input(path, "data", policy="metadata_only")
    assert (meta.size_bytes, meta.sha256, meta.fingerprint_policy) == (10, None, "metadata_only")
    gone = fingerprint_input(tmp_path / "gone", "data")
    assert (gone.fingerprint_policy, gone.size_bytes) == ("missing", None)


def test_an_append_the_disk_cuts_short_leaves_whole_lines(tmp_path: Path) -> None:
    """A file size limit (RLIMIT_FSIZE) fails a write part way, as a full disk does: the
    part that was written is cut off again, so the file keeps whole lines only."""
    import resource
    import signal

    writer = _writer(tmp_path / "run")
    writer.event("first", "fits")
    events = tmp_path / "run" / "events.jsonl"
    before = events.read_bytes()
    lines = [json.dumps({"n": i, "pad": "x" * 100}) for i in range(100)]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 4096, hard))
        with pytest.raises(ArtifactError, match="File too large"):
            writer.append_lines("events.jsonl", lines)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert events.read_bytes() == before
    writer.event("after", "the limit is gone")
    assert [json.loads(line)["event"] for line in events.read_text().splitlines()] == [
        "first",
        "after",
    ]
