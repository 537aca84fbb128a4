"""Every message of tile's wire protocol, version 1, as frozen msgspec Structs."""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec

__all__ = [
    "PROTOCOL_MINOR",
    "PROTOCOL_VERSION",
    "Accounting",
    "Artifact",
    "BenchResult",
    "BenchSettings",
    "BuildResult",
    "Calibration",
    "CaseInfo",
    "CaseStart",
    "Check",
    "Command",
    "ConfigInfo",
    "ConfigSource",
    "DeviceInfo",
    "DeviceReport",
    "Done",
    "DownloadSpec",
    "Failure",
    "Hello",
    "Inspect",
    "Log",
    "Message",
    "Peaks",
    "Phases",
    "Plan",
    "Reference",
    "Roofline",
    "RunRequest",
    "StateChange",
    "StateDiff",
    "StateKind",
    "Stats",
    "TestResult",
    "TestSettings",
    "Throughput",
    "Work",
]

PROTOCOL_VERSION = 1
"""Major version: a reader refuses a stream whose major version is newer than its own."""
PROTOCOL_MINOR = 6
"""Minor version: grows when optional fields or message types are added.

1: `Reference.interleaved`, `RunRequest.pin_cpu`, `Hello.pinned_cpu`.
2: `BenchSettings.rounds`, `CaseStart.round`, `BenchResult.round_sizes`.
3: `BenchResult.accounting`, `TestResult.accounting`.
4: command `tune`; `RunRequest.tuning_files`, `RunRequest.tunables`, `RunRequest.units`;
   `CaseInfo.skip`, `CaseInfo.default`; `BenchResult.config`, `TestResult.config` (which tunable values ran, and
   from where).
5: provenance on every runner message (`pid`, `seq`, `token`) and `RunRequest.token`; message
   `state_change` (`StateChange`, `StateDiff`); `Done.restart`; failure status `invalid`
   (set by the CLI for a message that broke the protocol's rules, never sent by a runner).
6: `BenchSettings.cache_bytes`.
"""

Command = Literal["bench", "test", "build", "list", "inspect", "device", "tune"]
Timer = Literal["auto", "cupti", "wall", "batched"]
StopReason = Literal["precision", "max_time", "max_runs"]
CaseStatus = Literal["success", "failed", "skipped", "timed_out", "unsupported", "invalid"]
StateKind = Literal[
    "jax_config", "default_device", "cwd", "environment", "sys_path", "signal_handlers", "threads"
]
"""The parts of a runner's process state a case can change and the next case would inherit."""
ConfigSource = Literal["default", "tuned", "override", "tune"]
"""Where a case's tunable values came from: the kernel's default, a tuning file, a request
override, or the configuration a `tune` unit was asked to time."""


class _Base(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=False):
    """Common options: immutable, keyword-only, every field written out."""


class _Sent(_Base, frozen=True, kw_only=True):
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


# ---------------------------------------------------------------- request (CLI -> runner)


class BenchSettings(_Base, frozen=True, kw_only=True):
    """How to time one case (DESIGN §4)."""

    warmup_runs: int = 3
    min_runs: int = 10
    max_runs: int = 1000
    min_time: float = 0.0
    max_time: float = 2.0
    target_precision: float = 0.01
    timer: Timer = "auto"
    cold: bool = False
    batch: int = 10
    rounds: int = 1
    """Time every case in this many rounds over the whole plan, with fresh inputs each round."""
    cache_bytes: int | None = None
    """The cache a cold sample must not find warm (`[machine] l2_bytes`); None: the device's
    L2 from the runner's built-in table, or a default."""


class TestSettings(_Base, frozen=True, kw_only=True):
    """How to check one case against its reference."""

    __test__: ClassVar[bool] = False  # not a pytest test class despite the name

    seed: int = 0
    tolerances: dict[str, float] = {}


class Peaks(_Base, frozen=True, kw_only=True):
    """Hardware peaks for the roofline, and where they came from."""

    bandwidth_gbps: float | None = None
    tflops: dict[str, float] = {}
    source: str | None = None


class DownloadSpec(_Base, frozen=True, kw_only=True):
    """One `[downloads.<name>]` entry, passed through to the runner for `tile.data()`."""

    url: str
    sha256: str
    archive: str | None = None
    members: list[str] | None = None
    description: str | None = None


class RunRequest(_Base, frozen=True, kw_only=True, tag="run_request", tag_field="type"):
    """What the CLI asks one runner process to do."""

    protocol_version: int = PROTOCOL_VERSION
    command: Command
    modules: list[str] = []
    paths: list[str] = []
    plugins: list[str] | None = None
    project_root: str | None = None
    filters: list[str] = []
    kernels: list[str] = []
    case_ids: list[str] | None = None
    axes: dict[str, list[str]] = {}
    bench: BenchSettings = BenchSettings()
    test: TestSettings = TestSettings()
    peaks: Peaks | None = None
    downloads: dict[str, DownloadSpec] = {}
    output_dir: str | None = None
    jax_cache_dir: str | None = None
    inspect_kind: str | None = None
    calibrate: bool = False
    # Run on one CPU core with XLA's CPU backend single-threaded (`[runner] pin_cpu`).
    pin_cpu: bool = False
    tuning_files: list[str] = []
    """Tuning files (`tile tune` writes them) whose entries choose kernels' tunable values."""
    tunables: dict[str, str] = {}
    """Tunable values that override default and tuned ones, for every kernel that has them."""
    units: bool = False
    """Plan one unit per configuration of each case's tunables (`tune` always does)."""
    token: str | None = None
    """A fresh random string per runner process; every message of its stream repeats it."""


# ---------------------------------------------------------------- stream (runner -> CLI)


class DeviceInfo(_Base, frozen=True, kw_only=True):
    """One accelerator (or the CPU) as JAX sees it."""

    id: int
    platform: str
    device_kind: str
    memory_bytes: int | None = None
    l2_bytes: int | None = None


class Hello(_Sent, frozen=True, kw_only=True, tag="hello", tag_field="type"):
    """First message of every stream: who is talking and what it can do."""

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


class CaseInfo(_Base, frozen=True, kw_only=True):
    """One planned case: its stable id, kernel and axis values."""

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    skip: str | None = None
    """A unit its kernel's constraint rules out, and why; it is reported skipped, never run."""
    default: bool = False
    """A unit whose configuration is its kernel's default (ties in `tile tune` go to it)."""


class Plan(_Sent, frozen=True, kw_only=True, tag="plan", tag_field="type"):
    """The cases the runner will go through, in order."""

    command: Command
    cases: list[CaseInfo] = []


class CaseStart(_Sent, frozen=True, kw_only=True, tag="case_start", tag_field="type"):
    """The runner begins a case; the CLI blames this case if the runner dies now."""

    case_id: str
    index: int
    total: int
    round: int | None = None
    """1-based round when the bench runs in rounds (`BenchSettings.rounds` > 1), else None."""


class Stats(_Base, frozen=True, kw_only=True):
    """Summary statistics of a sample of times, in seconds."""

    n: int
    min: float
    max: float
    mean: float
    median: float
    stdev: float
    mad: float
    q1: float
    q3: float
    p5: float
    p95: float
    ci_low: float | None = None
    ci_high: float | None = None
    outliers_mild: int = 0
    outliers_severe: int = 0
    stop_reason: StopReason | None = None


class Phases(_Base, frozen=True, kw_only=True):
    """Ahead-of-time compilation phases, in seconds, and cache accounting."""

    trace_s: float | None = None
    lower_s: float | None = None
    compile_s: float | None = None
    cache_hit: bool | None = None
    compile_count: int | None = None
    cache_hit_count: int | None = None
    cache_miss_count: int | None = None


class Work(_Base, frozen=True, kw_only=True):
    """Bytes moved and floating-point operations of one call."""

    bytes: float | None = None
    flops: float | None = None
    source: Literal["declared", "cost_analysis"] | None = None


class Throughput(_Base, frozen=True, kw_only=True):
    """Rates computed from the median time."""

    gbps: float | None = None
    tflops: float | None = None


class Roofline(_Base, frozen=True, kw_only=True):
    """Where the kernel sits against the machine's peaks."""

    intensity: float | None = None
    pct_peak_bw: float | None = None
    pct_peak_flops: float | None = None
    bound: Literal["memory-bound", "compute-bound", "latency-bound", "unknown"] = "unknown"
    peak_source: str | None = None


class ConfigInfo(_Base, frozen=True, kw_only=True):
    """The tunable values a case ran with, and where they came from."""

    values: dict[str, str] = {}
    source: ConfigSource = "default"
    signature: str | None = None
    """Hash of the kernel's tunables (names and values): a tuning entry holds only for it."""


class Accounting(_Base, frozen=True, kw_only=True):
    """Where one case's wall time went in the runner, in seconds, from its start to its result.

    `compile_s` is the kernel's trace + lower + compile; `check_s` the first kernel call, the
    reference call and the comparison; `sample_s` and `reference_sample_s` the wall time of the
    timed calls (the device time inside them is in the samples); `other_s` everything not named
    (cost analysis, statistics, building the result). The named parts add up to `total_s`.
    """

    inputs_s: float = 0.0
    compile_s: float = 0.0
    reference_compile_s: float = 0.0
    check_s: float = 0.0
    warmup_s: float = 0.0
    sample_s: float = 0.0
    reference_sample_s: float = 0.0
    other_s: float = 0.0
    total_s: float = 0.0


class Check(_Base, frozen=True, kw_only=True):
    """Outcome of comparing a kernel's output with its reference."""

    passed: bool
    max_abs_err: float | None = None
    rel_l2_err: float | None = None
    tol: float | None = None
    worst_index: list[int] | None = None
    message: str | None = None


class Reference(_Base, frozen=True, kw_only=True):
    """The reference implementation timed on the same inputs.

    `interleaved`: timed turn about with the kernel, as many samples, index-aligned with its.
    """

    samples: list[float] = []
    stats: Stats | None = None
    speedup: float | None = None
    interleaved: bool = False


class BenchResult(_Sent, frozen=True, kw_only=True, tag="bench_result", tag_field="type"):
    """A measured case."""

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    timer: str
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
    accounting: Accounting | None = None
    config: ConfigInfo | None = None


class TestResult(_Sent, frozen=True, kw_only=True, tag="test_result", tag_field="type"):
    """A checked case."""

    __test__: ClassVar[bool] = False  # not a pytest test class despite the name

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    check: Check
    seed: int | None = None
    accounting: Accounting | None = None
    config: ConfigInfo | None = None


class BuildResult(_Sent, frozen=True, kw_only=True, tag="build_result", tag_field="type"):
    """A case lowered and compiled without running it."""

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    ok: bool
    phases: Phases = Phases()
    error: str | None = None


class Artifact(_Sent, frozen=True, kw_only=True, tag="artifact", tag_field="type"):
    """A file the runner wrote under the run directory."""

    path: str
    kind: str
    sha256: str
    size_bytes: int
    case_id: str | None = None


class Inspect(_Sent, frozen=True, kw_only=True, tag="inspect", tag_field="type"):
    """A textual view of a compiled case (jaxpr, StableHLO, HLO, cost, memory)."""

    case_id: str
    kind: str
    text: str


class Log(_Sent, frozen=True, kw_only=True, tag="log", tag_field="type"):
    """A diagnostic line from the runner."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    message: str
    case_id: str | None = None


class Failure(_Sent, frozen=True, kw_only=True, tag="failure", tag_field="type"):
    """Something went wrong; `case_id` is None when no single case is to blame."""

    case_id: str | None = None
    phase: str
    status: CaseStatus = "failed"
    error_type: str
    message: str
    traceback: str | None = None


class Calibration(_Base, frozen=True, kw_only=True):
    """Ceilings measured on this device by `tile device --calibrate`."""

    copy_gbps: float
    copy_bytes: int
    matmul_tflops: float
    matmul_dtype: str
    matmul_shape: list[int]
    timer: str


class DeviceReport(_Sent, frozen=True, kw_only=True, tag="device_report", tag_field="type"):
    """What `tile device` shows: the devices, their built-in peaks, and any calibration."""

    backend: str
    devices: list[DeviceInfo] = []
    builtin_peaks: Peaks | None = None
    calibration: Calibration | None = None


class Done(_Sent, frozen=True, kw_only=True, tag="done", tag_field="type"):
    """Last message of a stream that ended normally."""

    ok: bool
    counts: dict[str, int] = {}
    elapsed_s: float
    restart: str | None = None
    """Why the runner stopped before the rest of its plan (a case changed process state that
    cannot be put back); the CLI starts a fresh runner for the cases left."""


class StateDiff(_Base, frozen=True, kw_only=True):
    """One thing a case changed in the runner's process: what it was, what it became.

    `name` is the flag, variable, signal or thread (empty for the working directory and
    sys.path); `restored`: the runner put it back before the next case.
    """

    kind: StateKind
    name: str = ""
    before: str | None = None
    after: str | None = None
    restored: bool = False


class StateChange(_Sent, frozen=True, kw_only=True, tag="state_change", tag_field="type"):
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
    | BenchResult
    | TestResult
    | BuildResult
    | Artifact
    | Inspect
    | Log
    | Failure
    | DeviceReport
    | StateChange
    | Done
)
"""Any protocol message, tagged by its `type` field."""
