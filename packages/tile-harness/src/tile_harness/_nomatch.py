"""A selection that matched no case: which filter matched nothing, and what was probably meant.

A typo in `-k`, `--kernel` or `--case` gets the names close to it, written as the flag to
type (`did you mean `-k square`?`), instead of a trip through `tile list`. Which names exist
only the runner knows, so the cases are listed once more, on this error path only: a run
that selects cases pays nothing for it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tile_harness._errors import CliError, ExitCode, no_cases
from tile_harness._settings import Selection, kernel_matches, matches

if TYPE_CHECKING:
    import tile_protocol as tp
    from tile_config import ResolvedConfig

__all__ = ["close_names", "no_match", "nothing_matched"]

_SUGGESTIONS = 3
_LIST_HINT = "run `tile list` to see every case id"


def close_names(wanted: str, known: Sequence[str], *, cutoff: float = 0.6) -> list[str]:
    """Up to three of `known` that look like `wanted`: the closest spellings first, then the
    names that contain it (a case id typed without its axes)."""
    close = difflib.get_close_matches(wanted, known, n=_SUGGESTIONS, cutoff=cutoff)
    close += [k for k in known if wanted in k and k not in close]
    # `fx/square` after `square` adds nothing: as a filter, the shorter already selects it.
    kept = [k for i, k in enumerate(close) if not any(c in k for c in close[:i])]
    return kept[:_SUGGESTIONS]


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _fragments(cases: Sequence[tp.CaseInfo]) -> list[str]:
    """What `-k` is usually given: a kernel's name or a part of it between `/`, or one
    `axis=value` of a case id (`std/softmax[n=8,dtype=float32]` gives `std/softmax`, `std`,
    `softmax`, `n=8`, `dtype=float32`)."""
    names = _unique(c.kernel for c in cases)
    parts = [part for name in names for part in name.split("/")]
    axes = [item for c in cases for item in c.case_id.partition("[")[2].rstrip("]").split(",")]
    return _unique([*names, *parts, *(a for a in axes if a)])


def _misses(sel: Selection, cases: Sequence[tp.CaseInfo]) -> list[tuple[str, str, list[str]]]:
    """Each filter that alone matches no case: its flag, its value, and the names to suggest."""
    kernels = _unique(c.kernel for c in cases)
    ids = [c.case_id for c in cases]
    misses: list[tuple[str, str, list[str]]] = []
    for pattern in sel.kernels:
        if not any(kernel_matches(k, pattern) for k in kernels):
            misses.append(("--kernel", pattern, close_names(pattern, kernels)))
    for pattern in sel.filters:
        if not any(matches(i, pattern) for i in ids):
            misses.append(("-k", pattern, close_names(pattern, _fragments(cases))))
    for case_id in sel.case_ids or ():
        if case_id not in ids:
            misses.append(("--case", case_id, close_names(case_id, ids, cutoff=0.75)))
    return misses


def nothing_matched(sel: Selection, cases: Sequence[tp.CaseInfo]) -> CliError:
    """The usage error of `sel` selecting none of `cases` (every case there is)."""
    if not cases:
        return no_cases(filtered=False)
    misses = _misses(sel, cases)
    if not misses:
        return CliError(
            "no case matches all the filters together (each matches some case alone)",
            hint=f"drop or widen one of them; {_LIST_HINT}",
            code=ExitCode.USAGE,
        )
    named = " nor ".join(f"`{flag} {value}`" for flag, value, _ in misses)
    meant = [f"`{flag} {name}`" for flag, _, close in misses for name in close]
    hint = f"did you mean {' or '.join(meant)}? `tile list` shows every case id"
    return CliError(
        f"no case matches {named}", hint=hint if meant else _LIST_HINT, code=ExitCode.USAGE
    )


def no_match(resolved: ResolvedConfig, sel: Selection) -> CliError:
    """The usage error of a selection that planned no case, after asking a runner for every
    case (with the same plugins and axes, which change the case ids)."""
    from tile_harness._ask import ask

    listing, clean = ask("list", resolved, Selection(plugins=sel.plugins, axes=sel.axes))
    if listing.failures or not clean:
        return no_cases(filtered=True)  # the runner could not say which cases there are
    return nothing_matched(sel, listing.cases)
