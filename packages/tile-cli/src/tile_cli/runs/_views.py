"""`tile list` and `tile inspect`: what the runner sees, printed, no run directory written."""

from __future__ import annotations

import difflib
import functools
import sys
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_cli.terminal._listing import list_json_lines, print_listing
from tile_cli.terminal._render import print_failures
from tile_cli.terminal._ui import make_consoles
from tile_harness import (
    CliError,
    ExitCode,
    Selection,
    ask,
    close_names,
    no_match,
    resolve_config,
    split_failures,
    with_cases,
)

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = ["check_kind", "inspect_case", "list_cases"]


def list_cases(sel: Selection, *, profile: str | None, as_json: bool) -> int:
    """Print every case the runner would run, grouped by kernel."""
    out, err = make_consoles()
    resolved = resolve_config(profile, sel.overrides)
    sel = with_cases(resolved, sel, functools.partial(err.print, markup=False))
    answer, clean = ask("list", resolved, sel)
    cases = answer.cases
    if as_json:
        for line in list_json_lines(answer.plan):
            print(line)
    else:
        bench, tests = print_listing(out, answer.plan)
        err.print(f"{bench} bench cases, {tests} test cases", style="dim")
    if answer.unusable(functools.partial(err.print, markup=False), clean=clean):
        return int(ExitCode.INFRA)
    if not cases and (sel.filters or sel.kernels):
        raise no_match(resolved, sel)
    return int(ExitCode.OK)


def check_kind(kind: str) -> tp.InspectKind | None:
    """The view `--kind` names (None for `all`); an unknown one is refused before any runner."""
    for known in tp.INSPECT_KINDS:
        if kind == known:
            return known
    if kind == "all":
        return None
    close = difflib.get_close_matches(kind, [*tp.INSPECT_KINDS, "all"], n=1)
    raise CliError(
        f"unknown kind `{kind}`",
        hint=(f"did you mean `{close[0]}`? " if close else "")
        + f"use one of {', '.join(tp.INSPECT_KINDS)} or all (`tile inspect --list-kinds`)",
        code=ExitCode.USAGE,
    )


def inspect_case(
    case_id: str, kind: str, sel: Selection, *, profile: str | None, verbose: int = 0
) -> int:
    """Print one view (or all) of one case to stdout; 1 when it does not lower or compile."""
    wanted = check_kind(kind)
    _, err = make_consoles()
    resolved = resolve_config(profile, sel.overrides)
    one = Selection(plugins=sel.plugins, axes=sel.axes, case_ids=[case_id])
    answer, clean = ask("inspect", resolved, one, inspect_kind=wanted)
    if any(f.error_type == "UnknownCase" and f.case_id == case_id for f in answer.failures):
        raise _unknown_case(case_id, resolved, sel)
    for view in (v for v in answer.views if v.case_id == case_id):
        if wanted is None:
            sys.stdout.write(f"==> {view.kind} <==\n")
        sys.stdout.write(view.text if view.text.endswith("\n") else view.text + "\n")
    sys.stdout.flush()
    broken, other = split_failures(answer.failures)
    print_failures(err, [*broken, *other], verbose=verbose)
    if other or not clean:
        return int(ExitCode.INFRA)
    if broken:
        return int(ExitCode.FAILED)
    return int(ExitCode.OK)


def _unknown_case(case_id: str, resolved: ResolvedConfig, sel: Selection) -> CliError:
    """The error for a case id that does not exist, naming the closest ones that do."""
    listing, _ = ask("list", resolved, Selection(plugins=sel.plugins, axes=sel.axes))
    known = listing.case_ids
    close = close_names(case_id, known, cutoff=0.75)
    if close:
        hint = "did you mean " + ", ".join(f"`{c}`" for c in close) + "? (`tile list` shows all)"
    elif known:
        hint = "run `tile list` to see every case id"
    else:
        hint = "no kernels found: add `[project] modules` or `paths` to tile.toml"
    return CliError(f"no case `{case_id}`", hint=hint, code=ExitCode.USAGE)
