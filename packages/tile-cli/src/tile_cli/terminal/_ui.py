"""What the user sees: what a run is doing on stderr (live), result tables on stdout."""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

import tile_protocol as tp
from tile_cli.terminal._escape import escape_controls, install_escaping
from tile_cli.terminal._screen import STEP_WORDS, Status
from tile_protocol.format import format_config, format_seconds

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
    """The screen while a suite runs, on stderr: what it is doing now, and one-line notices.

    In a terminal, one live line redrawn at each change and four times a second (the step's
    clock), taken down at the end; in a pipe, a plain line for each change of what is being
    done (no control codes, no clock). `kernel_tables`, when set, shows a kernel's results as
    soon as all its cases ended (`kernel_done`); the live line steps aside while it prints.
    """

    def __init__(
        self, err: Console, *, verbose: int = 0, quiet: bool = False, label: str = "tile"
    ) -> None:
        self.err = err
        self.verbose = verbose
        self.quiet = quiet
        self.kernel_tables: Callable[[str], None] | None = None
        self._status = Status(label=label)
        self._live: Live | None = None
        self._stopped = False
        self._said: str | None = None  # a pipe's last line, not said twice
        self._steps = False  # the runner says each case's steps (protocol 1.15)
        self._configs: dict[str, str] = {}  # case id -> its configuration (protocol 1.20)
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- what happens

    def begin(self) -> None:
        """Show that the command started, before anything else is known."""
        self._change(doing="starting the runner", case=None)

    def starting(self, restart: bool) -> None:
        # Another runner: the cases left after a crash, a shard, a tune rung, the warm pass.
        doing = "starting another runner" if restart else "starting the runner"
        self._change(doing=doing, case=None, count=None)

    def start(self, total: int, label: str) -> None:
        if total:  # no case: the usage error says why
            self._change(label=label, total=total, doing=f"{total} cases planned", case=None)

    def case(self, label: str) -> None:
        first = self._status.first_case
        # A runner that says its steps says the first at once: a pipe needs no line for this.
        self._change(doing="running", case=label, count=None, config=self._configs.get(label),
                     say=not self._steps,
                     first_case=time.monotonic() if first is None else first)  # fmt: skip

    def step(self, progress: tp.Progress) -> None:
        self._steps = True
        case_id = progress.case_id
        config = progress.config  # said on the case's first step, kept for the others
        if config is not None and config.source != "tune":  # a tune unit's id names its values
            self._configs[case_id] = format_config(config)
        count = None if progress.total is None else f"{progress.done} of {progress.total}"
        self._change(doing=STEP_WORDS[progress.step], case=case_id, count=count,
                     config=self._configs.get(case_id))  # fmt: skip

    def advance(self) -> None:
        with self._lock:
            self._status = dataclasses.replace(self._status, done=self._status.done + 1)

    def kernel_done(self, kernel: str) -> None:
        with self._lock:
            if self.kernel_tables is None or self._stopped:
                return  # the end of the run shows what is left
            live = self._live
            if live is not None:
                live.stop()  # transient: the line is taken down while the tables print
            try:
                self.kernel_tables(kernel)
            finally:
                if live is not None:
                    live.start()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._live is not None:
                self._live.stop()
                self._live = None

    def line(self, text: str) -> None:
        """A dim line of context on stderr (where a bench runs, how it samples); none with
        `--json`."""
        if not self.quiet:
            self.err.print(text, markup=False, style="dim")

    def notice(self, text: str, style: str = "yellow") -> None:
        """A line above the live line; in a pipe none: the end-of-run summary says it."""
        live = self._live
        if live is not None:
            live.console.print(Text(text, style=style))

    # ---------------------------------------------------------------- how it shows

    def __rich__(self) -> Text:
        """The live line, as the refresh thread draws it (no lock: `_status` is one value)."""
        line = self._status.line(time.monotonic(), ticking=True)
        # The live line is drawn past the consoles' escaping hook: escape the case id here.
        return Text(escape_controls(line), no_wrap=True, overflow="ellipsis")

    def _change(self, *, say: bool = True, **changes: Any) -> None:
        if self.quiet:
            return
        with self._lock:
            if self._stopped:
                return
            status = dataclasses.replace(self._status, since=time.monotonic(), **changes)
            self._status = status
            if self.err.is_terminal:
                self._draw()
                return
            said = status.line(time.monotonic(), ticking=False)
            if say and said != self._said:
                self._said = said
                self.err.print(said, markup=False, soft_wrap=True)

    def _draw(self) -> None:
        if self._live is None:
            # stdout stays stdout (results); stray stderr prints go above the line.
            self._live = Live(self, console=self.err, transient=True, refresh_per_second=4,
                              redirect_stdout=False)  # fmt: skip
            self._live.start()
        else:
            self._live.refresh()


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
