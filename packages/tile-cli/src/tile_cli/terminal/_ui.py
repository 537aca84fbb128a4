"""What the user sees: live progress on stderr, result tables on stdout."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

import tile_protocol as tp
from tile_cli.terminal._escape import escape_controls, install_escaping
from tile_protocol.format import format_seconds

__all__ = ["Ui", "diagnostic_lines", "make_consoles", "timing_line"]


def make_consoles() -> tuple[Console, Console]:
    """(stdout for data, stderr for diagnostics); NO_COLOR and non-TTYs give plain text."""
    no_color = bool(os.environ.get("NO_COLOR"))
    # Piped output is read by scripts and logs: never wrap it at 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240
    out = Console(file=sys.stdout, no_color=no_color, highlight=False, width=width)
    err_width = None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 240
    err = Console(file=sys.stderr, no_color=no_color, highlight=False, width=err_width)
    install_escaping((out, err))
    return out, err


class Ui:
    """Progress bar while a suite runs (only on a terminal), and one-line notices."""

    def __init__(self, err: Console, *, verbose: int = 0, quiet: bool = False) -> None:
        self.err = err
        self.verbose = verbose
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def start(self, total: int, label: str) -> None:
        if self.quiet or not self.err.is_terminal:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[case]}"),
            console=self.err,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(label, total=total, case="")

    def case(self, label: str) -> None:
        if self._progress is not None and self._task is not None:
            # The live bar is drawn past the consoles' escaping hook: escape the id here.
            self._progress.update(self._task, case=escape_controls(label))

    def advance(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def line(self, text: str) -> None:
        """A dim line of context on stderr (where a bench runs, how it samples); none with
        `--json`."""
        if not self.quiet:
            self.err.print(text, markup=False, style="dim")

    def notice(self, text: str, style: str = "yellow") -> None:
        """A line above the progress bar; without one, the end-of-run summary says it."""
        if self._progress is not None:
            self._progress.console.print(Text(text, style=style))


def timing_line(timing: Any) -> str:
    """One line: the run's wall time against starting, compiling and sampling (`-v`)."""
    ratio = timing.overhead_ratio
    return (
        f"wall {format_seconds(timing.wall_s)}: runner start {format_seconds(timing.runner_start_s)}, "
        f"compile {format_seconds(timing.compile_s)}, sampled {format_seconds(timing.sampled_s)}; "
        f"overhead ratio {'-' if ratio is None else f'{ratio:.2f}'} "
        "(wall / (start + compile + sampled))"
    )


def diagnostic_lines(logs: Sequence[tp.Log], *, limit: int = 20) -> list[str]:
    """The runners' warnings and errors for the end of a run: each distinct line once with
    its count, at most `limit` of them (a runner that warns 200,000 times must not bury the
    results, nor take a minute to print)."""
    counts: dict[tuple[str, str], int] = {}
    for log in logs:
        key = (log.level, log.message)
        counts[key] = counts.get(key, 0) + 1
    lines = [
        f"{level}: {message}" + (f" (×{count})" if count > 1 else "")
        for (level, message), count in list(counts.items())[:limit]
    ]
    hidden = sum(list(counts.values())[limit:])
    if hidden:
        lines.append(f"… and {hidden} more warning(s) or error(s): see events.jsonl")
    return lines
