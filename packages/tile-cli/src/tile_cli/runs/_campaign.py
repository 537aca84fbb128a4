"""`tile campaign plan|run`: show a plan, or run it (`tile_harness.campaign.CampaignRun`) and
show how it went."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tile_cli.terminal._campaign import (
    render_over_budget,
    render_plan,
    render_report,
    render_selectors,
)
from tile_cli.terminal._escape import hide_on_console
from tile_cli.terminal._ui import make_consoles
from tile_harness import CliError, ExitCode
from tile_harness.campaign import CampaignDir, CampaignRun, campaign_redactor, make_plan

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta

__all__ = ["plan_campaign", "run_campaign"]


def plan_campaign(name: str, *, smoke: bool, over_budget: bool, as_json: bool) -> int:
    """Print the expanded plan; exit 2 when it is over budget (unless `over_budget`)."""
    out, err = make_consoles()
    setup = make_plan(name, smoke=smoke)
    plan = setup.plan
    if as_json:
        print(plan.model_dump_json(indent=2))
    else:
        render_selectors(err, plan)
        render_plan(out, err, plan)
    _refuse_over_budget(err, plan, over_budget, quiet=as_json)
    return int(ExitCode.OK)


def _refuse_over_budget(
    err: Console, plan: ta.campaign.CampaignPlan, allowed: bool, quiet: bool
) -> None:
    if not plan.budget.over or allowed:
        return
    if not quiet:
        render_over_budget(err, plan)
    raise CliError(
        f"campaign `{plan.campaign}` is over budget: " + "; ".join(plan.budget.reasons),
        hint="trim `[select]`, variants or machines, raise `[budget]`, try `--smoke`, or "
        "pass `--over-budget` to run it anyway",
        code=ExitCode.USAGE,
    )


def run_campaign(name: str, *, smoke: bool, over_budget: bool, output_dir: Path | None) -> int:
    """Run (or resume) the campaign; see the module docstring."""
    started = time.monotonic()
    out, err = make_consoles()
    setup = make_plan(name, smoke=smoke, output_dir=output_dir)
    render_selectors(err, setup.plan)
    _refuse_over_budget(err, setup.plan, over_budget, quiet=False)
    redactor = campaign_redactor(setup)
    hide_on_console(redactor)
    camp = CampaignDir(Path(setup.plan.run.output_directory), setup.plan, redactor)
    say = functools.partial(err.print, markup=False)
    with camp.locked():
        ended = CampaignRun(setup, camp, say, over_budget=over_budget, started=started).run()
    render_report(out, ended.report)
    err.print(ended.report.summary.headline, markup=False)
    err.print(f"campaign directory: {camp.path}", markup=False, style="dim")
    return ended.exit_code()
