"""The parts messages are made of: settings, devices, cases, statistics, work, checks.

Frozen msgspec Structs, keyword-only, every field written out (the messages: `_messages.py`)."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from tile_protocol._sets import (
    Bound,
    ConfigSource,
    MeasuredTimer,
    StopReason,
    WorkSource,
)

__all__ = [
    "Accounting",
    "Calibration",
    "CaseInfo",
    "CaseSpec",
    "KernelInfo",
    "TunableInfo",
    "Check",
    "ConfigInfo",
    "DeviceInfo",
    "DownloadSpec",
    "KernelTime",
    "OpInfo",
    "Peaks",
    "Phases",
    "Reference",
    "Roofline",
    "ProfileSettings",
    "Shard",
    "Stats",
    "TestSettings",
    "Throughput",
    "Work",
]


class _Base(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=False):
    """Common options: immutable, keyword-only, every field written out."""


# ---------------------------------------------------------------- request parts


class ProfileSettings(_Base, frozen=True, kw_only=True):
    """What `tile profile` asks of a build runner once a case is built (protocol 1.12).

    The runner calls the compiled case `calls` times after one warm-up call: with `trace`,
    inside `jax.profiler.trace` (each call a `TraceAnnotation` named `tile <case id> #<i>`),
    written under `outputs/<case-dir>/profile/trace/`; with `ncu_range`, between
    `cuProfilerStart` and `cuProfilerStop`, the range a runner started under
    `ncu --profile-from-start off` profiles, so that compilation, autotuning and the warm-up
    stay out of the report. `source` writes the Python file that defines the kernel
    (`kernel_source.py`, where a Pallas kernel's body is) beside the build views.
    """

    calls: int = 3
    trace: bool = False
    ncu_range: bool = False
    source: bool = True


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


class Shard(_Base, frozen=True, kw_only=True):
    """Which part of a sharded run a runner serves: `index` of `count` (0-based).

    A runner pinned to one core (`pin_cpu`) takes a core by its index, so that the shards
    of one host do not share one.
    """

    index: int
    count: int


# ---------------------------------------------------------------- stream parts


class DeviceInfo(_Base, frozen=True, kw_only=True):
    """One accelerator (or the CPU) as JAX sees it."""

    id: int
    platform: str
    device_kind: str
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    model: str | None = None
    """What tells two devices of one kind apart (protocol 1.16): on a CPU, whose `device_kind`
    is `cpu` on every machine, its model name and core count (`AMD EPYC 7B13, 2 cores`); None
    on an accelerator (its kind names the model) and from an older runner."""


class TunableInfo(_Base, frozen=True, kw_only=True):
    """One tunable parameter of a kernel: its values, as text, and the default's."""

    name: str
    values: list[str]
    default: str


class KernelInfo(_Base, frozen=True, kw_only=True):
    """One selected kernel as `tile list` shows it (protocol 1.16): the modes it declares,
    its tunables, and its test suite's case ids (the plan's cases are the bench suite's)."""

    name: str
    description: str | None = None
    modes: list[str] = msgspec.field(default_factory=lambda: ["fwd"])
    tunables: list[TunableInfo] = []
    tuned_modes: list[str] | None = None
    """The modes whose timed program the tunables change (protocol 1.22); None: every mode
    (and what a runner before 1.22 meant)."""
    test_cases: list[str] = []


class OpInfo(_Base, frozen=True, kw_only=True):
    """The op a kernel implements, for kernels declared as implementations of one op
    (`@tile.kernel(op=...)`): the tables put them side by side and time each against the
    op's baseline implementation."""

    name: str
    impl: str
    """This kernel's implementation label (`pallas`, `jnp`, `cudnn`...), unique in its op."""
    baseline: bool = False
    """This implementation is the one the op's others are timed against (one per op)."""


class CaseInfo(_Base, frozen=True, kw_only=True):
    """One planned case: its stable id, kernel and axis values."""

    case_id: str
    kernel: str
    params: dict[str, str] = {}
    skip: str | None = None
    """A unit its kernel's constraint rules out, and why; it is reported skipped, never run."""
    default: bool = False
    """A unit whose configuration is its kernel's default (ties in `tile tune` go to it)."""
    op: OpInfo | None = None
    """The op its kernel implements; None for a kernel declared without one."""
    captured: str | None = None
    """`MODULE:FUNCTION` when the case was captured from a program (`--from`, protocol 1.18)."""


class CaseSpec(_Base, frozen=True, kw_only=True):
    """A case named by its kernel and axis values (as case ids write them) rather than by the
    kernel's declared axes: a call `--from` captured in a program, or a `--cases` file's entry.

    `captured` says where it came from (`MODULE:FUNCTION`), None for a case written by hand.
    """

    kernel: str
    params: dict[str, str] = {}
    captured: str | None = None


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
    source: WorkSource | None = None


class Throughput(_Base, frozen=True, kw_only=True):
    """Rates computed from the median time."""

    gbps: float | None = None
    tflops: float | None = None


class Roofline(_Base, frozen=True, kw_only=True):
    """Where the kernel sits against the machine's peaks.

    `peak_source` names the row it used, e.g. `builtin:NVIDIA H200` or `config`.
    """

    intensity: float | None = None
    pct_peak_bw: float | None = None
    pct_peak_flops: float | None = None
    bound: Bound = "unknown"
    peak_source: str | None = None


class ConfigInfo(_Base, frozen=True, kw_only=True):
    """The tunable values a case ran with, and where they came from."""

    values: dict[str, str] = {}
    source: ConfigSource = "default"
    signature: str | None = None
    """Hash of the kernel's tunables (names and values): a tuning entry holds only for it."""
    note: str | None = None
    """Why these values when that is not plain (protocol 1.14): the default the constraint
    rules out for this case and what runs instead, a tuning entry that was not used and why."""


class KernelTime(_Base, frozen=True, kw_only=True):
    """One device kernel of a case's call, as CUPTI saw it launched (a case's breakdown).

    `name` is the kernel's name as launched; `short` a readable form of it (a library
    kernel's long generated name cut to what it does); `origin` the HLO instruction it came
    from (`fusion.3 (kInput)`, `custom-call (__cublas$gemm)`) where the optimized HLO names
    it. `launches` is how many times one call launches it; `stats` summarise its time per
    call (all its launches); `share` is its median over the case's median.
    """

    name: str
    short: str
    origin: str | None = None
    launches: int = 1
    stats: Stats
    share: float


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


class Calibration(_Base, frozen=True, kw_only=True):
    """Ceilings measured on this device by `tile device --calibrate`."""

    copy_gbps: float
    copy_bytes: int
    matmul_tflops: float
    matmul_dtype: str
    matmul_shape: list[int]
    timer: MeasuredTimer
