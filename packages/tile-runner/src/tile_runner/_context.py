"""What every case of one run shares, and how a case gets its inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from tile_protocol import (
    BenchSettings,
    ConfigInfo,
    InspectKind,
    Message,
    Peaks,
    PriorSamples,
    ProfileSettings,
    Step,
)
from tile_runner._api import Case, KernelDef
from tile_runner._inputs import case_key
from tile_runner._timers import TimerName
from tile_runner._tuning_index import TuningIndex

__all__ = ["CaseContext", "Outcome", "case_inputs"]

Outcome = Literal["passed", "failed", "skipped"]


class StepSay(Protocol):
    """Say that a case enters a step (with its configuration on its `inputs` step)."""

    def __call__(self, step: Step, case_id: str, config: ConfigInfo | None = None) -> None: ...


def _unseen(step: Step, case_id: str, config: ConfigInfo | None = None) -> None:
    """No one asked which step a case is in (`RunRequest.progress` off)."""


@dataclass
class CaseContext:
    """What every case of one run shares."""

    command: str
    seed: int
    bench: BenchSettings
    tolerances: dict[str, float]
    timer: TimerName
    peaks: Peaks | None
    send: Callable[[Message], None]
    warn: Callable[[str, str | None], None]
    inspect_kind: InspectKind | Literal["all"] | None = None
    output_dir: str | None = None
    tuning: TuningIndex = field(default_factory=TuningIndex)
    tunables: dict[str, str] = field(default_factory=dict[str, str])
    """Request overrides of tunable values (`--tunable NAME=VALUE`)."""
    profile: ProfileSettings | None = None
    """`tile profile`: the calls a build makes of each case once it is built."""
    step: StepSay = _unseen
    """Say that a case (by its id) enters a step: a `progress` message when the request asks
    (with the case's configuration on its `inputs` step, else None)."""
    prior: dict[str, list[PriorSamples]] = field(default_factory=dict[str, list[PriorSamples]])
    """What the run's earlier runner processes measured of each case (`RunRequest.prior`)."""
    kept: dict[str, Any] | None = None
    """A tune runner that times the later rungs too (`RunRequest.rungs`): each unit timed, its
    `BenchRounds` by id (executable, check, work), for the next rung to time again."""


def _as_args(value: Any) -> tuple[Any, ...]:
    """An inputs factory returns a tuple of arguments; a single value is one argument."""
    return cast("tuple[Any, ...]", value) if isinstance(value, tuple) else (value,)


def case_inputs(ctx: CaseContext, kernel: KernelDef, case: Case) -> tuple[Any, ...]:
    """The case's inputs, made from its key (the same in every mode) and ready on the device."""
    from tile_runner._jaxapi import block_until_ready

    return block_until_ready(_as_args(kernel.inputs(case, case_key(ctx.seed, case.base_id))))
