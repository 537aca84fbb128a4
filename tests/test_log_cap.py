"""A runner that floods its log is kept to a bound: each case keeps its first lines, the rest
are counted and said once, and events.jsonl stays the size of the bound (issue #39)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_runner import fake_project
from support import TileRun, assert_schema_valid, tile_argv, tile_env

from tile_artifacts import REDACTED
from tile_harness._logcap import PER_CASE


def test_a_flooding_case_keeps_its_first_lines_and_says_how_many_went(
    tile: TileRun, tmp_path: Path
) -> None:
    flood = PER_CASE + 2500
    root = fake_project(
        tmp_path / "p",
        f"""
        hello(); plan()
        start(ALL[0])
        for i in range({flood}):
            send({{"type": "log", "level": "info", "message": f"line {{i}}", "case_id": ALL[0]}})
        bench(ALL[0])
        start(ALL[1], 1)
        send({{"type": "log", "level": "info", "message": "quiet", "case_id": ALL[1]}})
        bench(ALL[1])
        start(ALL[2], 2); bench(ALL[2])
        done()
        """,
    )
    proc = tile("bench", "-o", "run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in (root / "run" / "events.jsonl").read_text().splitlines()]
    logged = [e for e in events if e["event"] == "log"]
    first = [e for e in logged if e["fields"].get("case_id") == "fake/k[i=0]"]
    assert len(first) == PER_CASE and first[-1]["message"] == f"line {PER_CASE - 1}"
    assert [e["message"] for e in logged if e["fields"].get("case_id") == "fake/k[i=1]"] == [
        "quiet"
    ]
    (dropped,) = [e for e in events if e["event"] == "log_dropped"]
    assert dropped["fields"]["dropped"] == 2500 and dropped["fields"]["case_id"] == "fake/k[i=0]"
    assert "2500 log line(s) of case `fake/k[i=0]` dropped" in dropped["message"]
    assert "2500 log line(s) of case `fake/k[i=0]` dropped" in proc.stderr
    assert_schema_valid(root / "run")


def _peak_mb(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, int]:
    """(exit code, peak RSS in MB) of a `tile` process (and the children it waited for)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss // 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB")
def test_a_runner_flooding_its_stderr_with_a_secret_set_costs_the_cli_a_bounded_memory(
    tmp_path: Path,
) -> None:
    """Issue 39 item 6: the CLI reads the runner's stderr to hide the run's secrets in it; its
    memory must not follow the log's size (1.2 GB once took it to 1.25 GB)."""
    secret = "ghp-flooded-secret-0015"
    body = """
    hello(); plan()
    err = sys.stderr.buffer
    block = (b"noise " * 15 + b"\\n") * 2000 + b"token %s at https://bot:pw-0016@host/x\\n"
    for i in range({blocks}):
        err.write(block % os.environ["GITHUB_TOKEN"].encode())
    err.write(b"x" * (8 << 20) + b" no line break in 8 MiB\\n")
    err.flush()
    for i, c in enumerate(ALL):
        start(c, i); bench(c)
    done()
    """
    env = tile_env({"GITHUB_TOKEN": secret})
    quiet = fake_project(tmp_path / "quiet", body.format(blocks=0))
    flood = fake_project(tmp_path / "flood", body.format(blocks=1200))  # ~220 MB
    code, base = _peak_mb(tile_argv("bench", "-o", "run"), quiet, env)
    assert code == 0
    code, peak = _peak_mb(tile_argv("bench", "-o", "run"), flood, env)
    assert code == 0
    log = flood / "run" / "logs" / "runner-1.stderr.log"
    assert log.stat().st_size > 200 << 20
    size = log.stat().st_size >> 20
    assert peak - base < 64, f"a {size} MiB log took the CLI from {base} to {peak} MB"
    with log.open("rb") as fh:
        tail = b""
        while chunk := fh.read(1 << 20):
            assert secret.encode() not in tail + chunk and b"pw-0016" not in tail + chunk
            tail = chunk[-64:]
    with log.open("rb") as fh:
        fh.seek(-(9 << 20), os.SEEK_END)
        assert f"token {REDACTED} at https://{REDACTED}@host/x\n".encode() in fh.read()
