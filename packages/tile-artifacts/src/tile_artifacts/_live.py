"""Which run directories are still being written: a lock the writing process holds.

`[output] keep` removes old run directories; a run started a moment earlier by another `tile`
in the same project is "old" by its name but still being written, and removing it cost that
run every result. So the writer holds a shared `flock(2)` on the run directory itself for as
long as it lives, and a remover takes it exclusively, without waiting, before it deletes
anything. The kernel drops the lock when the process ends however it ends (SIGKILL too), so a
crashed run never stays "live". The lock is on the directory, not a file in it, so the run
directory's contents stay exactly the documented ones.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import weakref
from collections.abc import Generator
from pathlib import Path

__all__ = ["hold_live", "unless_live"]


def hold_live(run_dir: Path, *, owner: object) -> bool:
    """Mark `run_dir` as being written for as long as `owner` exists (or the process lives);
    whether it could be marked.

    Best effort: where the filesystem has no `flock` (some network mounts) the run is
    written unmarked; `unless_live` then cannot tell either and leaves it alone.
    """
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    # Closing the descriptor drops the lock: when the owner is collected, or at exit.
    weakref.finalize(owner, _close, fd)
    return True


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


@contextlib.contextmanager
def unless_live(run_dir: Path) -> Generator[bool]:
    """Yield True, holding `run_dir` exclusively, when no process is writing it; else False.

    Inside the block no writer can mark the directory, so removing it there is safe. A
    directory whose lock cannot be asked about at all counts as live: keeping a dead run
    costs disk space, removing a live one costs its results.
    """
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
