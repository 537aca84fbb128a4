"""`[output] keep` against runs of other processes: a run still being written is never pruned,
however old its name, and a run whose process died (SIGKILL included) is pruned as usual. The
live runs are real `ArtifactWriter`s held open by real child processes."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import tile_artifacts as ta
from tile_harness._keep import prune_runs

# A child that opens a run directory as `tile bench` does, says so, and keeps it open until
# its stdin closes (or it is killed).
_WRITER = """
import sys
from pathlib import Path
import tile_artifacts as ta
run = Path(sys.argv[1])
writer = ta.ArtifactWriter(run, run_id=run.name, producer=ta.producer_info("tile", "0", run))
print("open", flush=True)
sys.stdin.read()
"""


@contextmanager
def _writing(run_dir: Path) -> Generator[subprocess.Popen[str]]:
    """A child process writing `run_dir`, open until the block ends."""
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(run_dir)], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline() == "open\n"
        yield child
    finally:
        child.stdin.close()
        child.stdout.close()
        child.wait()


def _run(runs: Path, second: int) -> Path:
    """The run directory of a `tile bench` started at 00:00:0`second` on 1 January 2000."""
    return runs / f"bench-20000101T00000{second}Z-0000000{second}"


def test_a_run_another_process_is_writing_is_not_pruned(tmp_path: Path) -> None:
    old, current = _run(tmp_path, 1), _run(tmp_path, 3)
    with _writing(old):
        ta.ArtifactWriter(
            current, run_id=current.name, producer=ta.producer_info("t", "0", current)
        )
        assert prune_runs(tmp_path, 1, current) == []
        assert (old / ta.EVENTS_JSONL).is_file()
    # Its writer gone, the same directory is an old run like any other.
    assert prune_runs(tmp_path, 1, current) == [old]
    assert not old.exists() and current.is_dir()


def test_a_killed_run_is_not_live_forever(tmp_path: Path) -> None:
    old, current = _run(tmp_path, 1), _run(tmp_path, 3)
    with _writing(old) as child:
        child.send_signal(signal.SIGKILL)
        child.wait()
        current.mkdir()
        (current / ta.EVENTS_JSONL).write_text("")
        assert prune_runs(tmp_path, 1, current) == [old]
