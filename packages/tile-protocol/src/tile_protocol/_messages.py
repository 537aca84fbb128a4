"""Every message of tile's wire protocol, version 1, as frozen msgspec Structs.

Each message is tagged by its `type` field; the parts they are made of are in `_parts.py`
and the closed sets they are typed with in `_sets.py`.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from tile_protocol._parts import (
    Accounting,
    Calibration,
    CaseInfo,
    Check,
    ConfigInfo,
    DeviceInfo,
    KernelInfo,
    KernelTime,
    OpInfo,
    Peaks,
    Phases,
    Reference,
    Roofline,
    Stats,
    Throughput,
    Work,
)
from tile_protocol._request import NextRung, PriorSamples, RunRequest
from tile_protocol._sets import (
    CacheEventKind,
    CacheMissCode,
    CaseStatus,
    Command,
    InspectKind,
    LogLevel,
    MeasuredTimer,
    Phase,
    StateKind,
    Step,
)
from tile_protocol._versions import PROTOCOL_MINOR, PROTOCOL_VERSION

__all__ = [
    "PROTOCOL_MINOR",
    "PROTOCOL_VERSION",
    "Artifact",
    "BenchResult",
    "BuildResult",
    "CacheEvent",
    "CaseStart",
    "DeviceReport",
    "Done",
    "Failure",
    "Hello",
    "InputFile",
    "Inspect",
    "Log",
    "Message",
    "NextRung",
    "PriorSamples",
    "Plan",
    "Progress",
    "Rung",
    "RungDone",
    "RunRequest",
    "StateChange",
    "StateDiff",
    "TestResult",
]


class _Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Common options of every message: immutable, keyword-only, tagged by its `type` field."""


class _Sent(_Message, frozen=True, kw_only=True):
    """A message the runner sends, stamped with where it comes from (protocol 1.5).

    `pid` is the process that wrote it, `seq` grows with every message of one runner's
    stream, and `token` repeats `RunRequest.token`. A line that another process put into the
    pipe (a kernel's forked child writing into every inherited descriptor) fails one of the
    three, and the CLI drops it instead of believing it (`StreamValidator`). All None from
    older runners, whose streams are read without that check.
    """

    pid: int | None = None
    seq: int | None = None
    token: str | None = None


# ---------------------------------------------------------------- stream (runner -> CLI)


class Hello(_Sent, frozen=True, kw_only=True, tag="hello"):
    """First message of every stream: who is talking and what it can do.

    `timers` stays free text: a hello must decode from any runner, newer ones included, for
    the version check to speak.
    """

    protocol_version: int
    protocol_minor: int = 0
    runner_version: str
    python_version: str
    jax_version: str | None = None
    jaxlib_version: str | None = None
    backend: str | None = None
    devices: list[DeviceInfo] = []
    timers: list[str] = []
    pinned_cpu: int | None = None  # the one core the runner runs on, when pinned


class Plan(_Sent, frozen=True, kw_only=True, tag="plan"):
    """The cases the runner will go through, in order."""

    command: Command
    cases: list[CaseInfo] = []
    kernels: list[KernelInfo] = []
    """Each selected kernel's modes, tunables and test cases (protocol 1.16), for `list` only."""


class CaseStart(_Sent, frozen=True, kw_only=True, tag="case_start"):
    """The runner begins a case; the CLI blames this case if the runner dies now."""

    case_id: str
    index: int
    total: int
    round: int | None = None
    """1-based round when the bench runs in rounds (`BenchSettings.rounds` > 1), else None."""


class Progress(_Sent, frozen=True, kw_only=True, tag="progress"):
    """What the runner is doing now (protocol 1.15, when `RunRequest.progress` asks), for the
    person watching; it is not recorded. `done` of `total` count a step taken over many cases
    at once (compiling a batch ahead of sampling: `case_id` is the case whose compilations are
    awaited, `done` how many cases' ended); both None for a step of one case (`case_id`).
    The steps of a batch made ready ahead (`RunRequest.compile_ahead`, protocol 1.19) are sent
    whether asked or not: no case is in flight there, and the CLI bounds the silence between
    them by the case timeout."""

    step: Step
    case_id: str
    done: int | None = None
    total: int | None = None
    config: ConfigInfo | None = None
    """On a case's `inputs` step: the tunable values it runs with and where they came from
    (protocol 1.20), so that the screen names them while the case runs."""


class Rung(_Sent, frozen=True, kw_only=True, tag="rung"):
    """A tune runner starts a later rung (`RunRequest.rungs`, protocol 1.21): `case_ids`, planned
    units that each had their outcome, get one more, in this order; a `case_start` of the rung
    counts its place among them (`index` of `total`)."""

    rung: int
    case_ids: list[str] = []


class RungDone(_Sent, frozen=True, kw_only=True, tag="rung_done"):
    """A tune runner timed every unit of rung `rung` it had (0: its plan) and waits for the next
    (`RunRequest.rungs`, protocol 1.21): every result of the rung came before this message."""

    rung: int


class BenchResult(_Sent, frozen=True, kw_only=True, tag="bench_result"):
    """A measured case."""

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    timer: MeasuredTimer
    cold: bool = False
    samples: list[float] = []
    stats: Stats
    phases: Phases = Phases()
    work: Work = Work()
    throughput: Throughput = Throughput()
    roofline: Roofline = Roofline()
    reference: Reference | None = None
    check: Check | None = None
    seed: int | None = None
    peak_memory_bytes: int | None = None
    round_sizes: list[int] | None = None
    """Samples taken in each round, in order (they sum to len(samples)); None: one round."""
    process_sizes: list[int] | None = None
    """Samples taken by each runner process, in order (they sum to len(samples)): the earlier
    processes' (`RunRequest.prior`, protocol 1.23) first, then this one's; None: one process."""
    accounting: Accounting | None = None
    config: ConfigInfo | None = None
    kernels: list[KernelTime] | None = None
    """Per device kernel of one call, under the `cupti` timer; None where it cannot tell."""
    op: OpInfo | None = None
    """The op its kernel implements (as in the plan's `CaseInfo.op`)."""
    captured: str | None = None
    """`MODULE:FUNCTION` of a case captured from a program (protocol 1.18)."""


class TestResult(_Sent, frozen=True, kw_only=True, tag="test_result"):
    """A checked case."""

    __test__: ClassVar[bool] = False  # not a pytest test class despite the name

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    check: Check
    seed: int | None = None
    accounting: Accounting | None = None
    config: ConfigInfo | None = None
    captured: str | None = None
    """`MODULE:FUNCTION` of a case captured from a program (protocol 1.18)."""


class BuildResult(_Sent, frozen=True, kw_only=True, tag="build_result"):
    """A case lowered and compiled without running it."""

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    ok: bool
    phases: Phases = Phases()
    error: str | None = None


class Artifact(_Sent, frozen=True, kw_only=True, tag="artifact"):
    """A file the runner wrote under the run directory."""

    path: str
    kind: str
    sha256: str
    size_bytes: int
    case_id: str | None = None


class InputFile(_Sent, frozen=True, kw_only=True, tag="input_file"):
    """A data file a case read (`tile.data(NAME)`): the manifest fingerprints it."""

    name: str
    path: str
    case_id: str | None = None


class Inspect(_Sent, frozen=True, kw_only=True, tag="inspect"):
    """A textual view of a compiled case (jaxpr, StableHLO, HLO, cost, memory)."""

    case_id: str
    kind: InspectKind
    text: str


class Log(_Sent, frozen=True, kw_only=True, tag="log"):
    """A diagnostic line from the runner."""

    level: LogLevel = "info"
    message: str
    case_id: str | None = None


class CacheEvent(_Sent, frozen=True, kw_only=True, tag="cache_event"):
    """One lookup in JAX's persistent compile cache by one XLA module (protocol 1.9).

    Sent only when the request asks (`RunRequest.cache_explain`). A miss says why (`code`,
    `reason`, and the parts of JAX's cache key that changed, `differs`); `not_stored` says
    why JAX kept a compiled program out of the cache (`reason`).
    """

    event: CacheEventKind
    module: str
    key: str | None = None
    code: CacheMissCode | None = None
    reason: str | None = None
    differs: list[str] = []
    """Key parts that changed against the nearest cached entry (JAX's names: `XLA flags`...)."""
    case_id: str | None = None


class Failure(_Sent, frozen=True, kw_only=True, tag="failure"):
    """Something went wrong; `case_id` is None when no single case is to blame."""

    case_id: str | None = None
    phase: Phase
    status: CaseStatus = "failed"
    error_type: str
    message: str
    traceback: str | None = None


class DeviceReport(_Sent, frozen=True, kw_only=True, tag="device_report"):
    """What `tile device` shows: the devices, their built-in peaks, and any calibration."""

    backend: str
    devices: list[DeviceInfo] = []
    builtin_peaks: Peaks | None = None
    calibration: Calibration | None = None


class Done(_Sent, frozen=True, kw_only=True, tag="done"):
    """Last message of a stream that ended normally."""

    ok: bool
    counts: dict[str, int] = {}
    elapsed_s: float
    restart: str | None = None
    """Why the runner stopped before the rest of its plan (a case changed process state that
    cannot be put back); the CLI starts a fresh runner for the cases left."""


class StateDiff(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=False):
    """One thing a case changed in the runner's process: what it was, what it became.

    `name`: the flag, variable, signal or thread (empty for the working directory and
    sys.path); `restored`: put back before the next case; `kept`: left on purpose, a module's
    own setup (a variable its top-level code set as the case imported it, as Mosaic GPU does).
    """

    kind: StateKind
    name: str = ""
    before: str | None = None
    after: str | None = None
    restored: bool = False
    kept: bool = False


class StateChange(_Sent, frozen=True, kw_only=True, tag="state_change"):
    """A case left process state behind that the next case would inherit (protocol 1.5).

    Sent after the case's result. `restart`: some of it could not be put back, so the runner
    ends after this case and the CLI starts a fresh one for the rest; the later cases are not
    run in (or blamed for) a changed process.
    """

    case_id: str
    changes: list[StateDiff] = []
    restart: bool = False


Message = (
    RunRequest
    | Hello
    | Plan
    | CaseStart
    | Progress
    | Rung
    | RungDone
    | BenchResult
    | TestResult
    | BuildResult
    | Artifact
    | InputFile
    | Inspect
    | Log
    | CacheEvent
    | Failure
    | DeviceReport
    | StateChange
    | Done
)
"""Any protocol message, tagged by its `type` field."""
