"""Crash safety: a writer killed with SIGKILL at a random moment leaves only whole lines/files."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tile_artifacts import Report, read_jsonl, read_report

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


@pytest.mark.parametrize("attempt", range(6))
def test_sigkill_leaves_no_half_line_and_no_torn_json(tmp_path: Path, attempt: int) -> None:
    rng = random.Random(attempt)
    run_dir = tmp_path / "run"
    _run_and_kill(run_dir, threshold=rng.randint(1, 80_000))
    for name in ("events.jsonl", "metrics.jsonl"):
        text = (run_dir / name).read_text()
        assert text == "" or text.endswith("\n"), f"{name} ends in a half line"
        for line in text.splitlines():
            json.loads(line)
        read_jsonl(run_dir / name)  # and every line matches its model
    report = run_dir / "report.json"
    if report.exists():  # killed before the first rename is fine; a torn file is not
        assert isinstance(read_report(report), Report)
    progress = run_dir / "outputs/progress.txt"
    if progress.exists():
        lines = progress.read_text().splitlines()
        assert len(set(lines)) <= 1  # one whole version, never a mix or a cut
    leftovers = [p.name for p in run_dir.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    assert all(name.startswith((".report.json.", ".progress.txt.")) for name in leftovers)
