"""One bench, test or build over a selection, from its run directory to its outcome.

`tile bench|test|build` and `tile_harness.run` both go through `Suite`: the selection is
checked before a directory exists, the run directory opened, the request built for it, the
session driven to its end or to Ctrl-C or SIGTERM (every planned case accounted for), and the
directory finalized. The directory becomes `.tile/latest` once a case is planned: filters
that match no case are a usage error that leaves no directory and moves nothing. What differs between the doors is around it: the CLI picks shards or the
cold and warm pair, streams `--json`, and shows tables; a program gets the report as a value.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

import msgspec

import tile_protocol as tp
from tile_harness import signals
from tile_harness._errors import CliError
from tile_harness._nomatch import no_match
from tile_harness._plan_cache import PlanCache
from tile_harness._record import RunRecorder, recording
from tile_harness._requests import build_request, derive
from tile_harness._run_dir import Pairing, discard_run, open_run, publish_run
from tile_harness._undone import settle

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tile_config import ResolvedConfig
    from tile_harness._compare import CompareSettings
    from tile_harness._display import Display
    from tile_harness._outcome import Finished
    from tile_harness._session import RunnerSession
    from tile_harness._settings import Selection
    from tile_harness._sinks import Sink

__all__ = ["Stoppable", "Suite"]


class Stoppable(Protocol):
    """A session, sharded run or cold and warm pair: runs to its end, or stops when told."""

    def run(self) -> bool: ...
    def stop(self) -> None: ...


class Suite:
    """One suite run: its directory, its recorder and the sink in front of it.

    `json_lines` (`--json`) gets every protocol message once it is recorded; `cache_explain`
    asks the runners for the compile cache's events; `progress` for the step each case is
    in (`Display.step`); `pairing` makes it one side of `tile bench --against`; `label` names
    the run (its id, its report's title) where it is not the request's command (`tile
    profile` is a build that also profiles). `plans` keeps a whole plan's case ids in
    `.tile/plans.json` and refuses filters that match none of them at once, without a
    runner (`_plan_cache`): a run whose runners all start here, with this interpreter.
    """

    def __init__(  # noqa: PLR0913 (what a suite run is made of, each documented)
        self,
        command: tp.Command,
        resolved: ResolvedConfig,
        selection: Selection,
        *,
        output_dir: Path | None,
        argv: Sequence[str],
        display: Display,
        json_lines: BinaryIO | None = None,
        cache_explain: bool = False,
        progress: bool = False,
        pairing: Pairing | None = None,
        label: str | None = None,
        plans: bool = False,
    ) -> None:
        build_request(command, resolved, selection, None)  # refused before a directory exists
        self.selection = selection
        self._plans = PlanCache.open(command, resolved, selection) if plans else None
        if self._plans is not None and (refused := self._plans.refusal(selection)) is not None:
            raise refused  # the kept plan already says no case matches: no runner, no directory
        self._whole: list[tp.CaseInfo] | None = None
        name = label or command
        self.setup = open_run(name, resolved, output_dir, list(argv), pairing, publish=False)
        self._prune = output_dir is None
        self._published = False
        self.recorder = RunRecorder(self.setup, ui=display)
        self.recorder.on_planned.append(self._publish)
        self.recorder.on_planned.append(self._remember)
        self.sink: Sink = recording(self.recorder, json_lines=json_lines)
        """Where the sessions' events go: checked, recorded, then `--json`."""
        request = build_request(command, resolved, selection, self.setup.run_dir)
        self.request = derive(request, cache_explain=cache_explain, progress=progress)
        s = selection
        self.recorder.results.filtered = bool(s.filters or s.kernels or s.case_ids or s.axes)

    @property
    def run_dir(self) -> Path:
        return self.setup.run_dir

    def session(self, *, isolate: bool = False) -> Stoppable:
        """The run's runners on this machine: one session, or for a bench with `[bench]
        processes` other than 1, a series of them (`_processes`). Every door that runs a
        suite locally asks here, so that each times its cases alike."""
        from tile_harness._process import LaunchCounter
        from tile_harness._runners import make_session

        resolved, setup = self.setup.resolved, self.setup
        numbering = LaunchCounter()  # one runner number (and stderr log) per process

        def make(request: tp.RunRequest, sink: Sink) -> RunnerSession:
            return make_session(request, resolved, sink, log_dir=setup.run_dir / "logs",
                                isolate=isolate, redactor=setup.writer.redactor,
                                numbering=numbering)  # fmt: skip

        processes = resolved.config.bench.processes
        if self.request.command != "bench" or processes == 1:
            return make(self.request, self.sink)
        from tile_harness._processes import ProcessSeries

        bench = msgspec.structs.replace(self.request.bench, processes=processes)
        return ProcessSeries(derive(self.request, bench=bench), self.sink, make, self.recorder.ui)

    def _publish(self) -> None:
        """Make the run `.tile/latest` (and prune old runs), once: a case is planned."""
        if not self._published:
            self._published = True
            publish_run(self.setup, prune=self._prune)

    def _remember(self) -> None:
        """Hold the first plan of a run no filter narrowed, for `finish` to keep (`plans`)."""
        s = self.selection
        if self._plans is not None and self._whole is None and not (s.filters or s.kernels):
            self._whole = list(self.recorder.results.planned)

    def _keep_plan(self) -> None:
        """Keep the whole plan for the next run's filters, unless a module failed to import
        or a kernel to plan: its cases would be missing from it."""
        failed = any(f.phase in ("import", "plan") for f in self.recorder.results.failures)
        if self._plans is not None and self._whole is not None and not failed:
            self._plans.remember(self._whole)

    def _matched_nothing(self, interrupted: str | None) -> bool:
        """Whether the run is no run: filters that planned no case, and nothing went wrong."""
        results = self.recorder.results
        return (
            interrupted is None
            and results.filtered
            and not results.planned
            and not results.failures
            and self.recorder.write_fault() is None
        )

    def drive(self, session: Stoppable, hold: contextlib.ExitStack | None = None) -> str | None:
        """Run `session` to its end; on Ctrl-C or SIGTERM stop it and say which it was (None:
        it ended). Any other exception finalizes the directory as failed and goes on up.

        `hold` (the CLI's) keeps signals waiting until here: one that came while the run
        directory was made is raised now, and so is one that came earlier and was lost.
        """
        try:
            if hold is not None:
                hold.close()
            signals.raise_unheeded()
            session.run()
        except KeyboardInterrupt:
            session.stop()
            return "interrupted by Ctrl-C"
        except BaseException as exc:
            if isinstance(exc, signals.Terminated):
                session.stop()
                return "terminated by SIGTERM"
            self.recorder.ui.stop()
            self.recorder.finalize(error=str(exc) if isinstance(exc, CliError) else repr(exc))
            self._publish()
            raise
        finally:
            self.recorder.ui.stop()
        self.settle()
        return None

    def settle(self) -> None:
        """Account for every planned case that has no outcome (after the session ended)."""
        settle(self.recorder.results, self.sink)

    def finish(
        self,
        interrupted: str | None,
        compare_with: CompareSettings | None = None,
        refused: CliError | None = None,
    ) -> Finished:
        """Finalize the directory (compared with `compare_with` unless interrupted); `refused`:
        the error the command ends with after this, which the outcome then states.

        Filters that planned no case raise the usage error with a did-you-mean, after removing
        the directory; any other run is kept and made `.tile/latest` if it was not yet.
        """
        nothing = self._matched_nothing(interrupted)
        if interrupted is None:
            self._keep_plan()
        try:
            finished = self.recorder.finalize(
                interrupted=interrupted,
                compare_with=None if interrupted or nothing else compare_with,
                judge=True,
                refused=refused,
            )
        finally:
            if not nothing:
                self._publish()
        if nothing:
            discard_run(self.setup)
            raise no_match(self.setup.resolved, self.selection)
        return finished
