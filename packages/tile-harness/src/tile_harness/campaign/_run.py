"""Running a campaign: its units one `tile bench` process at a time, resumable.

Each unit attempt is a child `tile bench -o units/UNIT/attempt-N` process: a crash of any kind
stays inside it, its run directory is an ordinary one, and its command line is the record of
how it was configured. The campaign runs the units in plan order, skips those whose result is
already on disk, checkpoints before and after each, and compares the variants at the end.
On Linux a child gets SIGTERM when the campaign dies (even by SIGKILL), so it finalizes its
run directory as `interrupted` instead of running on unwatched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import tile_artifacts as ta
from tile_harness._errors import CliError, ExitCode, stopped_code
from tile_harness._run_dir import point_latest
from tile_harness.campaign._dir import CampaignDir
from tile_harness.campaign._plan import CampaignSetup
from tile_harness.campaign._report import compare_variants, summarize, unit_records
from tile_harness.campaign._units import Inspector, attempt_dir, attempt_log
from tile_protocol.format import format_duration as fmt_duration

__all__ = ["CampaignRun", "Ended"]

STOP_WAIT_S = 60.0
"""How long a stopped unit may take to finalize its run directory before it is killed."""
SIGINT_GRACE_S = 5.0
"""How long a child that got the terminal's Ctrl-C too may take to stop before it gets ours."""
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook that asks Linux to SIGTERM the child when the campaign dies."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the campaign died before the request was in place
            os.kill(os.getpid(), signal.SIGTERM)

    return hook


class CampaignRun:
    """One `tile campaign run`: the loop over units, the checkpoints, the end.

    Progress lines go to `say`; each unit runs `unit_command` + the unit's `tile bench`
    arguments (default: this Python's `-m tile_cli`, the `tile` command).
    """

    def __init__(
        self,
        setup: CampaignSetup,
        camp: CampaignDir,
        say: Callable[[str], None],
        *,
        over_budget: bool,
        started: float,
        unit_command: Sequence[str] = (sys.executable, "-m", "tile_cli"),
    ) -> None:
        self.setup = setup
        self.plan = setup.plan
        self.camp = camp
        self.say = say
        self.over_budget = over_budget
        self.started = started
        self.unit_command = list(unit_command)
        self.inspector = Inspector(camp.path, camp.redactor)
        self.spent = 0.0
        """Seconds spent running units in this invocation (what the wall-time budget limits)."""

    def run(self) -> Ended:
        """Run every unit that has no result yet; the final report and how the run ended."""
        self.camp.write_start(self.setup)
        self.camp.event(
            "campaign_started",
            f"campaign {self.plan.campaign}",
            units=len(self.plan.units),
            smoke=self.plan.smoke,
        )
        stopped: str | None = None
        budget_stop: str | None = None
        try:
            budget_stop = self._units()
        except KeyboardInterrupt:
            stopped = "interrupted by Ctrl-C"
        except BaseException as exc:
            if type(exc).__name__ != "_Terminated":
                raise
            stopped = "terminated by SIGTERM"
        report = self._checkpoint(stopped or budget_stop, final=stopped is None)
        # Each unit's `tile bench -o` moved `.tile/latest`; the campaign's run is the campaign.
        point_latest(self.camp.path, self.setup.resolved)
        return Ended(report, stopped, budget_stop)

    def _units(self) -> str | None:
        """Run every unit without a result; the reason when the wall-time budget ran out."""
        total = len(self.plan.units)
        budget = self.plan.budget.wall_time_s
        for index, unit in enumerate(self.plan.units, start=1):
            records, _ = unit_records(self.plan, self.inspector)
            record = next(r for r in records if r.unit_id == unit.unit_id)
            if record.result_attempt is not None:
                self.say(
                    f"[{index}/{total}] {unit.unit_id}: done in attempt "
                    f"{record.result_attempt}, skipped"
                )
                self.camp.event(
                    "unit_skipped",
                    f"{unit.unit_id} is done",
                    unit=unit.unit_id,
                    attempt=record.result_attempt,
                )
                continue
            if budget is not None and not self.over_budget and self.spent >= budget:
                return (
                    f"the wall-time budget of {fmt_duration(budget)} is spent; run again to go on"
                )
            self._attempt(index, unit, 1 + max((a.attempt for a in record.attempts), default=0))
        return None

    def _attempt(self, index: int, unit: ta.campaign.PlannedUnit, number: int) -> None:
        rel, log = attempt_dir(unit.unit_id, number), attempt_log(unit.unit_id, number)
        log_path = self.camp.path / log
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.touch()
        self.say(
            f"[{index}/{len(self.plan.units)}] {unit.unit_id}: attempt {number}, "
            f"{len(unit.case_ids)} cases, estimated "
            f"{fmt_duration(unit.estimate.total_s)}"
        )
        self.camp.event(
            "unit_started",
            f"{unit.unit_id} attempt {number}",
            command_id=f"{unit.unit_id}/attempt-{number}",
            unit=unit.unit_id,
            attempt=number,
            estimate=unit.estimate.model_dump(),
        )
        # Nothing of the campaign's own is written from here until the unit ends: if the
        # campaign is killed meanwhile, this checkpoint (which records the attempt) stands.
        self._checkpoint(
            f"in progress: {unit.unit_id} attempt {number} running (if this "
            "stays, the campaign was killed: run it again to resume)",
            final=False,
        )
        argv = [*self.unit_command, *unit.args, "-o", str(self.camp.path / rel)]
        env = {**os.environ, "NO_COLOR": "1"}
        began, t0 = ta.utc_now(), time.monotonic()
        code: int | None = None
        with log_path.open("ab") as fh:
            # The campaign starts no threads of its own, so a pre-exec hook is safe here.
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent(),  # noqa: PLW1509
            )
            try:
                code = proc.wait()
            except BaseException as exc:
                code = _stop(proc, from_terminal=isinstance(exc, KeyboardInterrupt))
                raise
            finally:
                self.spent += time.monotonic() - t0
                self._record(unit, number, argv, code, began)
        state = self.inspector.inspect(unit.unit_id, number)
        status = state.report.run.status if state.report else "incomplete"
        self.say(
            f"[{index}/{len(self.plan.units)}] {unit.unit_id}: {status}, exit "
            f"{code}, in {fmt_duration(time.monotonic() - t0)} -> {rel}"
        )

    def _record(
        self,
        unit: ta.campaign.PlannedUnit,
        number: int,
        argv: list[str],
        code: int | None,
        began: datetime,
    ) -> None:
        finished = ta.utc_now()
        signal_name = None
        if code is not None and code < 0:
            signal_name = signal.Signals(-code).name
        w = self.camp.writer()
        w.command(
            f"{unit.unit_id}/attempt-{number}",
            argv,
            cwd=Path.cwd(),
            phase="unit",
            status="success" if code == 0 else "failed",
            environment_overrides={"NO_COLOR": "1"},
            return_code=code,
            signal=signal_name,
            started_at=began,
            finished_at=finished,
        )
        self.camp.event(
            "unit_finished",
            f"{unit.unit_id} attempt {number} exited {code}",
            unit=unit.unit_id,
            attempt=number,
            exit_code=code,
        )
        dims = {
            "unit": unit.unit_id,
            "variant": unit.variant,
            "machine": unit.machine,
            "attempt": str(number),
        }
        for name, value in (
            ("unit_estimated_s", unit.estimate.total_s),
            ("unit_wall_s", (finished - began).total_seconds()),
        ):
            w.metric(
                name, value, unit="s", aggregation="exact", higher_is_better=False, dimensions=dims
            )

    def _checkpoint(self, reason: str | None, *, final: bool) -> ta.campaign.CampaignReport:
        records, results = unit_records(self.plan, self.inspector)
        docs: dict[str, ta.compare.ComparisonDoc] = {}
        refs: list[ta.campaign.ComparisonRef] = []
        table: list[ta.campaign.VariantRow] = []
        if final:
            cfg = self.setup.resolved.config.compare
            docs, refs, table = compare_variants(
                self.plan, results, noise_floor_pct=cfg.noise_floor, alpha=cfg.alpha
            )
        summary, accounting = summarize(records, self.plan, None if final else reason)
        if final and reason:
            summary = summary.model_copy(update={"headline": f"{summary.headline}; {reason}"})
        accounting = accounting.model_copy(
            update={"invocation_wall_s": time.monotonic() - self.started}
        )
        status_reason = None if summary.status == "success" else summary.headline
        report = ta.campaign.CampaignReport(
            producer=self.camp.producer,
            run=self.camp.run_info(summary.status, status_reason),
            campaign=self.plan.campaign,
            source=self.plan.source,
            smoke=self.plan.smoke,
            baseline_variant=self.plan.baseline_variant,
            summary=summary,
            units=records,
            comparisons=refs,
            table=table,
            budget=self.plan.budget,
            accounting=accounting,
        )
        self.camp.checkpoint(report, docs)
        return report


@dataclass(frozen=True)
class Ended:
    """How a campaign run ended: its final report, and why it stopped early if it did."""

    report: ta.campaign.CampaignReport
    stopped: str | None
    """Ctrl-C or SIGTERM: `interrupted by Ctrl-C`, `terminated by SIGTERM`."""
    budget_stop: str | None
    """The wall-time budget ran out before every unit ran."""

    def exit_code(self) -> int:
        """0 every unit succeeded, 1 one failed, 130/143 stopped; CliError for a spent budget
        (2) or units without a result (3)."""
        report, stopped, budget_stop = self.report, self.stopped, self.budget_stop
        if stopped is not None:
            return stopped_code(stopped)
        if budget_stop is not None:
            raise CliError(
                budget_stop,
                hint="finished units are kept; `tile campaign run` again goes on with the rest",
                code=ExitCode.USAGE,
            )
        missing = [u.unit_id for u in report.units if u.in_plan and u.result_attempt is None]
        if missing:
            raise CliError(
                f"{len(missing)} unit(s) have no result: {', '.join(missing)}",
                hint=f"each attempt's output is in `{report.run.output_directory}/units/UNIT/"
                "attempt-N.log`; "
                "run the campaign again to redo only these",
                code=ExitCode.INFRA,
            )
        bad = [u for u in report.units if u.in_plan and u.status != "success"]
        return int(ExitCode.FAILED if bad else ExitCode.OK)


def _stop(proc: subprocess.Popen[bytes], *, from_terminal: bool) -> int | None:
    """Stop a unit's `tile bench` the way we were stopped; kill it if it will not end.

    A Ctrl-C at the terminal reached the child too (one process group): a second SIGINT could
    cut its finalizing short, so it gets a moment to end on its own first. SIGTERM is sent on.
    """
    try:
        if from_terminal:
            try:
                return proc.wait(timeout=SIGINT_GRACE_S)
            except subprocess.TimeoutExpired:
                pass  # only we were interrupted (`kill -INT`): pass it on
        proc.send_signal(signal.SIGINT if from_terminal else signal.SIGTERM)
        return proc.wait(timeout=STOP_WAIT_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.kill()
        return proc.wait()
