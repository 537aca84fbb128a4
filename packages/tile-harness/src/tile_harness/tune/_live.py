"""One tune runner for every rung: it keeps its executables, the CLI tells it what comes next.

A rung in a fresh runner starts a process and imports JAX again, then traces, lowers and loads
each surviving configuration from the compile cache before timing it. With `RunRequest.rungs`
the runner that timed rung 0 stays: after each rung it sends `rung_done` and waits for the
file `rung-k.json` (a `NextRung`: the survivors and the rung's settings), and times them with
what it holds. Its session runs on a thread of its own while the tune prunes on the main one;
while the runner waits, nothing comes from it, so the two never touch the state at once.

A runner that ends before its rung is over (a crash, a configuration that changed what cannot
be put back) takes its executables with it: the rung's units it did not report on are timed by
a fresh runner in the old way, and so is every later rung that runner would not reach.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

import tile_protocol as tp
from tile_harness._sinks import Relay

if TYPE_CHECKING:
    from tile_config import ResolvedConfig
    from tile_harness._session import RunnerSession
    from tile_harness._sinks import Sink

__all__ = ["LiveRunner", "RungWatch", "keeps_runner"]

_WAIT_S = 0.1  # how often a wait looks up from the event: Ctrl-C is taken between looks


def keeps_runner(resolved: ResolvedConfig) -> bool:
    """Whether a tune's rungs can share one runner: not when the user asked for fresh runners
    (`[runner] isolate`: then each configuration gets its own), nor when the runner runs
    elsewhere through a launcher (the file that tells it its next rung is written here)."""
    config = resolved.config
    return not config.runner.isolate and config.launcher.kind == "local"


class RungWatch(Relay):
    """In front of the tune's sink: which units reported in the current rung (a result or a
    failure), and the runner's word that it is done with the rung (`rung_done`), which goes
    no further, as `rung` does not: they are the tune's business, not the run's record."""

    def __init__(self, inner: Sink) -> None:
        super().__init__(inner)
        self.seen: set[str] = set()
        self.rung_done = threading.Event()

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.RungDone):
            self.rung_done.set()
            return
        if isinstance(message, tp.Rung):
            return
        if isinstance(message, (tp.BenchResult, tp.Failure)) and message.case_id is not None:
            self.seen.add(message.case_id)
        super().on_message(message)


class LiveRunner:
    """A tune session whose runner takes rung after rung (`RunRequest.rungs`), on a thread."""

    def __init__(self, session: RunnerSession, watch: RungWatch, rungs_dir: Path) -> None:
        self._session = session
        self._watch = watch
        self._dir = rungs_dir
        self._next = 1
        self._errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="tile-tune-runner", daemon=True)

    @staticmethod
    def new_dir() -> Path:
        """A directory for the `rung-k.json` files of one runner."""
        return Path(tempfile.mkdtemp(prefix="tile-rungs-"))

    def start(self) -> None:
        self._thread.start()

    @property
    def seen(self) -> set[str]:
        """The units that reported in the current rung (a result or a failure)."""
        return self._watch.seen

    @property
    def waiting(self) -> bool:
        """The runner finished a rung and waits for the next."""
        return self._thread.is_alive() and self._watch.rung_done.is_set()

    def wait(self) -> bool:
        """Until the runner is done with its rung (True) or its session ended (False)."""
        while not self._watch.rung_done.wait(_WAIT_S):
            if not self._thread.is_alive():
                self._reraise()
                return self._watch.rung_done.is_set()
        return True

    def go(self, units: list[str], bench: tp.BenchSettings) -> None:
        """Time `units` with `bench` as the next rung; no units ends the runner."""
        self._watch.rung_done.clear()
        self._watch.seen.clear()
        path = self._dir / f"rung-{self._next}.json"
        partial = path.with_suffix(".partial")
        partial.write_bytes(msgspec.json.encode(tp.NextRung(case_ids=units, bench=bench)))
        partial.replace(path)  # the runner never reads half a file
        self._next += 1

    def close(self) -> None:
        """Let a waiting runner end, and wait for its session to end."""
        if self.waiting:
            self.go([], tp.BenchSettings())
        self._join()
        shutil.rmtree(self._dir, ignore_errors=True)

    def stop(self) -> None:
        """Ctrl-C or SIGTERM: stop the runner's process group and wait for the session."""
        self._session.stop()
        self._join()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _join(self) -> None:
        while self._thread.is_alive():  # a join that Ctrl-C can still interrupt
            self._thread.join(_WAIT_S)
        self._reraise()

    def _run(self) -> None:
        try:
            self._session.run()
        except BaseException as exc:  # raised again on the thread that drives the tune
            self._errors.append(exc)

    def _reraise(self) -> None:
        if self._errors:
            error, self._errors = self._errors[0], []
            raise error
