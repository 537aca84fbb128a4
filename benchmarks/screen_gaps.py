"""How long `tile bench` leaves its screen quiet: the first line, and the longest gap after it.

Runs a default `tile bench` (tile-std, or `--project DIR`) in a pseudo-terminal, as a person
at a terminal sees it, and times every read of what it wrote. Prints the seconds to the first
visible text, the longest gap between two writes, and the longest gap between two changes of
the words on the screen (the live line's ticking clock and the ETA left out, so a step that
takes long counts as a gap however often its clock is redrawn). The targets of issue #38: the
first line within 1 s, no gap over 2 s.

    uv run python benchmarks/screen_gaps.py [--runs 2] [--project DIR] [--timeline]
        [--baseline-python OTHER/.venv/bin/python] [-- TILE BENCH ARGS]

The first run may compile what later runs find in the compile cache; each run is reported.
With `--baseline-python` another checkout's tile is timed in turns with this one, and the
ratios of the medians are printed (on a loaded machine the ratios say more than the seconds).
"""

from __future__ import annotations

import argparse
import itertools
import os
import pty
import re
import select
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?"
)
TICKING = re.compile(r" · (?:\d+(?:\.\d)? s|\d+m \d\ds)| · eta [^·]*")
"""The parts of the live line that change by themselves: the step's clock and the ETA."""


@dataclass
class Screen:
    """Every chunk a command wrote to its terminal, with when it came (seconds from the start)."""

    chunks: list[tuple[float, bytes]]
    wall_s: float
    code: int

    def texts(self) -> list[tuple[float, str]]:
        """Each visible line as it was written: escapes dropped, split at CR and LF."""
        out: list[tuple[float, str]] = []
        for at, chunk in self.chunks:
            plain = ESCAPES.sub(b"", chunk).decode("utf-8", "replace")
            out += [(at, part.strip()) for part in re.split(r"[\r\n]", plain) if part.strip()]
        return out


def run_in_pty(argv: list[str], cwd: Path, *, columns: int = 160) -> Screen:
    """Run `argv` with a pseudo-terminal as stdin, stdout and stderr; collect what it wrote."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                            close_fds=True, start_new_session=True)  # fmt: skip
    os.close(slave)
    chunks: list[tuple[float, bytes]] = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append((time.monotonic() - started, data))
        elif proc.poll() is not None:
            break
    code = proc.wait()
    os.close(master)
    return Screen(chunks, time.monotonic() - started, code)


def timeline(screen: Screen) -> list[tuple[float, str]]:
    """Each change of the words on the screen, with when it came (the clock and ETA left out)."""
    changes: list[tuple[float, str]] = []
    for at, text in screen.texts():
        words = TICKING.sub("", text)
        if not changes or changes[-1][1] != words:
            changes.append((at, words))
    return changes


def gaps(screen: Screen) -> tuple[float | None, float, float, str]:
    """(first visible text, longest gap between writes, longest gap between changes of the
    words, the words that stood longest)."""
    texts = screen.texts()
    if not texts:
        return None, screen.wall_s, screen.wall_s, ""
    first = texts[0][0]
    writes = [at for at, _ in screen.chunks if at >= first] + [screen.wall_s]
    longest_write = max((b - a for a, b in itertools.pairwise(writes)), default=0.0)
    changes = [*timeline(screen), (screen.wall_s, "")]
    longest, stood = 0.0, ""
    for (a, words), (b, _) in itertools.pairwise(changes):
        if b - a > longest:
            longest, stood = b - a, words
    return first, longest_write, longest, stood


@dataclass
class Side:
    """One Python (one checkout's environment) whose `tile bench` is timed, and its figures."""

    name: str
    python: str
    firsts: list[float]
    write_gaps: list[float]
    words_gaps: list[float]

    def time(self, project: Path, args: list[str], run: int, *, show: bool) -> None:
        screen = run_in_pty([self.python, "-m", "tile_cli", "bench", *args], project)
        first, write_gap, words_gap, stood = gaps(screen)
        self.firsts.append(first if first is not None else screen.wall_s)
        self.write_gaps.append(write_gap)
        self.words_gaps.append(words_gap)
        if show:
            for at, words in timeline(screen):
                print(f"      {at:6.2f}  {words[:110]}")
        shown = "-" if first is None else f"{first:.2f}"
        print(f"{self.name:>8} {run:>3}  {screen.code:>4}  {screen.wall_s:6.1f}  {shown:>12}  "
              f"{write_gap:19.2f}  {words_gap:19.2f}  ({stood[:60]})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--project", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--timeline", action="store_true", help="print each change of words")
    parser.add_argument("--baseline-python", help="also time this Python's tile (another "
                        "checkout's .venv/bin/python), in turns, and print the ratios")  # fmt: skip
    parser.add_argument("args", nargs="*", help="more arguments of `tile bench`")
    opts = parser.parse_args()
    sides = [Side("this", sys.executable, [], [], [])]
    if opts.baseline_python:
        sides.append(Side("baseline", opts.baseline_python, [], [], []))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"command: tile bench {' '.join(opts.args)}(in {opts.project}, in a pty); load average "
          f"{load}, {os.cpu_count()} CPUs")  # fmt: skip
    print("    side run  exit  wall s  first line s  longest write gap s  longest words gap s  "
          "(stood)")  # fmt: skip
    for run in range(1, opts.runs + 1):
        for side in sides:
            side.time(opts.project, opts.args, run, show=opts.timeline)
    for side in sides:
        first, gap = max(side.firsts), max(side.write_gaps)
        print(f"{side.name}: worst first line {first:.2f} s ({first / 1.0:.2f}x the 1 s target); "
              f"worst gap between updates {gap:.2f} s ({gap / 2.0:.2f}x the 2 s target); worst "
              f"gap between changes of words {max(side.words_gaps):.2f} s")  # fmt: skip
    if len(sides) == 2:
        this, base = sides
        print(f"this/baseline, medians: first line {_ratio(this.firsts, base.firsts)}, "
              f"longest gap between updates {_ratio(this.write_gaps, base.write_gaps)}")  # fmt: skip
    return 0


def _ratio(mine: list[float], theirs: list[float]) -> str:
    return f"{statistics.median(mine) / statistics.median(theirs):.2f}x"


if __name__ == "__main__":
    raise SystemExit(main())
