"""The body of one run after Hello: discovery, the plan, and every case in order."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from tile_protocol import CaseInfo as ProtoCaseInfo
from tile_protocol import (
    CaseSpec,
    ConfigInfo,
    Failure,
    InputFile,
    KernelInfo,
    Log,
    Plan,
    Progress,
    Rung,
    RungDone,
    RunRequest,
    StateChange,
    StateDiff,
    Step,
)
from tile_protocol import CaseStart as ProtoCaseStart
from tile_runner._batches import Batches
from tile_runner._isolation import StateGuard, forces_restart, left_changed
from tile_runner._stdout import ProtocolWriter

if TYPE_CHECKING:  # imported lazily: JAX comes with them
    from tile_runner._context import CaseContext
    from tile_runner._plan import Plan as RunnerPlan
    from tile_runner._plan import Unit
    from tile_runner._rounds import BenchRounds

__all__ = ["Session"]


def _ruled_out(kernel: Any, case: Any, unit: dict[str, str] | None) -> str | None:
    """Why the kernel's constraint rules out the unit's configuration, or None."""
    if unit is None or kernel.tunables is None:
        return None
    from tile_runner._axes import format_value

    for config, reason in kernel.tunables.configs(case):
        if {k: format_value(v) for k, v in config.items()} == unit:
            return reason
    return None


def _is_default(kernel: Any, case: Any, unit: dict[str, str] | None) -> bool:
    """Whether the unit's configuration is what the case runs untuned (`Tunables.default_for`)."""
    if unit is None or kernel.tunables is None:
        return False
    from tile_runner._axes import format_value
    from tile_runner._errors import Skip

    try:
        default = kernel.tunables.default_for(case)
    except Skip:  # the constraint allows no configuration of this case
        return False
    return {k: format_value(v) for k, v in default.items()} == unit


class Session:
    """The body of one run after Hello: discovery, plan, cases."""

    def __init__(
        self, writer: ProtocolWriter, request: RunRequest, backend: str, devices: list[Any]
    ) -> None:
        self.writer = writer
        self.request = request
        self.backend = backend
        self.devices = devices
        self.counts = {"cases": 0, "passed": 0, "failed": 0, "skipped": 0}
        self.current: str | None = None
        self.restart: str | None = None
        """Why this runner stopped before the rest of its plan (see `_isolation`)."""

    def log(self, level: Any, message: str, case_id: str | None = None) -> None:
        self.writer.send(Log(level=level, message=message, case_id=case_id))

    def run(self) -> bool:
        from tile_runner._discover import discover

        request = self.request
        self._prepare_process()
        ok = True
        failures = discover(request.modules, request.paths, request.plugins, request.project_root)
        for failure in failures:
            self.writer.send(failure)
            ok = False
        plan = self._send_plan()
        for failure in plan.failures:
            self.writer.send(failure)
            ok = False
        if request.command == "list":
            self.counts["cases"] = len(plan.units)
            return ok
        ctx = self._case_context()
        if request.progress:
            ctx.step = self._step
        self.counts["cases"] = len(plan.units)
        rounds = request.bench.rounds if request.command == "bench" else 1
        later = request.rungs if request.command == "tune" else None
        if later is not None:
            ctx.kept = {}
        guard = StateGuard()  # the process as the first case finds it
        self._run_cases(ctx, plan.units, rounds, guard)
        if later is not None:
            self._later_rungs(ctx, later, guard)
        if self.counts["failed"]:
            ok = False
        return ok

    def _prepare_process(self) -> None:
        """The compile cache (and its log, when explained) and the data context's downloads."""
        from tile_runner._cache_log import watch_cache_log
        from tile_runner._compile import enable_persistent_cache
        from tile_runner._inputs import data_context

        request = self.request
        if request.jax_cache_dir:
            refused = enable_persistent_cache(request.jax_cache_dir)
            if refused:
                self.log("warning", refused)
            elif request.cache_explain:
                watch_cache_log(request.jax_cache_dir, lambda event: self.writer.send(
                    msgspec.structs.replace(event, case_id=self.current)))  # fmt: skip
        context = data_context()
        context.downloads = dict(request.downloads)
        context.on_use = lambda name, path: self.writer.send(
            InputFile(name=name, path=str(path), case_id=self.current)
        )

    def _send_plan(self) -> RunnerPlan:
        """Plan the cases the request selects and send the Plan message (and its warnings)."""
        from tile_runner._api import registry
        from tile_runner._ops import op_info
        from tile_runner._plan import make_plan

        request = self.request
        suite = "test" if request.command == "test" else "bench"
        specs, failures = self._captured()
        plan = make_plan(
            suite,
            self.backend,
            kernels=request.kernels,
            filters=request.filters,
            case_ids=request.case_ids,
            axes=request.axes,
            units=request.command == "tune" or request.units,
            tunables=request.tunables,
            modes=request.modes,
            specs=specs,
        )
        plan.failures[:0] = failures
        for warning in plan.warnings:
            self.log("warning", warning)
        listed: list[KernelInfo] = []
        if request.command == "list":
            from tile_runner._listing import kernel_infos

            listed = kernel_infos([d for d, _ in plan.cases], self.backend, request)
        kernels = registry().values()
        self.writer.send(
            Plan(
                command=request.command,
                cases=[
                    ProtoCaseInfo(
                        case_id=rid,
                        kernel=c.kernel,
                        params=c.str_params,
                        skip=_ruled_out(k, c, u),
                        default=_is_default(k, c, u),
                        op=op_info(k, kernels),
                        captured=c.captured,
                    )
                    for k, c, u, rid in plan.units
                ],
                kernels=listed,
            )
        )
        return plan

    def _captured(self) -> tuple[list[CaseSpec] | None, list[Failure]]:
        """The cases to plan instead of the declared ones: `--from`'s captured calls (their
        warnings logged), else the request's own; a failure when the capture gave none."""
        from tile_runner._capture import CaptureError, capture

        request = self.request
        if request.capture is None:
            return request.cases, []
        try:
            captured = capture(request.capture, self.backend)
        except CaptureError as exc:
            print(f"tile: --from {request.capture}: {exc!r}", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)
            return [], [Failure(phase="plan", error_type=exc.error_type, message=exc.args[0])]
        for warning in captured.unmatched:
            self.log("warning", f"`--from {request.capture}`: {warning}; it is left out")
        return captured.cases, []

    def _case_context(self) -> CaseContext:
        """What every case shares: the timer, the device's peaks, the tuned configurations."""
        from tile_runner._context import CaseContext
        from tile_runner._cpu import cpu_model
        from tile_runner._measure import resolve_timer
        from tile_runner._peaks import builtin_peaks
        from tile_runner._tuning_index import TuningIndex

        request = self.request
        device = self.devices[0] if self.devices else None
        peaks = request.peaks
        # A CPU gets peaks only from `[machine]`: a calibration cached by an older tile is not
        # used (docs/roofline.md says why).
        if peaks is None and device is not None and device.platform != "cpu":
            from tile_runner._device import calibrated_peaks

            builtin = builtin_peaks(device.device_kind)
            peaks = calibrated_peaks(device.device_kind, builtin) or builtin
        timer = resolve_timer(request.bench.timer, self.backend, lambda m: self.log("warning", m))
        return CaseContext(
            command=request.command,
            seed=request.test.seed,
            bench=request.bench.share(self.backend),
            tolerances=dict(request.test.tolerances),
            timer=timer,
            peaks=peaks,
            send=self.writer.send,
            warn=lambda message, case_id: self.log("warning", message, case_id),
            inspect_kind=request.inspect_kind,
            output_dir=request.output_dir if request.command == "build" else None,
            tuning=TuningIndex.load(
                request.tuning_files,
                user_paths=request.user_tuning_files,
                device_kind=device.device_kind if device is not None else "unknown",
                device_model=cpu_model()
                if device is not None and device.platform == "cpu"
                else None,
                jax_version=self._jax_version(),
                warn=lambda message: self.log("warning", message),
            ),
            tunables=dict(request.tunables),
            profile=request.profile if request.command == "build" else None,
            prior=dict(request.prior),
        )

    def _step(self, step: Step, case_id: str, config: ConfigInfo | None = None) -> None:
        """A case enters a step: say so (`RunRequest.progress`), for the screen."""
        self.writer.send(Progress(step=step, case_id=case_id, config=config))

    def batch_step(
        self, step: Step, case_id: str, done: int | None, total: int | None, /,
        config: ConfigInfo | None = None,
    ) -> None:  # fmt: skip
        """A step of a batch made ready ahead: said whatever `progress` asks, for no case is
        in flight there and the CLI bounds each silence by the case timeout (`_ahead`)."""
        self.writer.send(Progress(step=step, case_id=case_id, done=done, total=total,
                                  config=config))  # fmt: skip

    @staticmethod
    def _jax_version() -> str | None:
        import jax

        return jax.__version__

    def _run_cases(
        self, ctx: CaseContext, cases: list[Unit], rounds: int, guard: StateGuard
    ) -> None:
        """Every case once; a bench in rounds goes over all cases `rounds` times, in order.

        In the first round, cases are made ready in batches ahead of their turn (`_ahead`):
        a batch's compilations run together, then its cases are checked and timed one at a
        time. A case's result is sent after its last round, so a runner that dies in round k
        loses only the rounds of cases not yet finished; the CLI blames the case in flight
        and restarts the others from their first round.
        """
        from tile_runner._ahead import hooks_left_by
        from tile_runner._case import finish_rounds, next_round, run_case
        from tile_runner._rounds import BenchRounds, wait_turn

        total = len(cases)
        pending: dict[str, BenchRounds] = {}
        for round_ in range(1, rounds + 1):
            if self.request.pace is not None and (round_ == 1 or pending):
                wait_turn(self.request.pace, round_)
            ahead = Batches(self, ctx, cases, guard) if round_ == 1 else None
            for index, (kernel, case, unit, rid) in enumerate(cases):
                if round_ > 1 and rid not in pending:
                    continue  # failed or skipped in an earlier round
                ready = ahead.ready(index) if ahead is not None else None
                if self.restart is not None:
                    return  # making a batch ready changed what cannot be put back
                self.current = rid
                start = ProtoCaseStart(
                    case_id=rid, index=index, total=total, round=round_ if rounds > 1 else None
                )
                self.writer.send(start)
                if round_ == 1:
                    outcome = run_case(ctx, kernel, case, unit, ready)
                else:
                    outcome = next_round(ctx, pending.pop(rid), last=round_ == rounds)
                del ready
                self.current = None
                earlier = ahead.changes.pop(rid, []) if ahead is not None else []
                earlier += hooks_left_by(rid)  # on compile threads, ahead or in its turn
                if self._changed_state(guard, rid, earlier) and isinstance(outcome, BenchRounds):
                    # The fresh runner will not time this case again: report the rounds it had.
                    outcome = finish_rounds(ctx, outcome)
                if isinstance(outcome, BenchRounds):
                    pending[rid] = outcome
                else:
                    self.counts[outcome] += 1
                if self.restart is not None:
                    return

    def _later_rungs(self, ctx: CaseContext, rungs_dir: str, guard: StateGuard) -> None:
        """A tune's later rungs in this runner (`RunRequest.rungs`): after each rung it says so
        and waits for the CLI's next; the units named are timed again with what `ctx.kept`
        holds of them, and the others are let go (their executables freed)."""
        from tile_runner._ahead import hooks_left_by
        from tile_runner._case import time_again
        from tile_runner._rounds import wait_rung

        kept: dict[str, BenchRounds] = ctx.kept if ctx.kept is not None else {}
        rung = 0
        while self.restart is None:
            self.writer.send(RungDone(rung=rung))
            rung += 1
            order = wait_rung(rungs_dir, rung)
            for rid in set(kept) - set(order.case_ids):
                del kept[rid]
            if not order.case_ids:
                return
            ids = [rid for rid in order.case_ids if rid in kept]  # a restarted runner's own
            self.writer.send(Rung(rung=rung, case_ids=ids))
            at_rung = replace(ctx, bench=order.bench.share(self.backend))
            for index, rid in enumerate(ids):
                self.current = rid
                self.writer.send(ProtoCaseStart(case_id=rid, index=index, total=len(ids)))
                time_again(at_rung, kept[rid])
                self.current = None
                if self._changed_state(guard, rid, hooks_left_by(rid)):
                    return

    def _changed_state(
        self, guard: StateGuard, rid: str, earlier: Sequence[StateDiff] = ()
    ) -> bool:
        """Compare the process with its state before the first case; True to stop here.

        What the case changed is restored where safe and reported against it; what cannot be
        restored ends this runner after the case (`Done.restart`), so no later case runs in
        a process it changed.
        """
        try:
            diffs, restart = guard.check()
        except Exception as exc:  # the guard must never cost a case its result
            self.log("warning", f"could not compare the process state after a case: {exc!r}", rid)
            return False
        if earlier:  # what the case changed while its inputs were made ahead of its turn
            diffs = [*earlier, *(d for d in diffs if d not in earlier)]  # a thread still runs
            restart = restart or any(forces_restart(d) for d in earlier)
        if not diffs:
            return False
        self.writer.send(StateChange(case_id=rid, changes=diffs, restart=restart))
        if restart:
            self.restart = f"case `{rid}` changed what cannot be put back ({left_changed(diffs)})"
        return restart
