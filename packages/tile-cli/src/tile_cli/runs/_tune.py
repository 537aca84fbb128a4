"""`tile tune`: the plan and its estimate, then `tile_harness.tune.Tuner` with live progress,
then each case's winner and where it was written."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tile_cli.terminal._escape import escape_controls, hide_config_secrets
from tile_harness import (
    CliError,
    ExitCode,
    Selection,
    resolve_config,
    undone_lines,
    with_cases,
)
from tile_harness.tune import (
    TuneEnded,
    Tuner,
    allowed_counts,
    budget_scale,
    estimate_s,
    impl_lines,
    margin_text,
)
from tile_protocol.format import format_seconds

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = ["run_tune"]


def run_tune(
    sel: Selection,
    *,
    profile: str | None,
    output_dir: Path | None,
    budget: float | None,
    dry_run: bool,
    verbose: int,
) -> int:
    """Tune every selected case; exit 0 when each got a winner, else the usual codes."""
    from tile_cli.terminal._ui import Ui, make_consoles
    from tile_harness import ask

    _, err = make_consoles()
    resolved = resolve_config(profile, sel.overrides)
    hide_config_secrets(resolved)
    sel = with_cases(resolved, sel, functools.partial(err.print, markup=False))
    verbose = verbose or resolved.config.output.verbose
    budget = budget if budget is not None else resolved.config.tune.budget
    answer, clean = ask("list", resolved, sel, units=True)
    plan = answer.cases
    if answer.unusable(functools.partial(err.print, markup=False), clean=clean):
        return int(ExitCode.INFRA)
    allowed = allowed_counts(plan)
    if not allowed:
        raise CliError(
            "no selected case has a kernel with tunables",
            hint="declare `tunables=tile.axes(...)` on the kernel, or widen `-k`/`--kernel`",
            code=ExitCode.USAGE,
        )
    scale = budget_scale(resolved, list(allowed.values()), budget)
    ruled_out = sum(1 for c in plan if c.skip is not None)
    held = f" with {','.join(sel.tunables)} held" if sel.tunables else ""
    line = (
        f"tile tune: {len(allowed)} cases, {sum(allowed.values())} configurations{held} "
        f"({ruled_out} ruled out by constraints); estimated "
        f"{estimate_s(resolved, list(allowed.values()), scale):.0f} s"
    )
    if dry_run:
        print(line)
        for case_id, n in allowed.items():
            print(escape_controls(f"  {case_id}: {n} configurations"))
        return int(ExitCode.OK)
    err.print(line, markup=False)
    ui = Ui(err, verbose=verbose, label="tile tune")
    # soft_wrap: a long case id stays on one line, whole, whatever the terminal's width.
    say = functools.partial(err.print, markup=False, soft_wrap=True)
    try:
        ended = Tuner(resolved, ui, say, output_dir=output_dir).run(sel, scale=scale, budget=budget)
    finally:
        ui.stop()
    _show(ended, resolved)
    return ended.exit_code


def _tried_tables(ended: TuneEnded) -> None:
    """One table per case of every configuration tried (the winner marked `★`), on stdout."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tile_cli.terminal._ui import make_consoles

    out, _ = make_consoles()
    tables: dict[str, Table] = {}
    heads = ("", "configuration", "median", "CI", "runs", "check", "outcome")
    for row in ended.tried:
        table = tables.get(row.case_id)
        if table is None:
            table = tables[row.case_id] = Table(
                title=Text(row.case_id), title_justify="left", header_style="bold",
                box=box.ROUNDED if out.is_terminal else box.SIMPLE)  # fmt: skip
            for i, head in enumerate(heads):
                table.add_column(head, justify="right" if i in (2, 4) else "left")
        cells = (row.configuration, row.median, row.ci, str(row.runs), row.check, row.outcome)
        table.add_row("★" if row.winner else "", *(Text(c) for c in cells),
                      style="bold" if row.winner else None)  # fmt: skip
    for table in tables.values():
        out.print(table)


def _show(ended: TuneEnded, resolved: ResolvedConfig) -> None:
    """Every configuration tried and each case's winner on stdout; the tuning files, the run
    directory, work undone on stderr."""
    from tile_cli.terminal._render import display_path, outside_project_note

    _tried_tables(ended)
    for case_id, d in ended.decisions.items():
        print(escape_controls(f"{case_id}: {d.winner.configuration} "
              f"{format_seconds(d.winner.median)} ({d.decided_by}{margin_text(d)})"))  # fmt: skip
    for line in impl_lines(ended.impls):
        print(escape_controls(line))
    for case_id, why in ended.unfinished.items():
        print(escape_controls(f"not tuned to the end: {case_id}: {why}"), file=sys.stderr)
    for path in ended.written:
        print(f"tuning file: {display_path(path)}", file=sys.stderr)
    print(f"run directory: {display_path(ended.run_dir)}", file=sys.stderr)
    if (note := outside_project_note(resolved, "runs, history and tuning")) is not None:
        print(note, file=sys.stderr)
    for line in undone_lines(ended.planned, ended.failures):
        print(line, file=sys.stderr)
