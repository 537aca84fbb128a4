"""The commands around the runs: init, config, protocol schema, fetch, device, cache info /
clear, campaign list / plan / run. Flags only; the work is in the modules they import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tile_cli.commands._options import (
    ASSIGNMENTS,
    JSON,
    PROFILE,
    Flags,
    config_overrides,
    with_flags,
)
from tile_harness import ExitCode

__all__ = [
    "cache_clear_cmd",
    "cache_info_cmd",
    "campaign_list_cmd",
    "campaign_plan_cmd",
    "campaign_run_cmd",
    "config_cmd",
    "device_cmd",
    "fetch_cmd",
    "init_cmd",
    "protocol_schema_cmd",
]

CampaignName = Annotated[
    str,
    typer.Argument(help="A campaign: `campaigns/NAME.toml` or `[campaigns.NAME]` in tile.toml."),
]
Smoke = Annotated[
    bool,
    typer.Option(
        "--smoke", help="One case per kernel, minimal sampling (`[smoke]`): check the whole plan."
    ),
]
OverBudget = Annotated[
    bool, typer.Option("--over-budget", help="Go on although the plan is over `[budget]`.")
]


@with_flags(ASSIGNMENTS, PROFILE, JSON)
def config_cmd(flags: Flags) -> None:
    """Show the resolved configuration and where every value comes from."""
    from tile_cli.project._show_config import show_config

    overrides = config_overrides(flags)
    raise typer.Exit(show_config(profile=flags.profile, as_json=flags.json, overrides=overrides))


def protocol_schema_cmd() -> None:
    """Print the JSON Schema of every protocol message."""
    import json

    import tile_protocol

    typer.echo(json.dumps(tile_protocol.json_schema(), indent=2, sort_keys=True))
    raise typer.Exit(ExitCode.OK)


@with_flags(PROFILE)
def fetch_cmd(
    flags: Flags,
    names: Annotated[
        list[str] | None, typer.Argument(help="Entries of [downloads] to fetch (default: all).")
    ] = None,
    list_only: Annotated[
        bool, typer.Option("--list", help="Show every entry, its size and whether it is cached.")
    ] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use only the cache; fail on anything missing.")
    ] = False,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline", help="Seconds one file's whole download may take (default 3600)."
        ),
    ] = 3600.0,
) -> None:
    """Download the pinned data files of `[downloads.<name>]`, verified by sha256."""
    from tile_cli.project._fetch import fetch

    code = fetch(names or [], list_only=list_only, offline=offline, profile=flags.profile,
                 deadline=deadline)  # fmt: skip
    raise typer.Exit(code)


def init_cmd(
    path: Annotated[
        Path,
        typer.Argument(
            help="The project's directory, relative or absolute (`my-kernels`, `../x`); "
            "created with its parents. Its last part names the project.",
            show_default=False,
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the files tile writes if they exist.")
    ] = False,
    from_index: Annotated[
        bool,
        typer.Option(
            "--from-index",
            help="Resolve tile from the package index, not from the checkout or wheels this "
            "tile was installed from.",
        ),
    ] = False,
) -> None:
    """Start a kernel project: pyproject, tile.toml, one Pallas kernel with its reference."""
    from tile_cli.project._init import run_init

    raise typer.Exit(run_init(path, force=force, from_index=from_index))


@with_flags(JSON, PROFILE)
def device_cmd(
    flags: Flags,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate", help="Measure copy bandwidth and bf16 matmul rate; cache them."
        ),
    ] = False,
) -> None:
    """Show the device the runner sees: kind, memory, L2, versions and roofline peaks."""
    from tile_cli.runs._device import show_device

    code = show_device(calibrate=calibrate, as_json=flags.json, profile=flags.profile)
    raise typer.Exit(code)


@with_flags(PROFILE, JSON)
def cache_info_cmd(flags: Flags) -> None:
    """The cache directory, why it is that one, its entries, bytes, oldest and newest."""
    from tile_harness import cache_info

    raise typer.Exit(cache_info(profile=flags.profile, as_json=flags.json))


@with_flags(PROFILE, JSON)
def cache_clear_cmd(
    flags: Flags,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Clear without asking.")] = False,
) -> None:
    """Remove every compiled executable from the cache (asks first unless `--yes`)."""
    from tile_harness import cache_clear

    raise typer.Exit(cache_clear(profile=flags.profile, yes=yes, as_json=flags.json))


def campaign_list_cmd() -> None:
    """List the campaigns of this project and where each is defined."""
    from tile_cli.terminal._escape import escape_controls
    from tile_config import campaign_names
    from tile_harness import resolve_config

    for name, where in campaign_names(resolve_config(None, {})).items():
        typer.echo(escape_controls(f"{name}\t{where}"))
    raise typer.Exit(ExitCode.OK)


def campaign_plan_cmd(
    name: CampaignName,
    smoke: Smoke = False,
    over_budget: OverBudget = False,
    json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Show every unit (variant x machine) with its cases and estimated time; run nothing.

    Exit 2 when the plan is over its budget (with the units and cases that cost most).
    """
    from tile_cli.runs._campaign import plan_campaign

    raise typer.Exit(plan_campaign(name, smoke=smoke, over_budget=over_budget, as_json=json))


def campaign_run_cmd(
    name: CampaignName,
    smoke: Smoke = False,
    over_budget: OverBudget = False,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "-o",
            help="Campaign directory (default `.tile/campaigns/NAME`, `NAME-smoke` with --smoke).",
        ),
    ] = None,
) -> None:
    """Run a campaign, one `tile bench` per unit; run it again to resume where it stopped."""
    from tile_cli.runs._campaign import run_campaign

    code = run_campaign(name, smoke=smoke, over_budget=over_budget, output_dir=output_dir)
    raise typer.Exit(code)
