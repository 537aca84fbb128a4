"""One case from inputs to result message: inputs, compile, check, time, work, roofline."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tile_protocol import (
    INSPECT_KINDS,
    BuildResult,
    Check,
    ConfigInfo,
    Failure,
    Inspect,
    InspectKind,
    Phase,
    Step,
    TestResult,
)
from tile_runner._ahead import Ready, Say, prepare
from tile_runner._api import Case, KernelDef
from tile_runner._build import Stages, lower_only, view_text, write_build_outputs
from tile_runner._check import compare, resolve_tolerance, upcast
from tile_runner._clock import Stopwatch
from tile_runner._compile import Compiled, aot_compile, bind_static
from tile_runner._context import CaseContext, Outcome, case_inputs
from tile_runner._discover import USER_ERRORS, failure_from
from tile_runner._errors import Skip, Unsupported
from tile_runner._rounds import BenchRounds, case_work, send_bench, time_round
from tile_runner._stage import Built
from tile_runner._tuning import unit_id
from tile_runner._vjp import grad_label

__all__ = ["finish_rounds", "next_round", "run_case", "time_again"]


def run_case(
    ctx: CaseContext,
    kernel: KernelDef,
    case: Case,
    unit: Mapping[str, str] | None = None,
    ready: Ready | None = None,
) -> Outcome | BenchRounds:
    """Run one case; every exception (and SystemExit) becomes a Failure for this case.

    `ready`: the case's inputs and compilations, made ahead of its turn (`_ahead.prepare`);
    without it they are made here. A bench with `rounds` > 1 times only the first round here
    and returns the case's BenchRounds; `next_round` times the others and sends the result
    after the last. `unit` (`tile tune`): the tunable values to time; results then carry the
    unit's id.
    """
    rid = case.id if unit is None else unit_id(case.id, unit)
    if ready is None:
        compiles = ctx.command not in ("inspect", "build")
        unit_ = (kernel, case, None if unit is None else dict(unit), rid)
        ready = prepare(ctx, [unit_], budget=0, compile_=compiles, say=_in_turn(ctx))[0]
    watch = ready.stopwatch()
    if ready.error is not None:
        return _failed(ctx, rid, *ready.error)
    at = _Phase("compile")
    assert ready.configured is not None and ready.args is not None and ready.call is not None
    info, args, (kernel, call) = ready.configured.info, ready.args, ready.call
    try:
        fn, dynamic = bind_static(call, args)
        if ctx.command in ("inspect", "build"):
            return _compiler_output(ctx, kernel, case, (fn, dynamic), watch=watch, at=at)
        assert ready.built is not None
        built = ready.built
        ready.built = None  # held by this case alone from here: freed when it is done
        ctx.step("check", rid)
        checked = _check(ctx, kernel, fn, args, built, watch=watch, at=at,
                         gradients=case.mode != "fwd")  # fmt: skip
        if ctx.command == "test":
            return _send_test(ctx, case, rid, checked, watch=watch, info=info)
        at.phase = "work"
        work = case_work(kernel, case, built.kernel.compiled)
        at.phase = "reference"
        reference = None
        if ctx.command != "tune":  # a tune compares configurations, not the reference
            reference = _timed_reference(ctx, rid, checked, built)
        at.phase = "run"
        ctx.step("sample", rid)
        rounds = BenchRounds(
            kernel, case, rid, info, built.kernel, reference, checked.check, work, watch
        )
        time_round(ctx, rounds, args)
        if ctx.kept is not None:
            ctx.kept[rid] = rounds
        if ctx.bench.rounds > 1:
            watch.pause()
            return rounds
        return send_bench(ctx, rounds)
    except USER_ERRORS as exc:
        return _failed(ctx, rid, at.phase, exc)


def _in_turn(ctx: CaseContext) -> Say:
    """A case made ready in its turn says its steps as the request asks, with no count."""

    def say(
        step: Step, rid: str, done: int | None, _total: int | None, /,
        config: ConfigInfo | None = None,
    ) -> None:  # fmt: skip
        if not done:  # the step's start; its end is said by the next step
            ctx.step(step, rid, config)

    return say


def _send_test(
    ctx: CaseContext,
    case: Case,
    rid: str,
    checked: _Checked,
    *,
    watch: Stopwatch,
    info: ConfigInfo | None,
) -> Outcome:
    """`tile test`: the check is the result (with the case's accounting and configuration)."""
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
            captured=case.captured,
        )
    )
    return "passed" if check.passed else "failed"


def next_round(ctx: CaseContext, rounds: BenchRounds, *, last: bool) -> Outcome | BenchRounds:
    """Time one more round of a bench case with fresh inputs; after the last, send its result."""
    phase: Phase = "inputs"
    rounds.watch.resume()
    try:
        args = case_inputs(ctx, rounds.kernel, rounds.case)
        rounds.watch.lap("inputs")
        phase = "run"
        ctx.step("sample", rounds.rid)
        time_round(ctx, rounds, args)
        if last:
            return send_bench(ctx, rounds)
        rounds.watch.pause()
        return rounds
    except USER_ERRORS as exc:
        return _failed(ctx, rounds.rid, phase, exc)


def time_again(ctx: CaseContext, kept: BenchRounds) -> Outcome:
    """A later tune rung (`RunRequest.rungs`): the unit timed once more with fresh inputs and
    the rung's settings (`ctx.bench`), its executable, check and work those of its first
    rung; its result holds this rung's samples and time alone (`next_round`'s last round)."""
    ctx.step("inputs", kept.rid, kept.config)
    outcome = next_round(ctx, replace(kept, watch=Stopwatch(), timings=[]), last=True)
    assert not isinstance(outcome, BenchRounds)  # the last round sends its result
    return outcome


def finish_rounds(ctx: CaseContext, rounds: BenchRounds) -> Outcome:
    """Send the result of the rounds timed so far (the runner stops before the others)."""
    try:
        return send_bench(ctx, rounds)
    except (Exception, SystemExit) as exc:
        return _failed(ctx, rounds.rid, "run", exc)


def _compiler_output(
    ctx: CaseContext,
    kernel: KernelDef,
    case: Case,
    call: tuple[Callable[..., Any], tuple[Any, ...]],
    *,
    watch: Stopwatch,
    at: _Phase,
) -> Outcome:
    """`tile inspect` and `tile build` (and `tile profile`): what the compiler makes is the
    result."""
    fn, dynamic = call
    if ctx.command == "inspect":
        _inspect(ctx, case, fn, dynamic)
        return "passed"
    compiled = aot_compile(fn, dynamic)
    watch.lap("compile")
    if ctx.profile is not None:
        at.phase = "run"
        _profile(ctx, kernel, case, compiled, dynamic)
    at.phase = "outputs"
    return _build(ctx, case, compiled, fn, dynamic)


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
        note = write_build_outputs(
            ctx.output_dir, case.id, stages, fn=fn, args=dynamic, send=ctx.send
        )
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


def _profile(
    ctx: CaseContext, kernel: KernelDef, case: Case, compiled: Compiled, dynamic: tuple[Any, ...]
) -> None:
    """`tile profile`: the calls the request's `profile` asks for, before the BuildResult."""
    from tile_runner._profile import profile_case

    assert ctx.profile is not None
    profile_case(ctx.profile, ctx.output_dir, case.id, call=lambda: compiled.compiled(*dynamic),
                 source_file=kernel.file, send=ctx.send)  # fmt: skip


def _failed(ctx: CaseContext, case_id: str, phase: Phase, exc: BaseException) -> Outcome:
    """Send the Failure (or the skip) for an exception raised while running a case."""
    if isinstance(exc, Skip | Unsupported):
        reason = str(exc.args[0]) if exc.args else "skipped"
        status = "skipped" if isinstance(exc, Skip) else "unsupported"
        name = type(exc).__name__
        ctx.send(
            Failure(case_id=case_id, phase=phase, status=status, error_type=name, message=reason)
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

    phase: Phase


def _check(
    ctx: CaseContext,
    kernel: KernelDef,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    built: Built,
    *,
    watch: Stopwatch,
    at: _Phase,
    gradients: bool = False,
) -> _Checked:
    """Run the kernel once and, with a reference, compare on the device.

    The reference runs on the upcast inputs; when upcasting changed nothing (float32 cases)
    the same executable is timed later. A reference that cannot be traced (host code inside)
    runs as a plain function, as it always could.
    """
    from tile_runner._jaxapi import block_until_ready

    at.phase = "run"
    out = block_until_ready(built.kernel.compiled(*bind_static(fn, args)[1]))
    watch.lap("check")
    if kernel.reference is None:
        return _Checked(None, None, same_inputs=False)
    at.phase = "reference"
    up = upcast(args)
    reference = kernel.check_reference or kernel.reference
    ref_compiled = built.check_reference
    if ref_compiled is not None:
        expected = block_until_ready(ref_compiled(*bind_static(reference, up)[1]))
    else:
        expected = block_until_ready(reference(*up))
    at.phase = "check"
    check = compare(
        out,
        expected,
        lambda dtype: resolve_tolerance(dtype, request=ctx.tolerances, kernel=kernel.tol),
        label=grad_label if gradients else None,
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


def _inspect(
    ctx: CaseContext, case: Case, fn: Callable[..., Any], dynamic: tuple[Any, ...]
) -> None:
    wanted = ctx.inspect_kind
    kinds: tuple[InspectKind, ...] = (
        INSPECT_KINDS if wanted is None or wanted == "all" else (wanted,)
    )
    # The jaxpr and StableHLO views need no compilation (`tile snap` asks only for StableHLO).
    if any(kind in ("hlo", "cost", "memory") for kind in kinds):
        compiled = aot_compile(fn, dynamic)
        stages = Stages(compiled.traced, compiled.lowered, compiled.compiled)
    else:
        stages = lower_only(fn, dynamic)
    for kind in kinds:
        ctx.send(Inspect(case_id=case.id, kind=kind, text=view_text(kind, stages)))
