"""`[bench] processes`: a bench whose cases are timed by several runner processes in turn.

Samples taken in one process share its state (where its buffers landed, which cores it got,
what the machine was doing), so their spread says nothing of how far the next process of the
same code will land. On a shared CPU that is most of the noise: identical code moved up to
2x between processes while each process reported a 1% CI. A run timed by two or more
processes carries that spread itself, and `compare` judges it as it judges a baseline pooled
from several runs (`runs` groups, the cases' spreads lending each other strength).

The processes run one after another over the whole plan, each with its share of the
sampling budget (`BenchSettings.share`). The earlier ones are heard but their results held
back; the last one is handed those results (`RunRequest.prior`) and sends each case's result
with every process's samples in it, so that the runner, not this module, computes the
statistics of the whole. The first process's hello settles how many there are (`0`: by the
backend, `BenchSettings.processes_on`). Stopped early (Ctrl-C, SIGTERM), the results held
back are recorded as they are: nothing measured is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_harness._errors import CliError, ExitCode
from tile_harness._requests import derive
from tile_harness._sinks import Relay

if TYPE_CHECKING:
    from tile_harness._display import Display
    from tile_harness._session import RunnerSession
    from tile_harness._sinks import Sink

__all__ = ["ProcessSeries", "one_process_only"]

MakeSession = Callable[[tp.RunRequest, "Sink"], "RunnerSession"]


def one_process_only(processes: int, what: str) -> None:
    """Refuse `[bench] processes` > 1 for `what`, a run whose runners are started otherwise
    (each side of `--against` in one runner taking turns, shards, `--cold-process`'s pair):
    a setting that would be ignored is refused, not ignored (exit 2)."""
    if processes > 1:
        raise CliError(
            f"{what} times each case in one runner process, so `[bench] processes = "
            f"{processes}` cannot apply",
            hint="leave out `--processes` (or set `bench.processes=0`) for this run",
            code=ExitCode.USAGE,
        )


class _InFront(Relay):
    """In front of the run's sink while one process of the series runs: the run's plan is
    passed on once, the first process's (the others plan the same cases)."""

    def __init__(self, series: ProcessSeries) -> None:
        super().__init__(series.sink)
        self.series = series

    def on_plan(self, plan: tp.Plan) -> None:
        if self.series.cases is None:
            self.series.cases = len(plan.cases)
            self.inner.on_plan(plan)
            self.series.on_screen(1)


class _Held(_InFront):
    """While an earlier process runs: its results are held back (`ProcessSeries.hold`), its
    failures and files left to the last process, which meets them again; the screen and the
    run's log hear the rest. Until the first hello says there are several processes,
    everything passes."""

    def on_hello(self, hello: tp.Hello) -> None:
        self.series.settle(hello.backend)
        self.inner.on_hello(hello)

    def on_plan(self, plan: tp.Plan) -> None:
        if not plan.cases:  # a refused selection: nothing to time again, so this is the last
            self.series.count = 1
        super().on_plan(plan)

    def on_message(self, message: tp.Message) -> None:
        if self.series.count in (None, 1):  # one process, or a runner that never said hello
            self.inner.on_message(message)
        elif isinstance(message, tp.BenchResult):
            self.series.hold(message)
        elif not isinstance(message, (tp.Failure, tp.Artifact)):
            self.inner.on_message(message)


class _Last(_InFront):
    """While the last process runs: everything; the cases it ended are noted, so that a stop
    records the held results of the others only."""

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, (tp.BenchResult, tp.Failure)) and message.case_id is not None:
            self.series.ended(message.case_id)
        self.inner.on_message(message)


class ProcessSeries:
    """A bench run over `[bench] processes` runner processes, one after another (module
    docstring). `make` makes a session of a request that tells a sink; `display` hears which
    process is on."""

    def __init__(
        self, request: tp.RunRequest, sink: Sink, make: MakeSession, display: Display
    ) -> None:
        self.request = request
        self.sink = sink
        self.make = make
        self.display = display
        self.count: int | None = None
        """How many processes, once the first one's hello said which backend it runs on."""
        self.cases: int | None = None
        """Cases in the run's plan, once a process has planned (for the screen)."""
        self._held: dict[str, list[tp.BenchResult]] = {}
        self._lock = threading.Lock()
        self._current: RunnerSession | None = None
        self._stopped = False
        self._flushed = False
        self._ended: set[str] = set()

    def settle(self, backend: str | None) -> None:
        """The first hello: how many processes this run has."""
        if self.count is None:
            self.count = self.request.bench.processes_on(backend)

    def hold(self, result: tp.BenchResult) -> None:
        with self._lock:
            self._held.setdefault(result.case_id, []).append(result)

    def on_screen(self, k: int) -> None:
        """The live line names process `k`: the count of cases done is the last process's."""
        if self.count is not None and self.count > 1 and self.cases:
            self.display.start(self.cases, f"tile bench, runner process {k} of {self.count}")

    def ended(self, case_id: str) -> None:
        """The last process gave the case its outcome."""
        with self._lock:
            self._ended.add(case_id)

    def run(self) -> bool:
        clean = self._start(self.request, _Held(self))
        k = 2
        while not self._stopped and self.count is not None and k <= self.count:
            self.display.line(self._announce(k))
            self.on_screen(k)
            if k < self.count:
                clean = self._start(self.request, _Held(self)) and clean
            else:
                last = derive(self.request, prior=self._prior())
                clean = self._start(last, _Last(self)) and clean
            k += 1
        return clean

    def _announce(self, k: int) -> str:
        """The line that says another process starts, and (on the first) why."""
        line = f"runner process {k} of {self.count}: timing every case again"
        if k == 2 and self.request.bench.processes == 0:
            line += " (on a CPU a process of the same code can land far from the last; "
            line += "`compare` judges their spread; `--processes 1` times once)"
        return line

    def stop(self) -> None:
        """Stop the process on now and start no other; record what was held back."""
        with self._lock:
            self._stopped = True
            current = self._current
        if current is not None:
            current.stop()
        self._flush()

    def _start(self, request: tp.RunRequest, sink: Sink) -> bool:
        session = self.make(request, sink)
        with self._lock:
            if self._stopped:
                return False
            self._current = session
        return session.run()

    def _prior(self) -> dict[str, list[tp.PriorSamples]]:
        """Each case's held results, as the last process takes them."""
        with self._lock:
            return {
                case_id: [
                    tp.PriorSamples(
                        samples=r.samples,
                        reference=r.reference.samples if r.reference is not None else None,
                        round_sizes=r.round_sizes,
                        accounting=r.accounting,
                    )
                    for r in results
                ]
                for case_id, results in self._held.items()
            }

    def _flush(self) -> None:
        """After a stop: the first held result of each case the last process did not end,
        recorded as that process's own (the merge never happened)."""
        with self._lock:
            if self._flushed:
                return
            self._flushed = True
            first = [r[0] for case_id, r in self._held.items() if case_id not in self._ended]
        for result in first:
            self.sink.on_message(result)
