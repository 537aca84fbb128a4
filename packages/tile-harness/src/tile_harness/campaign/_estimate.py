"""How long a unit of a campaign will take, from what earlier runs of its cases took.

Per case (on the unit's device kind), first match wins:

- `seen`: the median `accounting.total_s` of its last 5 runs with the same `[bench]` settings;
- `seen_other_settings`: the same with other settings, its sampling (warm-up and samples of
  kernel and reference) capped at what the new settings allow (2 x `max_time`: a kernel and
  its interleaved reference share twice the budget);
- `guess`: the mean of this unit's seen cases;
- `default`: nothing seen on this device kind: 2 x `max_time` + 1 s (compile, check, inputs).

Per unit: the median runner start-up on that device kind (twice when sharded: a plan runner
lists the cases first), the cases divided over the shards, and the median time a run and its
`tile` process spend around their cases (each with a default when never seen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import tile_artifacts as ta
from tile_harness.campaign._history import History

__all__ = ["METHOD", "estimate_unit"]

DEFAULT_START_S: Final = 5.0
DEFAULT_OVERHEAD_S: Final = 1.0
DEFAULT_PROCESS_S: Final = 2.0
DEFAULT_CASE_EXTRA_S: Final = 1.0

METHOD: Final = (
    "per case: the median total_s of its last 5 runs on the unit's device kind with the same "
    "[bench] settings (seen), else with other settings and sampling capped at 2 x max_time "
    "(seen_other_settings), else the mean of the unit's seen cases (guess), else "
    "2 x max_time + 1 s (default); per unit: + the median runner start-up on that device kind "
    "(x2 when a plan runner lists first), the cases divided over the shards, + the median time a run and its "
    "tile process spend around their cases"
)


def _case(
    history: History, device_kind: str, case_id: str, settings: str, max_time: float
) -> ta.campaign.CaseEstimate | None:
    seen = history.case(device_kind, case_id)
    same = [o.total_s for o in seen if o.settings == settings]
    if same:
        value = History.median_of_last(same)
        assert value is not None
        return ta.campaign.CaseEstimate(
            case_id=case_id, seconds=value, basis="seen", runs_seen=len(same)
        )
    capped = [o.total_s - o.sampling_s + min(o.sampling_s, 2 * max_time) for o in seen]
    value = History.median_of_last(capped)
    if value is None:
        return None
    return ta.campaign.CaseEstimate(
        case_id=case_id, seconds=value, basis="seen_other_settings", runs_seen=len(seen)
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def estimate_unit(
    history: History,
    *,
    device_kind: str | None,
    case_ids: Sequence[str],
    settings: str,
    max_time: float,
    shards: int,
    lists_first: bool,
) -> tuple[ta.campaign.TimeSplit, list[ta.campaign.CaseEstimate]]:
    """The unit's expected wall time in parts, and each case's estimate with its basis.

    `lists_first`: a plan runner lists the cases before the shards start (SLURM, or shards).
    """
    known: dict[str, ta.campaign.CaseEstimate] = {}
    if device_kind is not None:
        for case_id in case_ids:
            found = _case(history, device_kind, case_id, settings, max_time)
            if found is not None:
                known[case_id] = found
    if known:
        mean = sum(e.seconds for e in known.values()) / len(known)
        fallback = ta.campaign.CaseEstimate(case_id="", seconds=mean, basis="guess")
    else:
        default = 2 * max_time + DEFAULT_CASE_EXTRA_S
        fallback = ta.campaign.CaseEstimate(case_id="", seconds=default, basis="default")
    cases = [known.get(c) or fallback.model_copy(update={"case_id": c}) for c in case_ids]
    kind = device_kind or ""
    start = _or(History.median_of_last(history.starts.get(kind, [])), DEFAULT_START_S)
    overhead = _or(History.median_of_last(history.overheads.get(kind, [])), DEFAULT_OVERHEAD_S)
    process = _or(History.median_of_last(history.process.get(kind, [])), DEFAULT_PROCESS_S)
    runners = 2 if lists_first else 1
    cases_s = sum(c.seconds for c in cases) / max(1, min(shards, len(cases)))
    split = ta.campaign.TimeSplit(
        start_s=start * runners,
        cases_s=cases_s,
        overhead_s=overhead + process,
        total_s=start * runners + cases_s + overhead + process,
    )
    return split, cases
