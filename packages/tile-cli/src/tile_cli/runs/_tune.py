"""`tile tune`: time every configuration of each case's tunables, prune, pick, remember.

One run directory holds the whole tune. Rung 0 times every configuration the kernel's
constraint allows briefly (`[tune] min_runs`, `max_time`); each later rung keeps the fastest
1/eta of every case's correct configurations and times them eta times longer; the finalists
(at most two a case, or what is left after `[tune] rungs`) get a full `[bench]` measurement.
Each rung is one runner session, so a configuration that crashes its runner costs only itself.
The winner of each case (`_tune_pick.pick`) goes to `tuning/<device>.json` and the user cache,
where `tile bench`, `tile test` and library use find it.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

import tile_protocol as tp
from tile_cli.terminal._escape import escape_controls
from tile_harness import (
    CliError,
    ExitCode,
    LaunchCounter,
    Relay,
    Selection,
    bench_settings,
    build_request,
    derive,
    fmt_time,
    is_undone,
    make_session,
    resolve_config,
    undone_lines,
)
from tile_harness.tune import Decision, Measured, keep_fastest, pick

if TYPE_CHECKING:
    from rich.console import Console

    from tile_config import ResolvedConfig
    from tile_harness import RunRecorder

__all__ = ["estimate_s", "run_tune"]

_RUNNER_START_S = 3.0  # assumed per rung when no earlier run says (JAX import and devices)
_UNIT_OVERHEAD_S = 0.5  # assumed compile + check + bookkeeping of one configuration


@dataclass
class _Tune:
    """What the rungs learned: the plan, every unit's latest result, why units were dropped."""

    plan: tp.Plan | None = None
    latest: dict[str, tp.BenchResult] = field(default_factory=dict[str, tp.BenchResult])
    dropped: dict[str, str] = field(default_factory=dict[str, str])
    finalists: set[str] = field(default_factory=set[str])
    """Units the final rung measured fully: the winner and runner-up come from them."""

    def units_of(self) -> dict[str, list[tp.CaseInfo]]:
        """Planned units by case id, in plan order."""
        by_case: dict[str, list[tp.CaseInfo]] = {}
        for info in self.plan.cases if self.plan else []:
            by_case.setdefault(tp.split_unit(info.case_id)[0], []).append(info)
        return by_case


class _TuneSink(Relay):
    """The recorder's view of several rung sessions: one plan, each unit's result once.

    Rung results are held back (`_Tune.latest`) and given to the recorder at the end, the
    last rung's result of each unit, so that metrics.jsonl and the report agree.
    """

    def __init__(self, recorder: RunRecorder, state: _Tune) -> None:
        super().__init__(recorder)
        self._recorder = recorder
        self._state = state

    def on_plan(self, plan: tp.Plan) -> None:
        if self._state.plan is None:
            self._state.plan = plan
            super().on_plan(plan)

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.BenchResult):
            self._state.latest[message.case_id] = message
            self._recorder.ui.advance()
        else:
            super().on_message(message)


def _rung_settings(resolved: ResolvedConfig, rung: int, scale: float) -> tp.BenchSettings:
    """Rung `rung`'s sampling: eta^rung times the first rung's, scaled to fit a budget; the
    rest (timer, cold, precision, `[machine] l2_bytes`) as `tile bench` samples."""
    t, b = resolved.config.tune, resolved.config.bench
    grow = t.eta**rung
    return msgspec.structs.replace(
        bench_settings(resolved.config),
        warmup_runs=min(b.warmup_runs, 1),
        min_runs=t.min_runs * grow,
        max_runs=max(t.min_runs * grow, min(b.max_runs, t.min_runs * grow * 4)),
        max_time=max(0.005, t.max_time * grow * scale),
        batch=max(1, min(b.batch, t.min_runs)),
        rounds=1,  # a rung is one pass; the finalists are timed as `tile bench` would
    )


def estimate_s(resolved: ResolvedConfig, counts: Sequence[int], scale: float = 1.0) -> float:
    """Wall seconds a tune of cases with `counts` allowed configurations should take."""
    t, b = resolved.config.tune, resolved.config.bench
    total, alive = 0.0, list(counts)
    for rung in range(t.rungs):
        if all(n <= 2 for n in alive):
            break
        per = _UNIT_OVERHEAD_S + _rung_settings(resolved, rung, scale).max_time
        total += _RUNNER_START_S + per * sum(alive)
        alive = [max(1, math.ceil(n / t.eta)) if n > 2 else n for n in alive]
    return total + _RUNNER_START_S + (_UNIT_OVERHEAD_S + b.max_time) * sum(min(n, 2) for n in alive)


def _budget_scale(resolved: ResolvedConfig, counts: Sequence[int], budget: float | None) -> float:
    """How much shorter the rungs' sampling must be to fit `budget` (1.0: not at all)."""
    if budget is None or estimate_s(resolved, counts) <= budget:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(30):  # bisection: estimate_s grows with the scale
        mid = (low + high) / 2
        low, high = (mid, high) if estimate_s(resolved, counts, mid) <= budget else (low, mid)
    if low <= 0.05:
        raise CliError(
            f"--budget {budget:g} s is too short: even minimal sampling needs about "
            f"{estimate_s(resolved, counts, 0.05):.0f} s for {sum(counts)} configurations",
            hint="raise --budget, or tune fewer cases (`-k`, `--kernel`) or fewer tunable values",
            code=ExitCode.USAGE,
        )
    return low


def run_tune(
    sel: Selection,
    *,
    profile: str | None,
    output_dir: Path | None,
    budget: float | None,
    dry_run: bool,
    verbose: int,
) -> int:
    """Tune every selected case; exit 0 when each got a winner, else the usual codes."""
    from tile_cli.terminal._ui import make_consoles
    from tile_harness import ask

    _, err = make_consoles()
    resolved = resolve_config(profile, sel.overrides)
    verbose = verbose or resolved.config.output.verbose
    budget = budget if budget is not None else resolved.config.tune.budget
    answer, clean = ask("list", resolved, sel, units=True)
    plan = answer.cases
    if answer.unusable(functools.partial(err.print, markup=False), clean=clean):
        return int(ExitCode.INFRA)
    allowed = _allowed_counts(plan)
    if not allowed:
        raise CliError(
            "no selected case has a kernel with tunables",
            hint="declare `tunables=tile.axes(...)` on the kernel, or widen `-k`/`--kernel`",
            code=ExitCode.USAGE,
        )
    scale = _budget_scale(resolved, list(allowed.values()), budget)
    ruled_out = sum(1 for c in plan if c.skip is not None)
    line = (
        f"tile tune: {len(allowed)} cases, {sum(allowed.values())} configurations "
        f"({ruled_out} ruled out by constraints); estimated "
        f"{estimate_s(resolved, list(allowed.values()), scale):.0f} s"
    )
    if dry_run:
        print(line)
        for case_id, n in allowed.items():
            print(escape_controls(f"  {case_id}: {n} configurations"))
        return int(ExitCode.OK)
    err.print(line, markup=False)
    tuner = _Tuner(resolved, err, output_dir=output_dir, verbose=verbose)
    return tuner.run(sel, scale=scale, budget=budget)


def _allowed_counts(plan: Sequence[tp.CaseInfo]) -> dict[str, int]:
    """Configurations the constraints allow, by case id (cases with tunables only)."""
    counts: dict[str, int] = {}
    for info in plan:
        case_id, values = tp.split_unit(info.case_id)
        if values is None:
            continue
        counts.setdefault(case_id, 0)
        if info.skip is None:
            counts[case_id] += 1
    return counts


class _Tuner:
    """One tune: its run directory and recorder, and the rungs that feed them."""

    def __init__(
        self, resolved: ResolvedConfig, err: Console, *, output_dir: Path | None, verbose: int
    ) -> None:
        from tile_cli.terminal._ui import Ui
        from tile_harness import RunRecorder, open_run

        self.resolved = resolved
        self.err = err
        self.ui = Ui(err, verbose=verbose)
        self.recorder = RunRecorder(open_run("tune", resolved, output_dir, sys.argv), ui=self.ui,
                                    stream_json=False)  # fmt: skip
        self.state = _Tune()
        self.numbering = LaunchCounter()

    def run(self, sel: Selection, *, scale: float, budget: float | None) -> int:
        """Every rung, each on the survivors of the last; then decide and write."""
        tune = self.resolved.config.tune
        started = time.monotonic()
        base = build_request("tune", self.resolved, sel, self.recorder.run_dir)
        try:
            survivors: list[str] | None = None
            for rung in range(tune.rungs + 1):
                final = rung == tune.rungs or (survivors is not None and _small_enough(survivors))
                survivors = self._rung(base, rung, survivors, scale=scale, final=final)
                if final or not survivors:
                    break
                if budget is not None and time.monotonic() - started > budget:
                    self.err.print(f"warning: --budget {budget:g} s spent; picking from what "
                                   "was measured", markup=False)  # fmt: skip
                    break
        except KeyboardInterrupt:
            self.ui.stop()
            self.recorder.finalize(interrupted="interrupted by Ctrl-C")
            raise
        finally:
            self.ui.stop()
        return _finish(self.resolved, self.recorder, self.state)

    def _rung(
        self, base: tp.RunRequest, rung: int, units: list[str] | None, *, scale: float, final: bool
    ) -> list[str]:
        """Time `units` (None: every one) in one session; the units the next rung times."""
        state, resolved = self.state, self.resolved
        settings = _final_settings(resolved) if final else _rung_settings(resolved, rung, scale)
        request = derive(base, bench=settings, case_ids=units)
        sink = _TuneSink(self.recorder, state)
        log_dir = self.recorder.run_dir / "logs"
        make_session(request, resolved, sink, log_dir=log_dir, numbering=self.numbering).run()
        timed = set(units) if units is not None else set(state.latest)
        if final:
            state.finalists = timed
        survivors = _prune(state, timed, resolved.config.tune.eta, rung, final)
        shown = sorted(state.finalists) if final else survivors
        _progress(self.err, state, rung=rung, final=final, timed=len(timed), survivors=shown)
        return survivors


def _small_enough(survivors: Sequence[str]) -> bool:
    """True when no case has more than two configurations left: time to measure them fully."""
    per_case: dict[str, int] = {}
    for unit in survivors:
        case_id = tp.split_unit(unit)[0]
        per_case[case_id] = per_case.get(case_id, 0) + 1
    return all(n <= 2 for n in per_case.values())


def _final_settings(resolved: ResolvedConfig) -> tp.BenchSettings:
    """The finalists' full measurement: `[bench]` as configured, in one round."""
    return msgspec.structs.replace(bench_settings(resolved.config), rounds=1)


def _measured(state: _Tune, among: set[str] | None = None) -> dict[str, list[Measured]]:
    """The latest result of every unit (of those `among`) as `Measured`, by case id."""
    out: dict[str, list[Measured]] = {}
    for case_id, infos in state.units_of().items():
        for order, info in enumerate(infos):
            result = state.latest.get(info.case_id)
            if result is None or (among is not None and info.case_id not in among):
                continue
            values = tp.split_unit(info.case_id)[1] or {}
            out.setdefault(case_id, []).append(
                Measured(
                    unit_id=info.case_id,
                    values=values,
                    samples=list(result.samples),
                    passed=result.check is None or result.check.passed,
                    order=order,
                    is_default=info.default,
                )
            )
    return out


def _prune(state: _Tune, timed: set[str], eta: int, rung: int, final: bool) -> list[str]:
    """The units the next rung times: the fastest 1/eta of the correct ones this rung timed."""
    keep: list[str] = []
    for measured in _measured(state, timed).values():
        kept = measured if final else keep_fastest(measured, eta)
        kept_ids = {m.unit_id for m in kept}
        for m in measured:
            if m.unit_id in kept_ids:
                keep.append(m.unit_id)
            elif m.unit_id not in state.dropped:
                why = "wrong output" if not m.passed else f"pruned after rung {rung}"
                state.dropped[m.unit_id] = why
    return keep


def _progress(
    err: Console, state: _Tune, *, rung: int, final: bool, timed: int, survivors: Sequence[str]
) -> None:
    """One line per rung (`final`: the finalists' measurement): configurations timed, kept,
    and the best so far."""
    best = min(
        (r for r in state.latest.values() if r.check is None or r.check.passed),
        key=lambda r: r.stats.median,
        default=None,
    )
    if final:
        text = f"final: {len(survivors)} finalists measured with the [bench] settings"
    else:
        text = f"rung {rung}: {timed} configurations timed, {len(survivors)} kept"
    if best is not None:
        text += f"; fastest so far {best.case_id} {fmt_time(best.stats.median)}"
    # soft_wrap: a long case id stays on one line, whole, whatever the terminal's width.
    err.print(text, markup=False, soft_wrap=True)


def _finish(resolved: ResolvedConfig, recorder: RunRecorder, state: _Tune) -> int:
    """Feed the recorder each unit's last result, decide, write the tuning files and report."""
    from tile_cli.terminal._render import display_path
    from tile_harness.tune import tune_findings, write_tuning

    with recorder.checkpoints.held():  # one checkpoint for the batch, not one per unit
        for info in state.plan.cases if state.plan else []:
            result = state.latest.get(info.case_id)
            if result is not None:
                recorder.on_message(result)
    decisions: dict[str, Decision] = {}
    cfg = resolved.config.compare
    for case_id, measured in _measured(state, state.finalists).items():
        decision = pick(measured, noise_floor_pct=cfg.noise_floor, alpha=cfg.alpha)
        if decision is not None:
            decisions[case_id] = decision
    recorder.results.findings.extend(tune_findings(decisions, state.dropped))
    recorder.finalize()
    hello = recorder.results.hello
    written = write_tuning(resolved, decisions, state.latest, hello, recorder.run_id)
    for case_id, d in decisions.items():
        margin = f", {d.margin:.3f}x over the runner-up" if d.margin else ""
        print(escape_controls(f"{case_id}: {d.winner.unit_id[len(case_id):]} "
              f"{fmt_time(d.winner.median)} ({d.decided_by}{margin})"))  # fmt: skip
    for path in written:
        print(f"tuning file: {display_path(path)}", file=sys.stderr)
    print(f"run directory: {display_path(recorder.run_dir)}", file=sys.stderr)
    failures = recorder.results.failures
    for line in undone_lines(len(recorder.results.planned), failures):
        print(line, file=sys.stderr)
    # A configuration that crashes or raises is dropped like a slow one; a unit that was never
    # run, or whose messages were invalid, is work undone.
    if (failures and not decisions) or any(is_undone(f) for f in failures):
        return int(ExitCode.INFRA)
    missing = set(_allowed_counts(state.plan.cases if state.plan else [])) - set(decisions)
    return int(ExitCode.FAILED) if missing else int(ExitCode.OK)
