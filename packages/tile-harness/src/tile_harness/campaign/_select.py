"""A campaign's `[select]`: list every case once, then expand each selector and say what it took.

The runner lists the cases (with the campaign's plugins and axis overrides, which change the
case ids); the selectors are then matched here, one by one, by the rules `tile bench` uses
(`--kernel`: the kernel's name or a glob on it; `-k`: a substring of the case id, or a glob on
part of it), so that each can report what it matched and a selector that matches nothing is
refused with the line it is written on. Units then run exact case ids (`tile bench --case`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness._errors import CliError, ExitCode
from tile_harness._settings import Selection, kernel_matches, matches, resolve_config

__all__ = ["Listing", "axis_flags", "list_cases", "matches", "select_cases", "smoke_cases"]


@dataclass(frozen=True)
class Listing:
    """Every case the runner offers with the campaign's plugins and axes, and its device."""

    cases: list[tp.CaseInfo]
    device_kind: str | None
    backend: str | None


def axis_flags(axes: dict[str, list[str]]) -> list[str]:
    """`{dtype: [f32, bf16]}` -> `["dtype=f32,bf16"]`, as `-a` takes them."""
    return [f"{name}={','.join(values)}" for name, values in axes.items()]


def list_cases(
    plugins: Sequence[str],
    axes: dict[str, list[str]],
    modes: Sequence[str] = (),
    cases: Path | None = None,
) -> Listing:
    """Ask one runner for every case (in `modes`, as `--mode`; those of the cases file `cases`
    instead of the declared ones, as `--cases`); CliError (exit 3) when it cannot say."""
    from tile_harness._ask import ask
    from tile_harness._captured import load_cases

    specs = load_cases(cases) if cases is not None else None
    sel = Selection(plugins=list(plugins), axes=axis_flags(axes), modes=list(modes), cases=specs)
    answer, clean = ask("list", resolve_config(None, {}), sel)
    if answer.failures or not clean or answer.plan is None:
        why = "; ".join(f"{f.phase}: {f.message}" for f in answer.failures) or "the runner died"
        raise CliError(
            f"cannot list the cases for the campaign: {why}",
            hint="run `tile list` to see what loads, and fix `[project]` or the plugins",
            code=ExitCode.INFRA,
        )
    return Listing(cases=answer.cases, device_kind=answer.device_kind, backend=answer.backend)


def _nothing(where: str, what: str, hint: str) -> CliError:
    return CliError(f"{where}: {what}", hint=hint, code=ExitCode.USAGE)


def _match(
    kind: ta.campaign.SelectorKind, selector: str, where: str, cases: Sequence[tp.CaseInfo]
) -> ta.campaign.SelectorMatch:
    kernels = list(dict.fromkeys(c.kernel for c in cases))
    return ta.campaign.SelectorMatch(
        kind=kind, selector=selector, where=where, kernels=kernels, case_count=len(cases)
    )


def _by_kernel(
    cases: Sequence[tp.CaseInfo], kernels: Sequence[str], where: str
) -> tuple[list[tp.CaseInfo], list[ta.campaign.SelectorMatch]]:
    """The cases of the kernels `kernels` names (all without any), one match per selector."""
    names = list(dict.fromkeys(c.kernel for c in cases))
    shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
    report: list[ta.campaign.SelectorMatch] = []
    chosen: set[str] = set()
    for i, pattern in enumerate(kernels):
        hit = {k for k in names if kernel_matches(k, pattern)}
        if not hit:
            raise _nothing(
                where,
                f"`select.kernels[{i}]` = `{pattern}` matches no kernel",
                f"kernels here: {shown or 'none'} (`tile list` shows them all)",
            )
        chosen |= hit
        report.append(_match("kernel", pattern, where, [c for c in cases if c.kernel in hit]))
    return [c for c in cases if not kernels or c.kernel in chosen], report


def _by_filter(
    pool: Sequence[tp.CaseInfo], filters: Sequence[str], where: str, narrowed: bool
) -> tuple[list[tp.CaseInfo], list[ta.campaign.SelectorMatch]]:
    """The cases whose id one of `filters` matches (all without any), one match per filter."""
    report: list[ta.campaign.SelectorMatch] = []
    for i, pattern in enumerate(filters):
        hit = [c for c in pool if matches(c.case_id, pattern)]
        if not hit:
            raise _nothing(
                where,
                f"`select.filters[{i}]` = `{pattern}` matches no case"
                + (" of the selected kernels" if narrowed else ""),
                "filters are substrings or globs of case ids: `tile list` shows them",
            )
        report.append(_match("filter", pattern, where, hit))
    selected = [c for c in pool if not filters or any(matches(c.case_id, f) for f in filters)]
    return selected, report


def select_cases(
    listing: Listing,
    *,
    kernels: Sequence[str],
    filters: Sequence[str],
    axes: dict[str, list[str]],
    where: dict[str, str],
) -> tuple[list[tp.CaseInfo], list[ta.campaign.SelectorMatch]]:
    """The selected cases in the runner's order, and what each selector matched.

    `where` gives the file:line of the `kernels`, `filters` and `axes` keys. A selector that
    matches nothing is a CliError (exit 2) naming it; so is a selection of no case at all.
    """
    pool, report = _by_kernel(listing.cases, kernels, where["kernels"])
    selected, matched = _by_filter(pool, filters, where["filters"], bool(kernels))
    report += matched
    for name, values in axes.items():
        hit = [c for c in selected if name in c.params]
        if not hit:
            raise _nothing(
                where["axes"],
                f"`select.axes.{name}` matches no axis of the selected cases",
                "name an axis the selected kernels have (`tile list` shows them in the case ids)",
            )
        report.append(_match("axis", f"{name}={','.join(values)}", where["axes"], hit))
    if not selected:
        raise _nothing(where["select"], "`[select]` selects no case", "widen the selectors")
    return selected, report


def smoke_cases(cases: Sequence[tp.CaseInfo], per_kernel: int) -> list[tp.CaseInfo]:
    """The first `per_kernel` cases of each kernel, in the runner's order."""
    seen: dict[str, int] = {}
    kept: list[tp.CaseInfo] = []
    for case in cases:
        if seen.get(case.kernel, 0) < per_kernel:
            seen[case.kernel] = seen.get(case.kernel, 0) + 1
            kept.append(case)
    return kept
