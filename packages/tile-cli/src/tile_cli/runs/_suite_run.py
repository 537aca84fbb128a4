"""The body of `tile bench|test|build` after its first line (`_suite.run_suite`).

Resolve the configuration, open the run directory, pick how the runners start (one session,
shards, the cold and warm pair of `--cold-process`), drive them until the end or a signal,
finalize the directory, show the results and choose the exit code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from tile_cli.terminal._escape import hide_config_secrets
from tile_cli.terminal._render import (
    KernelTables,
    display_path,
    outside_project_note,
    render_build,
    render_suite,
    render_timing,
    render_undone,
)
from tile_cli.terminal._ui import Ui
from tile_harness import (
    CliError,
    ExitCode,
    RunRecorder,
    Selection,
    Stoppable,
    Suite,
    no_cases,
    one_process_only,
    resolve_config,
    signals,
    usage_failure,
    with_cases,
)

if TYPE_CHECKING:
    from rich.console import Console

    import tile_protocol as tp
    from tile_cli.runs._cache_report import CacheReport
    from tile_cli.runs._suite_flags import SuiteFlags
    from tile_config import ResolvedConfig
    from tile_harness import Against, CompareSettings, Finished

__all__ = ["claim_outputs", "run_suite_with"]


@dataclass(frozen=True)
class _Launching:
    """How the runners of a suite start, decided before the run directory exists."""

    sharded: bool
    costs: dict[str, float] | None
    srun: str | None


def run_suite_with(command: tp.Command, sel: Selection, flags: SuiteFlags,
                   consoles: tuple[Console, Console], ui: Ui) -> int:  # fmt: skip
    """`run_suite` once its screen is up: `consoles` (stdout, stderr) and `ui` are its."""
    from tile_harness import CompareSettings

    out, err = consoles
    resolved = resolve_config(flags.profile, sel.overrides)
    hide_config_secrets(resolved)
    sel = with_cases(resolved, sel, ui.line)  # `--from`, `--cases`: before anything is measured
    # `-v` wins over TILE_VERBOSE (`[output] verbose`).
    flags = dataclasses.replace(flags, verbose=flags.verbose or resolved.config.output.verbose)
    compare_with = (
        CompareSettings.from_config(flags.compare, resolved.config.compare)
        if flags.compare is not None
        else None
    )
    watch: CacheReport | None = None
    if flags.cache_report or flags.cold_process:
        from tile_cli.runs._cache_report import CacheReport

        watch = CacheReport(resolved, cold_process=flags.cold_process)
    launching = _launching(resolved, flags.slurm_args)
    # From here a signal waits until the session runs, where it is caught and the run
    # directory finalized (an error before that ends tile anyway).
    hold = contextlib.ExitStack()
    hold.enter_context(signals.held())
    ui.verbose = flags.verbose
    json_lines = sys.stdout.buffer if flags.as_json else None
    if flags.against is not None:
        against = _against(command, resolved, sel, flags, ui=ui, json_lines=json_lines)
        shown = _Shown(against.current, flags, watch, out, err, against=against)
        shown.stream_tables(ui)
        compare_with = CompareSettings.from_config(against.other.run_dir, resolved.config.compare)
        return shown.finish(against.drive(hold), compare_with)
    suite = Suite(command, resolved, sel, output_dir=flags.output_dir, argv=sys.argv, display=ui,
                  json_lines=json_lines, cache_explain=watch is not None,
                  progress=not flags.as_json, plans=not launching.sharded)  # fmt: skip
    shown = _Shown(suite, flags, watch, out, err)
    shown.stream_tables(ui)
    interrupted = suite.drive(shown.session(launching), hold)
    if command == "build":
        return shown.finish_build(interrupted)
    return shown.finish(interrupted, compare_with)


def _against(command: tp.Command, resolved: ResolvedConfig, sel: Selection, flags: SuiteFlags,
             *, ui: Ui, json_lines: BinaryIO | None) -> Against:  # fmt: skip
    """Both sides of `tile bench --against REV`; refused with what it cannot go with."""
    from tile_harness import Against

    clash = [name for name, given in (("--compare", flags.compare is not None),
                                      ("--cache-report", flags.cache_report),
                                      ("--cold-process", flags.cold_process)) if given]  # fmt: skip
    if command != "bench" or clash:
        raise CliError(
            f"`--against` cannot be used with {', '.join(f'`{c}`' for c in clash)}"
            if clash
            else "`--against` is a flag of `tile bench`",
            hint="`--against REV` compares with the revision it times; leave the others out",
            code=ExitCode.USAGE,
        )
    return Against(resolved, sel, flags.against or "", profile=flags.profile, argv=sys.argv,
                   display=ui, output_dir=flags.output_dir, json_lines=json_lines)  # fmt: skip


def _launching(resolved: ResolvedConfig, slurm_args: Sequence[str]) -> _Launching:
    """Shards or not; for shards, the previous run's costs and, for SLURM, srun's path."""
    from tile_harness import check_slurm, previous_costs

    launcher = resolved.config.launcher
    if launcher.kind != "slurm" and launcher.shards <= 1:
        return _Launching(sharded=False, costs=None, srun=None)
    # Before the new run directory becomes `.tile/latest`.
    costs = previous_costs(resolved)
    srun = check_slurm(resolved, slurm_args) if launcher.kind == "slurm" else None
    return _Launching(sharded=True, costs=costs, srun=srun)


class _Shown:
    """What the terminal adds to a suite run: its consoles, how its runners start, its tables
    and the exit code."""

    def __init__(self, suite: Suite, flags: SuiteFlags, watch: CacheReport | None,
                 out: Console, err: Console, *, against: Against | None = None) -> None:  # fmt: skip
        self.suite = suite
        self.against = against
        self.setup = suite.setup
        self.recorder = suite.recorder
        self.flags = flags
        self.watch = watch
        self.out, self.err = out, err
        self.tables: KernelTables | None = None

    def stream_tables(self, ui: Ui) -> None:
        """A bench shows each kernel's table as soon as its cases end (not with `--json`,
        nor with `--cold-process`, whose cases end twice)."""
        flags, setup = self.flags, self.setup
        if setup.command != "bench" or flags.as_json or flags.cold_process:
            return
        target = setup.resolved.config.bench.target_precision
        self.tables = KernelTables(self.out, self.recorder.results, verbose=flags.verbose,
                                   target_precision=target)  # fmt: skip
        ui.kernel_tables = self.tables

    def session(self, launching: _Launching) -> Stoppable:
        """The session that runs the suite: the cold and warm pair, shards, or one session."""
        recorder, sink, request = self.recorder, self.suite.sink, self.suite.request
        resolved = self.setup.resolved
        watch = self.watch
        processes = resolved.config.bench.processes
        if watch is not None:
            recorder.before_final.append(lambda report: watch.write(recorder, report))
            if watch.cold_process:
                one_process_only(processes, "`--cold-process`")
                return watch.cold_warm(request, recorder, sink)
        if launching.sharded:
            from tile_harness import ShardedRun

            one_process_only(processes, "a sharded run")

            return ShardedRun(request, recorder, sink=sink, costs=launching.costs,
                              srun=launching.srun, slurm_args=self.flags.slurm_args)  # fmt: skip
        return self.suite.session(isolate=resolved.config.runner.isolate)

    def finish_build(self, interrupted: str | None) -> int:
        """Describe the runner's files, finalize, show the build table; the exit code."""
        problems = claim_outputs(self.recorder)
        finished = self.suite.finish(interrupted)
        if not self.flags.as_json:
            render_build(self.out, self.err, self.recorder.results, problems,
                         verbose=self.flags.verbose)  # fmt: skip
        render_undone(self.err, self.recorder.results)
        return self._conclude(finished)

    def finish(self, interrupted: str | None, compare_with: CompareSettings | None) -> int:
        """Finalize a bench or test run, record it in the history, show it; the exit code."""
        setup, results, flags = self.setup, self.recorder.results, self.flags
        if self.against is not None and compare_with is not None:
            finished = self.against.finish(interrupted, compare_with)
        else:
            finished = self.suite.finish(interrupted, compare_with)
        report = finished.report
        resolved = setup.resolved
        if setup.command == "bench" and interrupted is None and resolved.config.history.enabled:
            from tile_cli.results._history import record_run

            record_run(resolved, report, setup.run_dir, self.err)
        # A bad `-a` value is one usage error (raised by _conclude), not a failure per kernel.
        planned = len(results.planned)
        if not flags.as_json and usage_failure(results.failures, planned=planned) is None:
            shown = self.tables.shown if self.tables is not None else ()
            render_suite(self.out, self.err, results, command=setup.command, verbose=flags.verbose,
                         target_precision=resolved.config.bench.target_precision,
                         shown=shown)  # fmt: skip
        render_undone(self.err, results)
        if not flags.as_json:
            if flags.verbose >= 1:
                render_timing(self.out, self.err, results, report.timing)
            if self.watch is not None:
                self.watch.render(self.err, verbose=flags.verbose)
        return self._conclude(finished)

    def _conclude(self, finished: Finished) -> int:
        """The comparison's table and verdict, the run directory, and the exit code decided."""
        from tile_cli.terminal._render import say_outcome

        results, outcome, comparison = self.recorder.results, finished.outcome, finished.comparison
        if comparison is not None and not self.flags.as_json:
            from tile_cli.terminal._compare import render_comparison

            render_comparison(comparison, self.out, plain=not self.out.is_terminal)
            if not results.failures and not results.failed_checks:
                say_outcome(self.err, outcome)
        if not self.flags.as_json:
            self._where()
        if (fault := self.recorder.write_fault()) is not None:
            raise fault
        if (usage := usage_failure(results.failures, planned=len(results.planned))) is not None:
            raise usage
        if outcome.code == ExitCode.USAGE and not results.planned:
            raise no_cases(results.filtered)
        return outcome.code

    def _where(self) -> None:
        where = display_path(self.setup.run_dir)
        self.err.print(f"run directory: {where}", markup=False, style="dim")
        if (note := outside_project_note(self.setup.resolved)) is not None:
            self.err.print(note, markup=False, style="dim")


def claim_outputs(recorder: RunRecorder) -> list[str]:
    """Describe each runner-written file in the manifest; say where a file disagrees."""
    import tile_artifacts as ta

    problems: list[str] = []
    for artifact in recorder.results.artifacts:
        description = f"{artifact.kind} of {artifact.case_id}" if artifact.case_id else None
        try:
            path = recorder.writer.path(artifact.path, description=description)
            data = path.read_bytes()
        except (ta.ArtifactError, OSError) as exc:
            problems.append(f"the runner reported `{artifact.path}`, which is unusable: {exc}")
            continue
        if (len(data), hashlib.sha256(data).hexdigest()) != (artifact.size_bytes, artifact.sha256):
            problems.append(f"`{artifact.path}` changed after the runner wrote it")
    return problems
