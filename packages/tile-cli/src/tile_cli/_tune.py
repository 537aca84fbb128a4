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

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

import tile_protocol as tp
from tile_cli._compare import device_slug
from tile_cli._errors import CliError, ExitCode, usage_failure
from tile_cli._escape import escape_controls
from tile_cli._format import fmt_time
from tile_cli._session import Launch, LaunchCounter, RunnerSession
from tile_cli._settings import Selection, build_request, load, runner_python
from tile_cli._tune_pick import Decision, Measured, keep_fastest, pick
from tile_cli._undone import is_undone, undone_lines

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_cli._record import RunRecorder
    from tile_config import ResolvedConfig

__all__ = ["run_tune"]

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


class _TuneSink:
    """The recorder's view of several rung sessions: one plan, each unit's result once.

    Rung results are held back (`_Tune.latest`) and given to the recorder at the end, the
    last rung's result of each unit, so that metrics.jsonl and the report agree.
    """

    def __init__(self, recorder: RunRecorder, state: _Tune) -> None:
        self._recorder = recorder
        self._state = state

    def on_launch(self, launch: Launch) -> None:
        self._recorder.on_launch(launch)

    def on_launch_end(self, launch: Launch) -> None:
        self._recorder.on_launch_end(launch)

    def on_hello(self, hello: tp.Hello) -> None:
        self._recorder.on_hello(hello)

    def on_plan(self, plan: tp.Plan) -> None:
        if self._state.plan is None:
            self._state.plan = plan
            self._recorder.on_plan(plan)

    def on_case_start(self, start: tp.CaseStart) -> None:
        self._recorder.on_case_start(start)

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.BenchResult):
            self._state.latest[message.case_id] = message
            self._recorder.ui.advance()
        else:
            self._recorder.on_message(message)

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        self._recorder.on_noise(event)


def _rung_settings(resolved: ResolvedConfig, rung: int, scale: float) -> tp.BenchSettings:
    """Rung `rung`'s sampling: eta^rung times the first rung's, scaled to fit a budget."""
    t, b = resolved.config.tune, resolved.config.bench
    grow = t.eta**rung
    return tp.BenchSettings(
        warmup_runs=min(b.warmup_runs, 1),
        min_runs=t.min_runs * grow,
        max_runs=max(t.min_runs * grow, min(b.max_runs, t.min_runs * grow * 4)),
        max_time=max(0.005, t.max_time * grow * scale),
        target_precision=b.target_precision,
        timer=b.timer,
        cold=b.cold,
        batch=max(1, min(b.batch, t.min_runs)),
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
    from tile_cli._run import ask_runner
    from tile_cli._ui import make_consoles

    _, err = make_consoles()
    resolved = load(profile, sel.overrides)
    verbose = verbose or resolved.config.output.verbose
    budget = budget if budget is not None else resolved.config.tune.budget
    sink, clean = ask_runner("list", sel, profile, units=True)
    plan = sink.plan.cases if sink.plan else []
    refused = usage_failure(sink.failures)
    if refused is not None:
        raise refused
    for failure in sink.failures:
        err.print(f"error: {failure.phase}: {failure.message}", markup=False)
    if not clean or sink.failures:
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
    return _tune(sel, resolved, output_dir=output_dir, scale=scale, budget=budget,
                 verbose=verbose)  # fmt: skip


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


def _tune(
    sel: Selection,
    resolved: ResolvedConfig,
    *,
    output_dir: Path | None,
    scale: float,
    budget: float | None,
    verbose: int,
) -> int:
    from tile_cli._record import RunRecorder, open_run_directory
    from tile_cli._ui import Ui, make_consoles

    _, err = make_consoles()
    run_dir, writer = open_run_directory("tune", resolved, output_dir)
    ui = Ui(err, verbose=verbose)
    recorder = RunRecorder("tune", resolved, writer, run_dir, ui=ui, stream_json=False,
                           argv=sys.argv)  # fmt: skip
    state = _Tune()
    numbering = LaunchCounter()
    started = time.monotonic()
    base = build_request("tune", resolved, sel, run_dir)
    try:
        survivors: list[str] | None = None
        for rung in range(resolved.config.tune.rungs + 1):
            final = rung == resolved.config.tune.rungs or (
                survivors is not None and _small_enough(state, survivors)
            )
            settings = _final_settings(resolved) if final else _rung_settings(resolved, rung, scale)
            request = msgspec.structs.replace(base, bench=settings, case_ids=survivors)
            _session(request, resolved, recorder, state, numbering).run()
            timed = set(survivors) if survivors is not None else set(state.latest)
            if final:
                state.finalists = timed
            survivors = _prune(state, timed, resolved.config.tune.eta, rung, final)
            _progress(err, state, len(timed), rung, final,
                      sorted(state.finalists) if final else survivors)  # fmt: skip
            if final or not survivors:
                break
            if budget is not None and time.monotonic() - started > budget:
                err.print(f"warning: --budget {budget:g} s spent; picking from what was measured",
                          markup=False)  # fmt: skip
                break
    except KeyboardInterrupt:
        ui.stop()
        recorder.finalize(interrupted="interrupted by Ctrl-C")
        raise
    finally:
        ui.stop()
    return _finish(resolved, recorder, state, run_dir)


def _small_enough(state: _Tune, survivors: Sequence[str]) -> bool:
    """True when no case has more than two configurations left: time to measure them fully."""
    per_case: dict[str, int] = {}
    for unit in survivors:
        case_id = tp.split_unit(unit)[0]
        per_case[case_id] = per_case.get(case_id, 0) + 1
    return all(n <= 2 for n in per_case.values())


def _final_settings(resolved: ResolvedConfig) -> tp.BenchSettings:
    b = resolved.config.bench
    return tp.BenchSettings(
        warmup_runs=b.warmup_runs,
        min_runs=b.min_runs,
        max_runs=b.max_runs,
        min_time=b.min_time,
        max_time=b.max_time,
        target_precision=b.target_precision,
        timer=b.timer,
        cold=b.cold,
        batch=b.batch,
    )


def _session(
    request: tp.RunRequest,
    resolved: ResolvedConfig,
    recorder: RunRecorder,
    state: _Tune,
    numbering: LaunchCounter,
) -> RunnerSession:
    return RunnerSession(
        request,
        python=runner_python(resolved),
        cwd=Path.cwd(),
        env_overrides=resolved.config.runner.env,
        log_dir=recorder.run_dir / "logs",
        sink=_TuneSink(recorder, state),
        case_timeout=resolved.config.runner.case_timeout,
        timeout=resolved.config.runner.timeout,
        numbering=numbering,
    )


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
    err: object, state: _Tune, timed: int, rung: int, final: bool, survivors: Sequence[str]
) -> None:
    """One line per rung: configurations timed, kept, and the best so far."""
    from rich.console import Console

    assert isinstance(err, Console)
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


def _finish(resolved: ResolvedConfig, recorder: RunRecorder, state: _Tune, run_dir: Path) -> int:
    """Feed the recorder each unit's last result, decide, write the tuning files and report."""
    from tile_cli._run import _display  # pyright: ignore[reportPrivateUsage]

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
    recorder.findings.extend(_findings(decisions, state))
    recorder.finalize()
    hello = recorder.hello
    kind = hello.devices[0].device_kind if hello and hello.devices else "unknown"
    written = _write_tuning(resolved, decisions, state, kind, hello, recorder.run_id)
    for case_id, d in decisions.items():
        margin = f", {d.margin:.3f}x over the runner-up" if d.margin else ""
        print(escape_controls(f"{case_id}: {d.winner.unit_id[len(case_id):]} "
              f"{fmt_time(d.winner.median)} ({d.decided_by}{margin})"))  # fmt: skip
    for path in written:
        print(f"tuning file: {_display(path)}", file=sys.stderr)
    print(f"run directory: {_display(run_dir)}", file=sys.stderr)
    for line in undone_lines(len(recorder.planned), recorder.failures):
        print(line, file=sys.stderr)
    # A configuration that crashes or raises is dropped like a slow one; a unit that was never
    # run, or whose messages were invalid, is work undone.
    if (recorder.failures and not decisions) or any(is_undone(f) for f in recorder.failures):
        return int(ExitCode.INFRA)
    missing = set(_allowed_counts(state.plan.cases if state.plan else [])) - set(decisions)
    return int(ExitCode.FAILED) if missing else int(ExitCode.OK)


def _findings(decisions: dict[str, Decision], state: _Tune) -> list[ta.Finding]:
    import tile_artifacts as ta

    out: list[ta.Finding] = []
    for i, (case_id, d) in enumerate(decisions.items(), start=1):
        evidence = [f"winner {d.winner.unit_id}: median {d.winner.median:.6g} s"]
        if d.runner_up is not None:
            evidence.append(f"runner-up {d.runner_up.unit_id}: median {d.runner_up.median:.6g} s")
        dropped = [f"{u}: {why}" for u, why in state.dropped.items() if u.startswith(case_id)]
        evidence.extend(dropped[:20])
        out.append(
            ta.Finding(
                finding_id=f"T{i:03d}",
                severity="info",
                category="tuning",
                title=f"{case_id}: {d.winner.unit_id[len(case_id) :]} ({d.decided_by})",
                evidence=evidence,
                interpretation=d.reason,
            )
        )
    return out


def _write_tuning(
    resolved: ResolvedConfig,
    decisions: dict[str, Decision],
    state: _Tune,
    device_kind: str,
    hello: tp.Hello | None,
    run_id: str,
) -> list[Path]:
    """Merge the winners into `tuning/<device>.json` and the user cache's copy."""
    from tile_downloads import resolve_cache_dir

    if not decisions:
        return []
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries: list[tp.TuningEntry] = []
    for case_id, d in decisions.items():
        result = state.latest[d.winner.unit_id]
        entries.append(
            tp.TuningEntry(
                kernel=result.kernel,
                case_id=case_id,
                signature=(result.config.signature if result.config else None) or "",
                device_kind=device_kind,
                jax_version=hello.jax_version if hello else None,
                jaxlib_version=hello.jaxlib_version if hello else None,
                values=d.winner.values,
                median_s=d.winner.median,
                runner_up=d.runner_up.values if d.runner_up else None,
                margin=d.margin,
                decided_by=d.decided_by,
                tuned_at=now,
                run_id=run_id,
            )
        )
    name = f"{device_slug(device_kind)}.json"
    targets = [resolved.resolve_path(resolved.config.tune.dir) / name,
               resolve_cache_dir() / "tuning" / name]  # fmt: skip
    for path in targets:
        _merge_into(path, device_kind, entries)
    return targets


def _merge_into(path: Path, device_kind: str, entries: list[tp.TuningEntry]) -> None:
    """Replace the entries of the same cases in `path` (created if missing), atomically."""
    old: list[tp.TuningEntry] = []
    if path.exists():
        try:
            old = list(tp.decode_tuning(path.read_bytes()).entries)
        except (OSError, tp.DecodeError) as exc:
            raise CliError(
                f"cannot update the tuning file `{path}`: {exc}",
                hint="fix or remove it; `tile tune` rewrites it with this run's winners",
                code=ExitCode.INFRA,
            ) from None
    new_ids = {e.case_id for e in entries}
    merged = [e for e in old if e.case_id not in new_ids] + entries
    doc = tp.TuningFile(device_kind=device_kind, entries=merged)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(tp.encode_tuning(doc))
        tmp.replace(path)
    except OSError as exc:
        raise CliError(
            f"cannot write the tuning file `{path}`: {exc.strerror or exc}",
            hint="check that the directory is writable (`[tune] dir` in tile.toml)",
            code=ExitCode.INFRA,
        ) from None
