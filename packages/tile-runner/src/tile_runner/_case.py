"""One case from inputs to result message: inputs, compile, check, time, work, roofline."""

from __future__ import annotations

import math
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from tile_protocol import (
    BenchResult,
    BenchSettings,
    BuildResult,
    Check,
    ConfigInfo,
    Failure,
    Inspect,
    Message,
    Peaks,
    Reference,
    TestResult,
    Work,
)
from tile_runner._api import Case, KernelDef
from tile_runner._build import INSPECT_KINDS, Stages, lower_only, view_text, write_build_outputs
from tile_runner._check import compare, resolve_tolerance, upcast
from tile_runner._clock import Stopwatch
from tile_runner._compile import Compiled, aot_compile, bind_static, cost_estimate, memory_estimate
from tile_runner._discover import USER_ERRORS, failure_from
from tile_runner._errors import Skip
from tile_runner._inputs import case_key
from tile_runner._measure import Timing, time_compiled
from tile_runner._roofline import roofline, throughput
from tile_runner._stage import Built, compile_all
from tile_runner._stats import summarize, widen_to_rounds
from tile_runner._timers import TimerName
from tile_runner._tuning import TuningIndex, bind_config, choose, unit_id

__all__ = [
    "INSPECT_KINDS",
    "BenchRounds",
    "CaseContext",
    "Outcome",
    "finish_rounds",
    "next_round",
    "run_case",
]

Outcome = Literal["passed", "failed", "skipped"]


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
    inspect_kind: str | None = None
    output_dir: str | None = None
    tuning: TuningIndex = field(default_factory=TuningIndex)
    tunables: dict[str, str] = field(default_factory=dict[str, str])
    """Request overrides of tunable values (`--tunable NAME=VALUE`)."""


def _as_args(value: Any) -> tuple[Any, ...]:
    """An inputs factory returns a tuple of arguments; a single value is one argument."""
    return value if isinstance(value, tuple) else (value,)


def _inputs(ctx: CaseContext, kernel: KernelDef, case: Case) -> tuple[Any, ...]:
    import jax

    return jax.block_until_ready(_as_args(kernel.inputs(case, case_key(ctx.seed, case.id))))


@dataclass
class BenchRounds:
    """A bench case timed in rounds (one, by default): compiled, checked and costed once,
    then timed once a round.

    Each round after the first makes the inputs anew (same seed, same values, new buffers).
    On a shared CPU, 8 rounds that reused their buffers left the process-to-process spread of
    a case's time where one long measurement had it; with fresh buffers it shrank (kernel /
    reference ratio: SD 6.2% -> 3.7%; docs/measurement.md, "Runs in rounds"). `compare`
    judges the scatter between rounds.
    """

    kernel: KernelDef
    case: Case
    rid: str  # the id results carry: the case's, or its unit's under `tile tune`
    config: ConfigInfo | None
    compiled: Compiled
    reference: Any | None  # the compiled reference timed with the kernel
    check: Check | None
    work: Work
    watch: Stopwatch
    timings: list[Timing] = field(default_factory=list[Timing])


def round_settings(bench: BenchSettings) -> BenchSettings:
    """One round's share of the sampling budget (at least 5 samples a round when allowed)."""
    rounds = max(1, bench.rounds)
    max_runs = max(1, bench.max_runs // rounds)
    min_runs = min(max_runs, max(5, math.ceil(bench.min_runs / rounds)))
    return msgspec.structs.replace(
        bench,
        min_runs=min_runs,
        max_runs=max_runs,
        min_time=bench.min_time / rounds,
        max_time=bench.max_time / rounds,
    )


def run_case(
    ctx: CaseContext, kernel: KernelDef, case: Case, unit: Mapping[str, str] | None = None
) -> Outcome | BenchRounds:
    """Run one case; every exception (and SystemExit) becomes a Failure for this case.

    A bench with `rounds` > 1 times only the first round here and returns the case's
    BenchRounds; `next_round` times the others and sends the result after the last. `unit`
    (`tile tune`): the tunable values to time; results then carry the unit's id.
    """
    at = _Phase("tunables")
    watch = Stopwatch()
    rid = case.id if unit is None else unit_id(case.id, unit)
    try:
        config, info = choose(
            kernel.tunables, case, overrides=ctx.tunables, tuning=ctx.tuning, unit=unit
        )
        if unit is not None and kernel.tunables is not None:
            for candidate, reason in kernel.tunables.configs(case):
                if candidate == config and reason is not None:
                    raise Skip(reason)
        at.phase = "inputs"
        args = _inputs(ctx, kernel, case)
        watch.lap("inputs")
        at.phase = "compile"
        fn, dynamic = bind_static(bind_config(kernel.fn, config), args)
        if ctx.command == "inspect":
            _inspect(ctx, case, fn, dynamic)
            return "passed"
        if ctx.command == "build":
            compiled = aot_compile(fn, dynamic)
            watch.lap("compile")
            at.phase = "outputs"
            return _build(ctx, case, compiled, fn, dynamic)
        built = compile_all(ctx, kernel, fn, args, watch)
        compiled = built.kernel
        checked = _check(ctx, kernel, fn, args, built, watch, at)
        if ctx.command == "test":
            check = checked.check or Check(passed=True, message="no reference")
            ctx.send(
                TestResult(
                    case_id=rid,
                    kernel=case.kernel,
                    params=case.str_params,
                    check=check,
                    seed=ctx.seed,
                    accounting=watch.accounting(),
                    config=info,
                )
            )
            return "passed" if check.passed else "failed"
        at.phase = "work"
        work = _work(kernel, case, compiled.compiled)
        at.phase = "reference"
        reference = None
        if ctx.command != "tune":  # a tune compares configurations, not the reference
            reference = _timed_reference(ctx, rid, checked, built)
        at.phase = "run"
        rounds = BenchRounds(
            kernel, case, rid, info, compiled, reference, checked.check, work, watch
        )
        _time_round(ctx, rounds, args)
        if ctx.bench.rounds > 1:
            watch.pause()
            return rounds
        return _send_bench(ctx, rounds)
    except USER_ERRORS as exc:
        return _failed(ctx, rid, at.phase, exc)


def next_round(ctx: CaseContext, rounds: BenchRounds, *, last: bool) -> Outcome | BenchRounds:
    """Time one more round of a bench case with fresh inputs; after the last, send its result."""
    phase = "inputs"
    rounds.watch.resume()
    try:
        args = _inputs(ctx, rounds.kernel, rounds.case)
        rounds.watch.lap("inputs")
        phase = "run"
        _time_round(ctx, rounds, args)
        if last:
            return _send_bench(ctx, rounds)
        rounds.watch.pause()
        return rounds
    except USER_ERRORS as exc:
        return _failed(ctx, rounds.rid, phase, exc)


def finish_rounds(ctx: CaseContext, rounds: BenchRounds) -> Outcome:
    """Send the result of the rounds timed so far (the runner stops before the others)."""
    try:
        return _send_bench(ctx, rounds)
    except (Exception, SystemExit) as exc:
        return _failed(ctx, rounds.rid, "run", exc)


def _build(
    ctx: CaseContext,
    case: Case,
    compiled: Compiled,
    fn: Callable[..., Any],
    dynamic: tuple[Any, ...],
) -> Outcome:
    """`tile build`: store what the compiler made (with an output dir) and send the result."""
    note = None
    if ctx.output_dir is not None:
        stages = Stages(compiled.traced, compiled.lowered, compiled.compiled)
        note = write_build_outputs(ctx.output_dir, case.id, stages, fn, dynamic, ctx.send)
        if note is not None:
            ctx.warn(note, case.id)
    ctx.send(
        BuildResult(
            case_id=case.id,
            kernel=case.kernel,
            params=case.str_params,
            ok=True,
            phases=compiled.phases,
            error=note,
        )
    )
    return "passed"


def _failed(ctx: CaseContext, case_id: str, phase: str, exc: BaseException) -> Outcome:
    """Send the Failure (or the skip) for an exception raised while running a case."""
    if isinstance(exc, Skip):
        reason = str(exc.args[0]) if exc.args else "skipped"
        ctx.send(
            Failure(
                case_id=case_id, phase=phase, status="skipped", error_type="Skip", message=reason
            )
        )
        return "skipped"
    # The whole traceback goes to the runner's stderr log; the message carries its last part.
    print(f"tile: {case_id} failed in {phase}:", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)
    ctx.send(failure_from(exc, phase, case_id))
    return "failed"


@dataclass(frozen=True)
class _Checked:
    """The correctness check of one case, and the reference executable it compiled."""

    check: Check | None
    reference: Any | None  # compiled on the upcast inputs; None if not traced
    same_inputs: bool  # upcasting changed nothing: that executable also times the reference


@dataclass
class _Phase:
    """The phase a case is in, named in its Failure if it raises."""

    phase: str


def _check(
    ctx: CaseContext,
    kernel: KernelDef,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    built: Built,
    watch: Stopwatch,
    at: _Phase,
) -> _Checked:
    """Run the kernel once and, with a reference, compare on the device.

    The reference runs on the upcast inputs; when upcasting changed nothing (float32 cases)
    the same executable is timed later. A reference that cannot be traced (host code inside)
    runs as a plain function, as it always could.
    """
    import jax

    at.phase = "run"
    out = jax.block_until_ready(built.kernel.compiled(*bind_static(fn, args)[1]))
    watch.lap("check")
    if kernel.reference is None:
        return _Checked(None, None, same_inputs=False)
    at.phase = "reference"
    up = upcast(args)
    ref_compiled = built.check_reference
    if ref_compiled is not None:
        expected = jax.block_until_ready(ref_compiled(*bind_static(kernel.reference, up)[1]))
    else:
        expected = jax.block_until_ready(kernel.reference(*up))
    at.phase = "check"
    check = compare(
        out,
        expected,
        lambda dtype: resolve_tolerance(dtype, request=ctx.tolerances, kernel=kernel.tol),
    )
    del out, expected
    watch.lap("check")
    return _Checked(check, ref_compiled, same_inputs=built.same_inputs)


def _timed_reference(ctx: CaseContext, rid: str, checked: _Checked, built: Built) -> Any | None:
    """The compiled reference to time with the kernel; None without one, or if it fails."""
    # Correctness gates speed: a kernel that fails its check is timed but never compared.
    if checked.check is None or not checked.check.passed:
        return None
    if checked.same_inputs and checked.reference is not None:
        return checked.reference
    if built.timed_reference is None:
        exc = built.timed_reference_error
        why = f"{type(exc).__name__}: {exc}" if exc is not None else "it was not compiled"
        ctx.warn(f"the reference could not be compiled ({why}); no speedup", rid)
    return built.timed_reference


def _time_round(ctx: CaseContext, rounds: BenchRounds, args: tuple[Any, ...]) -> None:
    """Time the kernel (and its reference, interleaved) once with `args`; keep the timing."""
    kernel = rounds.kernel
    ref_call = None
    if rounds.reference is not None and kernel.reference is not None:
        ref_call = (rounds.reference, bind_static(kernel.reference, args)[1])
    settings = round_settings(ctx.bench) if ctx.bench.rounds > 1 else ctx.bench
    # With a reference, both are timed turn about (see time_compiled): a comparison of two runs
    # can then judge kernel/reference ratios, which machine speed swings do not move.
    rounds.watch.mark()
    timing = time_compiled(
        rounds.compiled.compiled,
        bind_static(kernel.fn, args)[1],
        settings,
        timer=ctx.timer,
        warn=lambda message: ctx.warn(message, rounds.rid),
        reference=ref_call,
    )
    rounds.watch.add("warmup", timing.warmup_s)
    rounds.watch.add("sample", timing.sample_s)
    rounds.watch.add("reference_sample", timing.reference_sample_s)
    rounds.watch.mark()
    if ref_call is not None and timing.reference is None:
        rounds.reference = None  # it failed while timed (warned): no round has it from now on
    rounds.timings.append(timing)


def _send_bench(ctx: CaseContext, rounds: BenchRounds) -> Outcome:
    """The BenchResult of all rounds' samples, in the order they were taken."""
    case, timings, last = rounds.case, rounds.timings, rounds.timings[-1]
    samples = [x for t in timings for x in t.samples]
    stats = summarize(samples, last.stats.stop_reason)
    stats = widen_to_rounds(stats, [t.stats.median for t in timings])
    reference = None
    if all(t.reference is not None for t in timings):  # a reference that failed once is dropped
        ref_samples = [x for t in timings if t.reference is not None for x in t.reference.samples]
        ref_stats = summarize(ref_samples, last.stats.stop_reason)
        reference = Reference(
            samples=ref_samples,
            stats=ref_stats,
            speedup=ref_stats.median / stats.median if stats.median > 0 else None,
            interleaved=True,
        )
    dtype = case.get("dtype")
    ctx.send(
        BenchResult(
            case_id=rounds.rid,
            kernel=case.kernel,
            params=case.str_params,
            timer=last.timer,
            cold=last.cold,
            samples=samples,
            stats=stats,
            phases=rounds.compiled.phases,
            work=rounds.work,
            throughput=throughput(rounds.work, stats.median),
            roofline=roofline(
                rounds.work, stats.median, ctx.peaks, dtype if isinstance(dtype, str) else None
            ),
            reference=reference,
            check=rounds.check,
            seed=ctx.seed,
            peak_memory_bytes=memory_estimate(rounds.compiled.compiled),
            round_sizes=[len(t.samples) for t in timings] if len(timings) > 1 else None,
            accounting=rounds.watch.accounting(),
            config=rounds.config,
        )
    )
    return "passed" if rounds.check is None or rounds.check.passed else "failed"


def _work(kernel: KernelDef, case: Case, compiled: Any) -> Work:
    """Declared bytes/flops first; XLA's cost analysis fills what was not declared."""
    declared_bytes = None if kernel.bytes is None else float(kernel.bytes(case))
    declared_flops = None if kernel.flops is None else float(kernel.flops(case))
    if declared_bytes is not None and declared_flops is not None:
        return Work(bytes=declared_bytes, flops=declared_flops, source="declared")
    est_bytes, est_flops = cost_estimate(compiled)
    nbytes = declared_bytes if declared_bytes is not None else est_bytes
    flops = declared_flops if declared_flops is not None else est_flops
    if nbytes is None and flops is None:
        return Work()
    estimated = (declared_bytes is None and est_bytes is not None) or (
        declared_flops is None and est_flops is not None
    )
    return Work(bytes=nbytes, flops=flops, source="cost_analysis" if estimated else "declared")


def _inspect(
    ctx: CaseContext, case: Case, fn: Callable[..., Any], dynamic: tuple[Any, ...]
) -> None:
    kinds = INSPECT_KINDS if ctx.inspect_kind in (None, "all") else (ctx.inspect_kind,)
    for kind in kinds:
        if kind not in INSPECT_KINDS:
            raise ValueError(
                f"unknown inspect kind {kind!r}; use one of {', '.join(INSPECT_KINDS)} or all"
            )
    # The jaxpr and StableHLO views need no compilation (`tile snap` asks only for StableHLO).
    if any(kind in ("hlo", "cost", "memory") for kind in kinds):
        compiled = aot_compile(fn, dynamic)
        stages = Stages(compiled.traced, compiled.lowered, compiled.compiled)
    else:
        stages = lower_only(fn, dynamic)
    for kind in kinds:
        ctx.send(Inspect(case_id=case.id, kind=kind, text=view_text(kind, stages)))
