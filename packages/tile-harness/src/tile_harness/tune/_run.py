"""`tile tune`'s engine: time every configuration of each case's tunables, prune, pick, remember.

One run directory holds the whole tune. Rung 0 times every configuration the kernel's
constraint allows briefly (`[tune] min_runs`, `max_time`); each later rung keeps the fastest
1/eta of every case's correct configurations and times them eta times longer; the finalists
(once no case has more than eta left, or what is left after `[tune] rungs`) get a full
`[bench]` measurement (`_schedule`).
One runner times every rung, keeping its executables (`_live`); a configuration that crashes
it costs only itself, for a fresh runner takes what the rung had left.
The winner of each case (`pick`) goes to `tuning/<device>.json` (the user cache too when asked), where
`tile bench`, `tile test` and tile-pytest find it.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

import tile_protocol as tp
from tile_harness import signals
from tile_harness._errors import ExitCode
from tile_harness._invalid import CheckedResults
from tile_harness._process import LaunchCounter
from tile_harness._record import RunRecorder
from tile_harness._requests import bench_settings, build_request, derive
from tile_harness._run_dir import open_run
from tile_harness._runners import make_session
from tile_harness._sinks import Relay
from tile_harness._undone import is_undone
from tile_harness.tune._files import check_tuning_files, tune_findings, write_tuning
from tile_harness.tune._impls import ImplDecision, impls_markdown, pick_impls
from tile_harness.tune._live import LiveRunner, RungWatch, keeps_runner
from tile_harness.tune._pick import (
    Decision,
    Measured,
    cut_short,
    keep_fastest,
    pick,
    unfinished_cases,
)
from tile_harness.tune._schedule import budget_scale, estimate_s, final_now, rung_settings
from tile_harness.tune._table import TUNE_MD, Tried, progress_line, tried_markdown, tried_rows

if TYPE_CHECKING:
    from tile_config import ResolvedConfig
    from tile_harness._display import Display
    from tile_harness._session import RunnerSession
    from tile_harness._settings import Selection
    from tile_harness._sinks import Sink

__all__ = [
    "TuneEnded",
    "TuneState",
    "Tuner",
    "allowed_counts",
    "budget_scale",
    "estimate_s",
    "finish",
    "parse_units",
    "rung_settings",
]


@dataclass
class TuneState:
    """What the rungs learned: the plan, every unit's latest result, why units were dropped."""

    plan: tp.Plan | None = None
    units: dict[str, tp.TuneUnit] = field(default_factory=dict[str, tp.TuneUnit])
    """The plan's units by id, each id parsed once, as the plan came in (`take_plan`)."""
    latest: dict[str, tp.BenchResult] = field(default_factory=dict[str, tp.BenchResult])
    dropped: dict[str, str] = field(default_factory=dict[str, str])
    finalists: set[str] = field(default_factory=set[str])
    """Units the final rung measured fully: the winner and runner-up come from them."""
    cut_short: int | None = None
    """The rung after which `--budget` ran out: the finalists are that rung's survivors, timed
    only as long as that rung times (None: the finalists had their full measurement)."""
    timings_planned: int = 0
    """Units the rungs planned so far (the live line's total; each rung times its own)."""
    held: dict[str, str] = field(default_factory=dict[str, str])
    """The request's `--tunable` values: the space was narrowed to configurations with them."""

    def take_plan(self, plan: tp.Plan) -> None:
        """The first rung's plan (later rungs plan survivors of it) and its units."""
        self.plan = plan
        self.units = parse_units(plan.cases)

    def case_of(self, unit_id: str) -> str:
        """The case a planned id belongs to (a case without tunables is its own unit)."""
        unit = self.units.get(unit_id)
        return unit.case_id if unit is not None else unit_id

    def units_of(self) -> dict[str, list[tp.CaseInfo]]:
        """Planned units by case id, in plan order."""
        by_case: dict[str, list[tp.CaseInfo]] = {}
        for info in self.plan.cases if self.plan else []:
            by_case.setdefault(self.case_of(info.case_id), []).append(info)
        return by_case


def parse_units(plan: Sequence[tp.CaseInfo]) -> dict[str, tp.TuneUnit]:
    """The units of a tune plan by id; a plain case id (no tunables) is no unit."""
    units: dict[str, tp.TuneUnit] = {}
    for info in plan:
        unit = tp.TuneUnit.parse(info.case_id)
        if unit is not None:
            units[info.case_id] = unit
    return units


class _TuneSink(Relay):
    """The recorder's view of several rung sessions: one plan, each unit's result once.

    Rung results are held back (`_Tune.latest`) and given to the recorder at the end, the
    last rung's result of each unit, so that metrics.jsonl and the report agree.
    """

    def __init__(self, recorder: RunRecorder, state: TuneState) -> None:
        super().__init__(recorder)
        self._recorder = recorder
        self._state = state

    def on_plan(self, plan: tp.Plan) -> None:
        if self._state.plan is None:
            self._state.take_plan(plan)
            self._state.timings_planned = len(plan.cases)
            super().on_plan(plan)
        else:
            # A later rung's units join the count: the live line's "done" counts timings, so
            # its total must too, or it reads "13/8 done".
            self._state.timings_planned += len(plan.cases)
            self._recorder.ui.start(self._state.timings_planned, "tile tune")

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.BenchResult):
            self._state.latest[message.case_id] = message
            self._recorder.ui.advance()
            return
        if isinstance(message, tp.Failure) and message.case_id in self._state.latest:
            # A unit that fails in a later rung is out: its earlier timing no longer stands
            # (and the run records its failure, not that result).
            del self._state.latest[message.case_id]
        super().on_message(message)


def allowed_counts(
    plan: Sequence[tp.CaseInfo], units: Mapping[str, tp.TuneUnit] | None = None
) -> dict[str, int]:
    """Configurations the constraints allow, by case id (cases with tunables only); `units`:
    the plan's units, when they were parsed already (`TuneState.units`)."""
    units = parse_units(plan) if units is None else units
    counts: dict[str, int] = {}
    for info in plan:
        unit = units.get(info.case_id)
        if unit is None:
            continue
        counts.setdefault(unit.case_id, 0)
        if info.skip is None:
            counts[unit.case_id] += 1
    return counts


def small_enough(state: TuneState, survivors: Sequence[str], eta: int) -> bool:
    """`final_now` for the survivors of a rung, counted by case."""
    return final_now(Counter(state.case_of(u) for u in survivors).values(), eta)


def final_settings(resolved: ResolvedConfig) -> tp.BenchSettings:
    """The finalists' full measurement: `[bench]` as configured, in one round."""
    return msgspec.structs.replace(bench_settings(resolved.config), rounds=1)


def measured(state: TuneState, among: set[str] | None = None) -> dict[str, list[Measured]]:
    """The latest result of every unit (of those `among`) as `Measured`, by case id."""
    out: dict[str, list[Measured]] = {}
    for case_id, infos in state.units_of().items():
        for order, info in enumerate(infos):
            result = state.latest.get(info.case_id)
            if result is None or (among is not None and info.case_id not in among):
                continue
            unit = state.units.get(info.case_id)
            out.setdefault(case_id, []).append(
                Measured(
                    unit_id=info.case_id,
                    values=dict(unit.values) if unit is not None else {},
                    samples=list(result.samples),
                    passed=result.check is None or result.check.passed,
                    order=order,
                    is_default=info.default,
                )
            )
    return out


def prune(state: TuneState, timed: set[str], eta: int, rung: int, final: bool) -> list[str]:
    """The units the next rung times: the fastest 1/eta of the correct ones this rung timed."""
    keep: list[str] = []
    for found in measured(state, timed).values():
        kept = found if final else keep_fastest(found, eta)
        kept_ids = {m.unit_id for m in kept}
        for m in found:
            if m.unit_id in kept_ids:
                keep.append(m.unit_id)
            elif m.unit_id not in state.dropped:
                why = "wrong output" if not m.passed else f"pruned after rung {rung}"
                state.dropped[m.unit_id] = why
    return keep


class Tuner:
    """One tune: its run directory and recorder, and the rungs that feed them.

    `display` shows the live progress, `say` one line per rung; `run` returns what was
    decided and written.
    """

    def __init__(
        self,
        resolved: ResolvedConfig,
        display: Display,
        say: Callable[[str], None],
        *,
        output_dir: Path | None,
    ) -> None:
        check_tuning_files(resolved)
        self.resolved = resolved
        self.say = say
        self.recorder = RunRecorder(open_run("tune", resolved, output_dir, sys.argv), ui=display)
        self.state = TuneState()
        self.numbering = LaunchCounter()
        self._live: LiveRunner | None = None

    def run(self, sel: Selection, *, scale: float, budget: float | None) -> TuneEnded:
        """Every rung, each on the survivors of the last; then decide and write."""
        tune = self.resolved.config.tune
        started = time.monotonic()
        # The steps of each unit, for the screen (a QuietDisplay ignores them).
        base = derive(build_request("tune", self.resolved, sel, self.recorder.run_dir),
                      progress=True)  # fmt: skip
        self.state.held = dict(base.tunables)
        try:
            survivors: list[str] | None = None
            for rung in range(tune.rungs + 1):
                final = rung == tune.rungs or (
                    survivors is not None and small_enough(self.state, survivors, tune.eta)
                )
                survivors = self._rung(base, rung, survivors, scale=scale, final=final)
                if final or not survivors:
                    break
                if budget is not None and time.monotonic() - started > budget:
                    # The survivors become the finalists on this rung's shorter timings: a
                    # budgeted tune always decides and writes, and says which cases it cut.
                    self.state.finalists, self.state.cut_short = set(survivors), rung
                    self.say(
                        f"warning: --budget {budget:g} s spent after rung {rung}; picking from "
                        "what was measured"
                    )
                    break
            self._let_go()
        except KeyboardInterrupt:
            self._let_go(stop=True)
            self.recorder.finalize(interrupted="interrupted by Ctrl-C")
            raise
        except signals.Terminated:
            # SIGTERM (a cancelled CI job, a batch system's time limit) saves the run directory
            # as Ctrl-C does.
            self._let_go(stop=True)
            self.recorder.finalize(interrupted="terminated by SIGTERM")
            raise
        return finish(self.resolved, self.recorder, self.state)

    def _rung(
        self, base: tp.RunRequest, rung: int, units: list[str] | None, *, scale: float, final: bool
    ) -> list[str]:
        """Time `units` (None: every one); the units the next rung times."""
        state, resolved = self.state, self.resolved
        settings = final_settings(resolved) if final else rung_settings(resolved, rung, scale)
        self._time(derive(base, bench=settings, case_ids=units))
        timed = set(units) if units is not None else set(state.latest)
        if final:
            state.finalists = timed
        survivors = prune(state, timed, resolved.config.tune.eta, rung, final)
        shown = sorted(state.finalists) if final else survivors
        self.say(progress_line(state.latest, state.finalists, rung=rung, final=final,
                              timed=len(timed), survivors=shown))  # fmt: skip
        return survivors

    def _time(self, request: tp.RunRequest) -> None:
        """One rung: by the runner that timed the last when it waits for the next (`_live`),
        else by a new one that stays for the rungs after; what a runner that ended left of
        the rung, by a fresh runner (as one session per rung)."""
        live, units = self._live, request.case_ids
        if live is not None and live.waiting and units is not None:
            self.state.timings_planned += len(units)
            self.recorder.ui.start(self.state.timings_planned, "tile tune")
            live.go(units, request.bench)
        elif keeps_runner(self.resolved):
            self._let_go()
            rungs_dir = LiveRunner.new_dir()
            watch = RungWatch(self._sink())
            session = self._session(derive(request, rungs=str(rungs_dir)), watch)
            live = self._live = LiveRunner(session, watch, rungs_dir)
            live.start()
        else:
            self._session(request, self._sink()).run()
            return
        if not live.wait():
            self._let_go()
        left = [u for u in units or [] if u not in live.seen]
        if left:
            self._session(derive(request, case_ids=left), self._sink()).run()

    def _sink(self) -> Sink:
        # An invalid result is a failure before a rung can pick it.
        return CheckedResults(_TuneSink(self.recorder, self.state))

    def _session(self, request: tp.RunRequest, sink: Sink) -> RunnerSession:
        log_dir, redactor = self.recorder.run_dir / "logs", self.recorder.writer.redactor
        isolate = self.resolved.config.runner.isolate  # a runner per unit, as bench gives a case
        return make_session(request, self.resolved, sink, log_dir=log_dir, isolate=isolate,
                            numbering=self.numbering, redactor=redactor)  # fmt: skip

    def _let_go(self, *, stop: bool = False) -> None:
        """End the runner that stays between rungs (at once when `stop`: Ctrl-C, SIGTERM)."""
        live, self._live = self._live, None
        if live is not None:
            if stop:
                live.stop()
            else:
                live.close()


@dataclass(frozen=True)
class TuneEnded:
    """A finished tune: each case's decision, the tuning files written, the exit code."""

    decisions: dict[str, Decision]
    written: list[Path]
    run_dir: Path
    planned: int
    failures: list[tp.Failure]
    exit_code: int
    unfinished: dict[str, str] = field(default_factory=dict[str, str])
    """Cases the tune could not finish, each with why: decided on a rung's shorter timings
    when `--budget` ran out, or not decided at all."""
    tried: list[Tried] = field(default_factory=list[Tried])
    """Every configuration planned, what it measured and what became of it (`tune.md`)."""
    impls: list[ImplDecision] = field(default_factory=list[ImplDecision])
    """The implementation chosen at each point of each op with two or more tuned."""


def finish(resolved: ResolvedConfig, recorder: RunRecorder, state: TuneState) -> TuneEnded:
    """Feed the recorder each unit's last result, decide, write the report and tuning files."""
    with recorder.checkpoints.held():  # one checkpoint for the batch, not one per unit
        for info in state.plan.cases if state.plan else []:
            result = state.latest.get(info.case_id)
            if result is not None:
                recorder.on_message(result)
    decisions: dict[str, Decision] = {}
    # `[tune] tie_floor`, not the gate's noise floor: the fastest it can tell apart wins.
    floor, alpha = resolved.config.tune.tie_floor, resolved.config.compare.alpha
    for case_id, found in measured(state, state.finalists).items():
        decision = pick(found, noise_floor_pct=floor, alpha=alpha)
        if decision is not None:
            decisions[case_id] = cut_short(decision, state.cut_short)
    impls = [replace(c, decision=cut_short(c.decision, state.cut_short))
             for c in pick_impls(decisions, state.latest, noise_floor_pct=floor,
                                 alpha=alpha)]  # fmt: skip
    planned = state.plan.cases if state.plan else []
    allowed = allowed_counts(planned, state.units)
    unfinished = unfinished_cases(allowed, decisions, state.cut_short, state.held)
    recorder.results.findings.extend(tune_findings(decisions, state.dropped, unfinished, impls))
    tried = tried_rows(planned, state.units, state.latest, dropped=state.dropped, decisions=decisions,
                       finalists=state.finalists, failures=recorder.results.failures)  # fmt: skip
    recorder.writer.write_text(TUNE_MD, tried_markdown(tried) + impls_markdown(impls),
                              description="configurations tried")  # fmt: skip
    recorder.finalize()
    hello = recorder.results.hello
    written = write_tuning(resolved, decisions, state.latest, hello, recorder.run_id, impls=impls,
                           held=state.held)  # fmt: skip
    failures = list(recorder.results.failures)
    # A configuration that crashes or raises is dropped like a slow one; a unit that was never
    # run, or whose messages were invalid, is work undone.
    if (failures and not decisions) or any(is_undone(f) for f in failures):
        code = int(ExitCode.INFRA)
    else:
        missing = set(allowed) - set(decisions)
        code = int(ExitCode.FAILED) if missing else int(ExitCode.OK)
    return TuneEnded(decisions, list(written), recorder.run_dir, len(recorder.results.planned),
                     failures, code, unfinished, tried, impls)  # fmt: skip
