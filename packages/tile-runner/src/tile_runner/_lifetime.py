"""Tie the runner's life, and that of every process its kernels start, to the CLI's.

A runner must never outlive the CLI that started it, and neither may what its kernels start:
a subprocess stays in the runner's process group, which the CLI ends, but one that starts a
session of its own (`setsid`, a daemon) leaves the group, and when its parent exits it is
handed to init and forgotten. So the runner is a child subreaper (orphans below it are handed
to it instead), it ends every descendant it has when it exits or is told to stop, and it
learns of the CLI's death (even by SIGKILL) through a SIGTERM that Linux sends it then.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path
from types import FrameType

__all__ = ["Interrupted", "descendants", "die_with_parent", "end_descendants", "take_signals"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class Interrupted(BaseException):
    """A Ctrl-C sent to the runner. Not a KeyboardInterrupt: that one, raised by a kernel's
    own code, is the kernel's failure and the runner goes on; this one stops the runner."""


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """Have Linux send SIGTERM when the parent (the CLI) dies, even by SIGKILL, and adopt
    orphaned descendants. No-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if not _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM)):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def take_signals() -> None:
    """SIGTERM ends the runner and all it started at once; SIGINT raises `Interrupted`."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _on_sigint)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    end_descendants()
    # Die by the signal itself, as without this handler: whoever waits for the runner sees
    # "killed by SIGTERM", not an exit code that only looks like it.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # only if the signal did not end the process


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    raise Interrupted


def descendants(root: int) -> list[int]:
    """Every live process below `root`, from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_descendants() -> None:
    """SIGKILL every process this runner started, directly or not, and their own groups."""
    me = os.getpid()
    own_group = os.getpgrp()
    for pid in descendants(me):
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group == pid and group != own_group:
                os.killpg(group, signal.SIGKILL)  # a session leader's helpers go with it
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
