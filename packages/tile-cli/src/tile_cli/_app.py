"""The `tile` command line: the command tree. Each command's flags are in a `_cmd_*` module,
its work in the modules that command imports when it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from tile_cli.commands import _read as results
from tile_cli.commands import _run as suite
from tile_cli.commands import _setup as setup
from tile_harness import ExitCode, exit_codes_help

__all__ = ["app"]

app = typer.Typer(
    name="tile",
    help="Benchmark, test and inspect JAX kernels (jax.numpy and Pallas).\n\n" + exit_codes_help(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_versions(value: bool) -> None:
    if value:
        from tile_cli.project._versions import version_lines

        typer.echo("\n".join(version_lines()))
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _tile(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_versions,
            is_eager=True,
            help="Print the version of every tile package, the protocol and Python; exit.",
        ),
    ] = False,
) -> None:
    """Benchmark, test and inspect JAX kernels (jax.numpy and Pallas)."""


def _group(name: str, help_text: str, commands: dict[str, Callable[..., None]]) -> None:
    """A command group (`tile NAME SUB`) with its subcommands, in the order given."""
    group = typer.Typer(help=help_text, no_args_is_help=True)
    for sub, command in commands.items():
        group.command(sub)(command)
    app.add_typer(group, name=name)


_group("protocol", "The runner wire protocol.", {"schema": setup.protocol_schema_cmd})
_group(
    "campaign",
    "Campaigns: saved, budgeted, resumable benchmark plans over kernels, variants and "
    "machines (`campaigns/NAME.toml`, docs/campaigns.md).",
    {
        "list": setup.campaign_list_cmd,
        "plan": setup.campaign_plan_cmd,
        "run": setup.campaign_run_cmd,
    },
)
_group(
    "baseline",
    "Baselines: compact, committable copies of a run.",
    {"save": results.baseline_save_cmd},
)
_group(
    "cache",
    "JAX's persistent compilation cache: where it is, what is in it.",
    {"info": setup.cache_info_cmd, "clear": setup.cache_clear_cmd},
)
_group(
    "history",
    "The run history: every bench run's per-case medians, over commits.",
    {
        "add": results.history_add_cmd,
        "show": results.history_show_cmd,
        "regressions": results.history_regressions_cmd,
    },
)

_COMMANDS: dict[str, Callable[..., None]] = {
    "list": suite.list_cmd,
    "bench": suite.bench_cmd,
    "test": suite.test_cmd,
    "tune": suite.tune_cmd,
    "config": setup.config_cmd,
    "compare": results.compare_cmd,
    "schema-check": results.schema_check_cmd,
    "fetch": setup.fetch_cmd,
    "init": setup.init_cmd,
    "device": setup.device_cmd,
    "build": suite.build_cmd,
    "inspect": suite.inspect_cmd,
    "profile": suite.profile_cmd,
    "snap": suite.snap_cmd,
    "report": results.report_cmd,
}
for _name, _command in _COMMANDS.items():
    app.command(_name)(_command)
