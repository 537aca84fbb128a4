"""The screen of a real `tile bench`, in a terminal (a pty) and in a pipe: what comes in what order.

Order, not speed (benchmarks/screen_gaps.py times it): the start-up line comes first, a line
names each case's step before that case's table, and each kernel's table comes as soon as its
cases ended, before the next kernel's cases are begun. In a pipe the same lines come plain.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest
from support import MakeProject, tile_argv, tile_env

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 60\n"
KERNELS = {  # in the plan's order (the module's), each with its cases in order
    "fx/scale": ["fx/scale[n=256,dtype=float32]", "fx/scale[n=1024,dtype=float32]"],
    "fx/wrong": ["fx/wrong[n=256,dtype=float32]"],
    "fx/square": ["fx/square[n=512,dtype=float32]"],
}
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _in_pty(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run `argv` with a 200-column pseudo-terminal as its stdin, stdout and stderr."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in tile_env().items() if k not in ("COLUMNS", "NO_COLOR")}
    proc = subprocess.Popen(argv, cwd=cwd, env={**env, "TERM": "xterm-256color"}, stdin=slave,
                            stdout=slave, stderr=slave, start_new_session=True)  # fmt: skip
    os.close(slave)
    data = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        data += chunk
    code = proc.wait(timeout=60)
    os.close(master)
    return code, data.decode("utf-8", "replace")


def _lines(text: str) -> list[str]:
    """What was written, line by line as it was drawn: escapes dropped, split at CR and LF."""
    plain = ESCAPES.sub("", text)
    return [part.strip(" │╭╰") for part in re.split(r"[\r\n]", plain) if part.strip()]


def _check_order(lines: list[str]) -> None:
    """The start-up line first; each case's sampling named before its kernel's table; each
    table before the next kernel's first sampling (inputs and compiles of a batch of cases are
    made ahead, so those steps of later kernels may come earlier)."""
    assert "starting the runner" in lines[0] or lines[0].startswith("tile bench on"), lines[:3]
    titles = {kernel: lines.index(kernel) for kernel in KERNELS}  # a table starts with its title
    assert list(titles.values()) == sorted(titles.values()), titles  # in the plan's order

    def named(case_id: str) -> int:
        return next(i for i, line in enumerate(lines) if f"sampling {case_id}" in line)

    kernels = list(KERNELS)
    for n, kernel in enumerate(kernels):
        for case_id in KERNELS[kernel]:
            assert named(case_id) < titles[kernel], (case_id, lines)
        if n + 1 < len(kernels):
            first_next = min(map(named, KERNELS[kernels[n + 1]]))
            assert titles[kernel] < first_next, (kernel, lines)


@pytest.mark.slow
def test_a_terminal_sees_each_step_then_each_kernels_table_as_it_ends(
    project: MakeProject,
) -> None:
    root = project(["good.py"], FAST)
    code, text = _in_pty(tile_argv("bench"), root)
    assert code == 1, text[-3000:]  # fx/wrong fails its check
    lines = _lines(text)
    _check_order(lines)
    assert "\x1b[" in text  # a live line, drawn and taken down
    # Each kernel's table once: none printed again at the end.
    assert [line for line in lines if line in KERNELS] == list(KERNELS)
    assert lines[-1].startswith("run directory:")


@pytest.mark.slow
def test_a_pipe_gets_the_same_lines_plain(project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    proc = subprocess.run(tile_argv("bench"), cwd=root, env=tile_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert not re.search(r"[\x1b\r]", proc.stdout), repr(proc.stdout[:2000])
    lines = _lines(proc.stdout)
    _check_order(lines)
    assert lines[0] == "tile bench · starting the runner"
    steps = [line for line in lines if line.startswith("tile bench · ")]
    assert len(steps) == len(set(steps))  # a line per change, none said twice
    # The batch made ready ahead: each case whose compilations are awaited, with a count.
    assert "tile bench · 0/4 done · compiling fx/scale[n=256,dtype=float32] (0 of 4)" in steps
    assert "tile bench · 0/4 done · compiling fx/square[n=512,dtype=float32] (4 of 4)" in steps
