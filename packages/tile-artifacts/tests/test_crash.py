"""Crash safety: a writer killed with SIGKILL at a random moment leaves only whole lines/files."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tile_artifacts import (
    ArtifactWriter,
    EventRecord,
    Producer,
    Report,
    complete_lines,
    read_jsonl,
    read_report,
)
from tile_artifacts.check import check_path

CHILD = r"""
import sys
from tile_artifacts import *

run_dir = sys.argv[1]
producer = Producer(tool_name="tile", tool_version="0.1.0")
writer = ArtifactWriter(run_dir, run_id=new_run_id("bench"), producer=producer)
i = 0
print("ready", flush=True)
while True:
    i += 1
    # Lines of varying size, some spanning several pages.
    writer.event("tick", "x" * (i * 997 % 9000), fields={"i": i})
    writer.metric("time_s", i * 1e-6, case_id=f"k[i={i}]")
    cases = [CaseRecord(case_id=f"k[i={j}]", kernel="k", status="success", samples=[1e-3] * 50)
             for j in range(i % 40)]
    report = Report(producer=producer, run=writer.run_info("partial"),
                    summary=ReportSummary(title="t", status="partial", headline="h"), cases=cases)
    writer.write_json("report.json", report)
    writer.write_text("outputs/progress.txt", f"{i}\n" * (i % 500))
"""


def _run_and_kill(run_dir: Path, threshold: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        events = run_dir / "events.jsonl"
        # Busy-poll the file (no sleeps): kill once the child has written `threshold` bytes.
        while events.stat().st_size < threshold:
            assert child.poll() is None, "writer exited on its own"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL


def _check_readable(run_dir: Path) -> None:
    """What a reader sees after a kill at any moment: whole records, whole documents."""
    for name in ("events.jsonl", "metrics.jsonl"):
        text = (run_dir / name).read_text()
        whole = complete_lines(text)
        for line in whole:
            json.loads(line)
        # The readers' view: every whole line is a valid record, a torn tail is not a record.
        assert len(read_jsonl(run_dir / name)) == len(whole)
    report = run_dir / "report.json"
    if report.exists():  # killed before the first rename is fine; a torn file is not
        assert isinstance(read_report(report), Report)
    progress = run_dir / "outputs/progress.txt"
    if progress.exists():
        lines = progress.read_text().splitlines()
        assert len(set(lines)) <= 1  # one whole version, never a mix or a cut
    leftovers = [p.name for p in run_dir.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    assert all(name.startswith((".report.json.", ".progress.txt.")) for name in leftovers)


@pytest.mark.parametrize("threshold", [1, 4_000, 17_000, 80_000])
def test_sigkill_at_any_moment_leaves_whole_records_and_documents(
    tmp_path: Path, threshold: int
) -> None:
    # Where the kill lands varies from run to run; what is asserted holds wherever it lands.
    run_dir = tmp_path / "run"
    _run_and_kill(run_dir, threshold=threshold)
    _check_readable(run_dir)


# Lets the child write its events up to a byte limit: the kernel then cuts the write that
# crosses it (a partial write) and kills the process with SIGXFSZ on the next one: a torn
# last line made by a real kernel in a real process, at a place fixed in advance.
CUT_CHILD = r"""
import resource, signal, sys
from tile_artifacts import *

signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the kernel's kill, please

run_dir, limit, checkpoint = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "checkpoint"
producer = Producer(tool_name="tile", tool_version="0.1.0")
writer = ArtifactWriter(run_dir, run_id=new_run_id("bench"), producer=producer)
writer.event("small", "x" * 100)
if checkpoint:
    writer.checkpoint(Report(producer=producer, run=writer.run_info("incomplete"),
                             summary=ReportSummary(title="t", status="incomplete", headline="h")),
                      summary="# t\n")
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
writer.event("large", "y" * 20_000)
print("not reached", flush=True)
"""


def test_a_line_cut_mid_write_is_skipped_by_readers_and_cut_by_the_next_writer(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    events = run_dir / "events.jsonl"
    child = subprocess.run(
        [sys.executable, "-c", CUT_CHILD, str(run_dir), "9000", "-"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == -signal.SIGXFSZ, child.stderr
    text = events.read_text()
    assert len(text.encode()) == 9000 and not text.endswith("\n")  # a torn line, as a kill
    (small,) = read_jsonl(events)
    assert isinstance(small, EventRecord) and small.event == "small"
    problems = [str(p) for p in check_path(run_dir) if p.file == "events.jsonl"]
    assert problems == [
        "events.jsonl:2: last line has no newline: the writer was killed mid-line (readers skip it)"
    ]
    # A writer that appends to the file again (a resumed run) first cuts the torn tail.
    writer = ArtifactWriter(
        run_dir,
        run_id=small.run_id,
        producer=Producer(tool_name="tile", tool_version="0.1.0"),
        allow_existing=True,
    )
    writer.event("resumed", "z")
    assert [r.event for r in read_jsonl(events) if isinstance(r, EventRecord)] == [
        "small",
        "resumed",
    ]
    assert events.read_text().endswith("\n") and "yyyy" not in events.read_text()


def test_a_line_cut_after_a_checkpoint_leaves_a_directory_that_validates(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    child = subprocess.run(
        [sys.executable, "-c", CUT_CHILD, str(run_dir), "20000", "checkpoint"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == -signal.SIGXFSZ, child.stderr
    assert not (run_dir / "events.jsonl").read_text().endswith("\n")  # torn after the checkpoint
    assert [
        r.event for r in read_jsonl(run_dir / "events.jsonl") if isinstance(r, EventRecord)
    ] == ["small"]
    # What a kill after a checkpoint leaves validates, the torn tail included.
    assert [str(p) for p in check_path(run_dir)] == []
