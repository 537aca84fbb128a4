"""The closed sets of the wire protocol, as Literals the messages are typed with.

They live here, once, so that the runner that writes them, the CLI that reads them and the
tests that hold config and artifacts to the same values all name one definition. A value
outside a set fails decoding: a new value is a protocol change (see PROTOCOL_MINOR).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "COMMANDS",
    "FAILURE_PHASES",
    "INSPECT_KINDS",
    "MEASURED_TIMERS",
    "Bound",
    "CacheEventKind",
    "CacheMissCode",
    "CaseStatus",
    "Command",
    "ConfigSource",
    "InspectKind",
    "LogLevel",
    "MODE_CHOICES",
    "MeasuredTimer",
    "ModeChoice",
    "Phase",
    "STEPS",
    "StateKind",
    "Step",
    "StopReason",
    "Timer",
    "USAGE_ERROR_TYPES",
    "UsageErrorType",
    "WorkSource",
]

Command = Literal["bench", "test", "build", "list", "inspect", "device", "tune"]
"""What a runner is asked to do (`RunRequest.command`, `Plan.command`)."""

ModeChoice = Literal["fwd", "bwd", "fwd_bwd", "all"]
"""A mode a request may ask for (`--mode`): a kernel's forward, its backward (VJP) alone, both
in one program, or `all` the modes each kernel declares."""
MODE_CHOICES: Final[tuple[ModeChoice, ...]] = get_args(ModeChoice)

MeasuredTimer = Literal["cupti", "wall", "batched"]
"""A timer that took samples (`BenchResult.timer`): results of two timers are not compared."""

Timer = Literal["auto", "cupti", "wall", "batched"]
"""A timer a request may ask for: `auto` lets the runner pick the best it has."""

StopReason = Literal["precision", "max_time", "max_runs"]
"""Why sampling stopped: the CI was narrow enough, or a budget ran out."""

CaseStatus = Literal["success", "failed", "skipped", "timed_out", "unsupported", "invalid"]
"""What a `Failure` made of its case (a subset of the artifact format's run statuses);
`invalid` is set by the CLI for a message that broke the protocol's rules, never by a runner."""

Phase = Literal[
    "request",
    "setup",
    "calibrate",
    "import",
    "plan",
    "tunables",
    "inputs",
    "compile",
    "outputs",
    "work",
    "reference",
    "run",
    "check",
    "runner",
    "startup",
    "protocol",
    "result",
]
"""Where a `Failure` happened. The runner names its own steps, from reading the request to
choosing a case's tunable values and checking its output; the CLI adds `run` (the runner died
on a case), `runner` (a case its runner never reached), `startup` (the runner died before its
plan), `protocol` (a message that broke the stream's rules, `StreamValidator`) and `result`
(a result that could not be recorded as its case)."""

ConfigSource = Literal["default", "tuned", "user_cache", "shipped", "override", "tune"]
"""Where a case's tunable values came from: the kernel's default, a tuning file, a request
override, or the configuration a `tune` unit was asked to time."""

Bound = Literal["memory-bound", "compute-bound", "latency-bound", "unknown"]
"""The roofline's verdict on a case."""

WorkSource = Literal["declared", "cost_analysis"]
"""Where bytes and FLOPs came from: the kernel's declaration, or XLA's estimate."""

LogLevel = Literal["debug", "info", "warning", "error"]

StateKind = Literal[
    "jax_config",
    "default_device",
    "cwd",
    "environment",
    "sys_path",
    "signal_handlers",
    "threads",
    "stdio",
    "timers",
    "recursion_limit",
    "trace_hooks",
    "warnings",
    "umask",
    "rlimits",
]
"""The parts of a runner's process state a case can change and the next case would inherit
(`stdio` to `rlimits` since protocol 1.10)."""

InspectKind = Literal["jaxpr", "stablehlo", "hlo", "cost", "memory"]
"""The views `inspect` shows of a compiled case, in the order `all` shows them."""

UsageErrorType = Literal[
    "UnknownAxis",
    "AxisValueError",
    "UnknownTunable",
    "TunableValue",
    "CaptureImport",
    "CaptureTrace",
    "CaptureNone",
]
"""`Failure.error_type` of a selection the runner refused, planning no case: the command line
named an axis, an axis value or a tunable that no selected kernel has, a tunable value a
selected kernel's tunable does not take (`TunableValue`, since protocol 1.25), or a `--from` program
that cannot be imported, raised while traced, or called no registered kernel. The host exits 2."""

CacheEventKind = Literal["miss", "hit", "not_stored"]
"""What one lookup in JAX's persistent compile cache came to (`CacheEvent.event`): a miss, a
hit, or a compiled program JAX chose not to store (host callbacks, too quick to compile)."""

CacheMissCode = Literal["new_program", "key_changed", "evicted", "unreadable"]
"""Why a lookup missed (`CacheEvent.code`): nothing of the program was cached; it was, under
other keys (`differs` names the parts that changed); tile saw the key written and the entry is
gone; the entry is there and JAX could not use it."""

Step = Literal["inputs", "compile", "check", "sample"]
"""What a runner is doing for a case (`Progress.step`, since protocol 1.15): making its inputs,
compiling (kernel and reference), running and checking it against the reference, sampling."""

COMMANDS: Final[tuple[Command, ...]] = get_args(Command)
MEASURED_TIMERS: Final[tuple[MeasuredTimer, ...]] = get_args(MeasuredTimer)
FAILURE_PHASES: Final[tuple[Phase, ...]] = get_args(Phase)
INSPECT_KINDS: Final[tuple[InspectKind, ...]] = get_args(InspectKind)
STEPS: Final[tuple[Step, ...]] = get_args(Step)
USAGE_ERROR_TYPES: Final[tuple[UsageErrorType, ...]] = get_args(UsageErrorType)
