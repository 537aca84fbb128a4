"""The processes a runner started, tracked so that none of them outlives it.

Killing the runner's process group ends what its kernels started in that group, but not a
process that started a session of its own (`setsid`, a daemon's double fork): it left the
group, and once its parent exits it no longer even looks related. The runner adopts such
orphans (it is a child subreaper), so at every case end the CLI notes the runner's whole
tree from /proc; when the runner is done every process noted is ended, with its group when
it leads one. A process is known by pid and start time, so a pid reused since is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

__all__ = ["Family", "tree"]

_PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, or None."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        return int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _children(pid: int) -> list[int] | None:
    """Direct children from /proc/PID/task/*/children; None where the kernel lacks it."""
    found: list[int] = []
    try:
        for task in (_PROC / str(pid) / "task").iterdir():
            found.extend(int(c) for c in (task / "children").read_text().split())
    except FileNotFoundError:
        return [] if not (_PROC / str(pid)).exists() else None
    except (OSError, ValueError):
        return None
    return found


def _all_children() -> dict[int, list[int]]:
    """Parent pid to children, from every /proc/PID/stat (the slow way)."""
    table: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and (info := _stat(int(entry.name))) is not None:
            table.setdefault(info[0], []).append(int(entry.name))
    return table


def tree(root: int) -> dict[int, int]:
    """Every live process below `root`, by pid, with its start time."""
    if not _PROC.is_dir():
        return {}
    table: dict[int, list[int]] | None = None
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        kids = _children(pid)
        if kids is None:
            table = table if table is not None else _all_children()
            kids = table.get(pid, [])
        for kid in kids:
            info = _stat(kid)
            if info is not None and kid not in found:
                found[kid] = info[1]
                todo.append(kid)
    return found


class Family:
    """What one runner started, as noted at its case ends; `end` stops all of it."""

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}

    def note(self, runner_pid: int) -> None:
        """Add the runner's current tree (cheap when the kernels started nothing)."""
        self._seen.update(tree(runner_pid))

    def end(self) -> int:
        """SIGKILL every noted process still alive (and its group if it leads one that is
        not ours); the number ended."""
        ours = os.getpgrp()
        ended = 0
        for pid, start in self._seen.items():
            info = _stat(pid)
            if info is None or info[1] != start:
                continue  # gone, or the pid now belongs to someone else
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid and pid != ours:
                    os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                ended += 1
        self._seen.clear()
        return ended
