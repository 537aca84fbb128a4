"""The commands that read run directories: compare, baseline save, schema-check, report,
history add / show / regressions. Flags only; the work is in the modules they import."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tile_cli.commands._options import (
    DB,
    FILTERS,
    HISTORY,
    PROFILE,
    Flags,
    compare_flags,
    config_overrides,
    with_flags,
)
from tile_harness import CliError, ExitCode, write_atomically

if TYPE_CHECKING:
    from tile_cli.results._history import HistoryQuery

__all__ = [
    "baseline_save_cmd",
    "compare_cmd",
    "history_add_cmd",
    "history_regressions_cmd",
    "history_show_cmd",
    "report_cmd",
    "schema_check_cmd",
]

_FORMATS = ("table", "markdown", "json")


@with_flags(compare_flags(after_run=False), PROFILE)
def compare_cmd(
    flags: Flags,
    base: Annotated[
        Path, typer.Argument(help="Baseline: run directory, report.json or baseline file.")
    ],
    cur: Annotated[
        Path, typer.Argument(help="Current: run directory, report.json or baseline file.")
    ],
    fmt: Annotated[str, typer.Option("--format", help="table | markdown | json.")] = "table",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Also write the comparison document to this file."),
    ] = None,
) -> None:
    """Compare two runs case by case: ratio of medians, bootstrap CI, Mann-Whitney p.

    Defaults come from `[compare]` in tile.toml (and `TILE_COMPARE_*`); flags win. Nothing is
    written unless `-o` names a file.
    """
    import tile_artifacts as ta
    from tile_cli.terminal._compare import render_comparison
    from tile_cli.terminal._render import say_outcome
    from tile_cli.terminal._ui import make_consoles
    from tile_harness import judge_paths, resolve_config

    if fmt not in _FORMATS:
        raise CliError(f"unknown format `{fmt}`", hint="use --format table, markdown or json")
    cfg = resolve_config(flags.profile, config_overrides(flags)).config.compare
    out, err = make_consoles()
    doc, outcome = judge_paths(base, cur, cfg)
    if output is not None:
        write_atomically(output, doc.model_dump_json(indent=2) + "\n", code=ExitCode.USAGE,
                         hint="pass `-o` a file in a directory that exists and is writable")  # fmt: skip
    if fmt == "markdown":
        from tile_cli.terminal._escape import escape_controls

        print(escape_controls(ta.compare.render_comparison_markdown(doc)))
    elif fmt == "json":
        print(doc.model_dump_json(indent=2))
    else:
        render_comparison(doc, out, plain=not out.is_terminal)
        if output is not None:
            err.print(f"wrote {output}", style="dim", markup=False)
    say_outcome(err, outcome)
    raise typer.Exit(outcome.code)


def baseline_save_cmd(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Run directories or report.json files (default: the latest run). Several runs "
            "of the same code are pooled: compare then judges each case against how far it "
            "moved between them.",
            show_default=False,
        ),
    ] = None,
    directory: Annotated[
        Path, typer.Option("--dir", help="Where baselines live; one file per device.")
    ] = Path("baselines"),
    label: Annotated[str | None, typer.Option("--label", help="A name for this baseline.")] = None,
) -> None:
    """Save a run (or pool several) as `baselines/<device>.json` for `tile bench --compare`.

    Says which run it took (`.tile/latest` is the newest run, `-o DIR` runs included) and
    refuses one without bench samples (a `tile test` or `tile build` run).
    """
    from tile_cli.terminal._ui import make_consoles
    from tile_harness import save_baseline

    _, err = make_consoles()
    target = save_baseline(
        runs or [Path(".tile/latest")],
        directory,
        label,
        say=functools.partial(err.print, markup=False, soft_wrap=True),
    )
    typer.echo(str(target))
    raise typer.Exit(ExitCode.OK)


def schema_check_cmd(
    path: Annotated[Path, typer.Argument(help="A run directory or one artifact file.")] = Path(
        ".tile/latest"
    ),
) -> None:
    """Validate a run directory (or one file) against Artifact Format v1."""
    import tile_artifacts as ta
    from tile_cli.terminal._escape import escape_controls

    try:
        problems = ta.check.check_path(path)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    for problem in problems:
        typer.echo(escape_controls(str(problem)))
    if problems:
        typer.echo(f"{len(problems)} problem(s) in {path}", err=True)
        raise typer.Exit(ExitCode.FAILED)
    typer.echo(f"ok: {path}", err=True)
    raise typer.Exit(ExitCode.OK)


@with_flags(DB, PROFILE)
def report_cmd(
    flags: Flags,
    run: Annotated[Path, typer.Argument(help="A run directory (or its report.json).")] = Path(
        ".tile/latest"
    ),
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the HTML file.")
    ] = Path("report.html"),
    compare: Annotated[
        Path | None,
        typer.Option("--compare", help="Compare with a baseline file or directory, or a run."),
    ] = None,
    history: Annotated[
        bool, typer.Option("--history", help="Add each case's trend over commits, steps marked.")
    ] = False,
) -> None:
    """Write one self-contained HTML report of a run: context, roofline, samples, failures."""
    from tile_cli.results._html_report import make_report

    code = make_report(run, output=output, compare=compare, history=history, db=flags.db,
                       profile=flags.profile)  # fmt: skip
    raise typer.Exit(code)


@with_flags(DB, PROFILE)
def history_add_cmd(
    flags: Flags,
    runs: Annotated[list[Path], typer.Argument(help="Run directories, e.g. `.tile/runs/*`.")],
    branch: Annotated[
        str | None, typer.Option("--branch", help="The branch they ran on, if git cannot tell.")
    ] = None,
) -> None:
    """Add existing run directories to the history (a run already there is left alone)."""
    from tile_cli.results._history import add_runs

    raise typer.Exit(add_runs(runs, db=flags.db, branch=branch, profile=flags.profile))


def _query(flags: Flags, min_change: float | None = None) -> HistoryQuery:
    """Which cases and runs of the history a command looks at."""
    from tile_cli.results._history import HistoryQuery

    query = HistoryQuery(
        flags.filters or [],
        flags.kernels or [],
        flags.device,
        flags.branch,
        flags.last,
        flags.include_dirty,
    )
    return query if min_change is None else dataclasses.replace(query, min_change=min_change)


@with_flags(FILTERS, HISTORY, DB, PROFILE)
def history_show_cmd(
    flags: Flags,
    verbose: Annotated[
        int, typer.Option("-v", "--verbose", count=True, help="A table of commits per case.")
    ] = 0,
) -> None:
    """Each case's trend over commits: sparkline, first and latest median, steps found."""
    from tile_cli.results._history import show_history

    code = show_history(_query(flags), db=flags.db, profile=flags.profile, verbose=verbose)
    raise typer.Exit(code)


@with_flags(FILTERS, HISTORY, DB, PROFILE)
def history_regressions_cmd(
    flags: Flags,
    min_change: Annotated[
        float, typer.Option("--min-change", help="Smallest step reported, in percent.")
    ] = 5.0,
) -> None:
    """Find the commits where a case got slower beyond the noise between runs; exit 1 if any
    such step still stands at the latest commit."""
    from tile_cli.results._history import show_regressions

    if not min_change > 0:
        raise CliError(f"--min-change must be above 0, got {min_change}", hint="e.g. `5` for 5%")
    query = _query(flags, min_change / 100)
    raise typer.Exit(show_regressions(query, db=flags.db, profile=flags.profile))
