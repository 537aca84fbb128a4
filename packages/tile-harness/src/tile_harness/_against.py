"""`tile bench --against REV`: the working tree and another revision, timed in turns.

Two runs made minutes apart on a shared machine differ by whatever the machine did in between;
no statistic on the two runs alone can tell that from a change of the code. Here both sides run
at once, each in its own runner, and take their rounds in turns (ABBA: current, revision,
revision, current, ...), one at a time, so a load that comes and goes falls on both halves of
a pair of rounds. The comparison tests the pairs (`tile_stats.grouped_compare`, spread
`paired`).

The revision is checked out with `git worktree add --detach` into a temporary directory and
its kernels are imported from there: its project's tile.toml, its kernel files, and its
Python sources put first on the runner's `PYTHONPATH` (the project directory, its `src/`, and
`packages/*/src` of the repository, such as tile-std's). The interpreter, the installed
dependencies, and tile's own runner and protocol stay the current ones, so both sides are
timed by the same timer; a revision that needs other dependencies is not what this compares.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

import msgspec

from tile_harness._display import QuietDisplay
from tile_harness._errors import CliError, ExitCode
from tile_harness._processes import one_process_only
from tile_harness._requests import derive
from tile_harness._run_dir import Pairing
from tile_harness._runners import Via, make_session
from tile_harness._settings import resolve_config
from tile_harness._suite import Suite

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tile_config import ResolvedConfig
    from tile_harness._compare import CompareSettings
    from tile_harness._display import Display
    from tile_harness._outcome import Finished
    from tile_harness._session import RunnerSession
    from tile_harness._settings import Selection

__all__ = ["DEFAULT_TURNS", "Against", "Revision", "TakingTurns", "checkout_revision"]

DEFAULT_TURNS = 16
"""Rounds per side when `[bench] rounds` asks for fewer than two: eight ABBA cycles, 15 degrees
of freedom for the paired test. Under a load changing every 3 s on a 2-core VM, 16 rounds
caught every case slowed by 1.3x or more (46 of 46) where 8 caught 69 of 81, in the same time
and with no false verdict (0 of 100; 8 rounds: 1 of 200); benchmarks/ab_turns.py."""

# tile's own packages the runner and its protocol come from: always the current ones, so that
# the two sides are timed alike and the runner understands `RunRequest.pace`.
_TIMER_PACKAGES = frozenset({"tile-runner", "tile-protocol"})
_POLL_S = 0.002

Side = Literal["current", "revision"]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)  # fmt: skip


@dataclass(frozen=True)
class Revision:
    """A revision checked out beside the working tree, and where its kernels come from."""

    name: str
    sha: str
    repo: Path
    worktree: Path
    project_root: Path

    def python_path(self) -> tuple[Path, ...]:
        """The revision's Python sources, to go first on its runner's path (module docstring)."""
        roots = [self.project_root, self.project_root / "src"]
        roots += sorted(
            src
            for src in self.worktree.glob("packages/*/src")
            if src.parent.name not in _TIMER_PACKAGES
        )
        return tuple(p for p in roots if p.is_dir())

    def remove(self) -> None:
        """Remove the worktree (best effort: `git worktree prune` tidies what is left)."""
        _git(self.repo, "worktree", "remove", "--force", str(self.worktree))
        shutil.rmtree(self.worktree.parent, ignore_errors=True)


def _repository(project_root: Path) -> Path:
    top = _git(project_root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise CliError(
            f"`--against` needs a git repository, and `{project_root}` is not in one",
            hint="commit the kernels to git, or compare saved runs with `tile compare`",
            code=ExitCode.USAGE,
        )
    return Path(top.stdout.strip())


def checkout_revision(project_root: Path, name: str) -> Revision:
    """`name` of the repository holding `project_root`, checked out in a temporary worktree.

    Refused (exit 2) outside git, for a name git does not know, or when the revision has no
    tile.toml where the current project has one.
    """
    repo = _repository(project_root)
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    if found.returncode != 0 or not found.stdout.strip():
        raise CliError(
            f"`--against {name}`: git knows no such revision in `{repo}`",
            hint="name a branch, tag or commit (`git log --oneline` lists them)",
            code=ExitCode.USAGE,
        )
    sha = found.stdout.strip()
    worktree = Path(tempfile.mkdtemp(prefix="tile-against-")) / sha[:12]
    added = _git(repo, "worktree", "add", "--detach", str(worktree), sha)
    if added.returncode != 0:
        shutil.rmtree(worktree.parent, ignore_errors=True)
        raise CliError(
            f"`--against {name}`: could not check out {sha[:12]}: {added.stderr.strip()}",
            hint="`git worktree list` shows the worktrees git already has",
            code=ExitCode.USAGE,
        )
    inside = project_root.relative_to(repo)
    revision = Revision(name, sha, repo, worktree, worktree / inside)
    if not (revision.project_root / "tile.toml").is_file():
        revision.remove()
        raise CliError(
            f"`--against {name}`: revision {sha[:12]} has no `{inside / 'tile.toml'}`",
            hint="pick a revision that already had this tile project",
            code=ExitCode.USAGE,
        )
    return revision


class TakingTurns:
    """Two sessions whose runners take their bench rounds one at a time, in ABBA order.

    Each runner was asked to pace its rounds (`RunRequest.pace`): before round k it creates
    `ready-k` in its pace directory and waits for `go-k`. A turn is: wait until the side is
    ready (or its session has ended), let it go, wait until it is ready for the next round (or
    has ended). A side whose session ends early (an import error, a crash) leaves the other
    to take its turns alone; a runner restarted after a crash starts again from round 1 and
    goes through the rounds already let go without waiting.
    """

    def __init__(
        self,
        sessions: dict[Side, RunnerSession],
        paces: dict[Side, Path],
        rounds: int,
        on_turn: Callable[[Side, int], None] = lambda side, round_: None,
    ) -> None:
        self.sessions = sessions
        self.paces = paces
        self.rounds = rounds
        self.on_turn = on_turn
        self._stopped = threading.Event()
        self._threads: dict[Side, threading.Thread] = {}
        self._errors: list[BaseException] = []

    @staticmethod
    def order(rounds: int) -> list[tuple[Side, int]]:
        """current, revision | revision, current | ...: each pair of rounds split by turn."""
        pairs: tuple[tuple[Side, Side], tuple[Side, Side]] = (
            ("revision", "current"),
            ("current", "revision"),
        )
        return [(side, k) for k in range(1, rounds + 1) for side in pairs[k % 2]]

    def run(self) -> bool:
        for side, session in self.sessions.items():
            thread = threading.Thread(target=self._run_side, args=(session,),
                                      name=f"tile-against-{side}", daemon=True)  # fmt: skip
            self._threads[side] = thread
            thread.start()
        for side, k in self.order(self.rounds):
            if self._stopped.is_set():
                break
            self._take_turn(side, k)
        for thread in self._threads.values():
            while thread.is_alive():  # a join that Ctrl-C can still interrupt
                thread.join(0.1)
        if self._errors:
            raise self._errors[0]
        return True

    def stop(self) -> None:
        self._stopped.set()
        for session in self.sessions.values():
            session.stop()

    def _run_side(self, session: RunnerSession) -> None:
        try:
            session.run()
        except BaseException as exc:  # raised again on the thread that drives the run
            self._errors.append(exc)
            self._stopped.set()

    def _take_turn(self, side: Side, k: int) -> None:
        pace, thread = self.paces[side], self._threads[side]
        if not self._wait_for(pace / f"ready-{k}", thread):
            return
        self.on_turn(side, k)
        (pace / f"go-{k}").touch()
        self._wait_for(pace / f"ready-{k + 1}", thread)

    def _wait_for(self, path: Path, thread: threading.Thread) -> bool:
        """Until `path` exists (True), or the side's session ended or the run stops (False)."""
        while not path.exists():
            if not thread.is_alive() or self._stopped.is_set():
                return False
            time.sleep(_POLL_S)
        return True


class Against:
    """Both sides of `tile bench --against REV`: two suites, one of them the revision's.

    The current side's run directory is the run (`.tile/latest`, the exit code, the
    comparison; `output_dir` as `-o`, `json_lines` as `--json`); the revision's goes beside it,
    under its own run id, and each names the other in `context.paired_with`.
    """

    def __init__(
        self,
        resolved: ResolvedConfig,
        selection: Selection,
        revision_name: str,
        *,
        profile: str | None,
        argv: Sequence[str],
        display: Display,
        output_dir: Path | None = None,
        json_lines: BinaryIO | None = None,
    ) -> None:
        import tile_artifacts as ta

        runner = resolved.config.runner
        launcher = resolved.config.launcher
        if runner.isolate or launcher.shards > 1 or launcher.kind != "local":
            raise CliError(
                "`--against` runs one runner per side on this machine",
                hint='leave out `[runner] isolate`, shards and `[launcher] kind = "slurm"` '
                "for this run (`--set runner.isolate=false`)",
                code=ExitCode.USAGE,
            )
        one_process_only(resolved.config.bench.processes, "`--against`")
        root = resolved.project_root or Path.cwd()
        self.revision = checkout_revision(root.absolute(), revision_name)
        self.display = display
        try:
            other = resolve_config(profile, selection.overrides, cwd=self.revision.project_root)
            ids = (ta.new_run_id("bench"), ta.new_run_id("bench"))
            self.current = Suite("bench", resolved, selection, output_dir=output_dir, argv=argv,
                                 display=display, json_lines=json_lines,
                                 progress=json_lines is None, pairing=Pairing(ids[0], ids[1], Path.cwd()))  # fmt: skip
            self.other = Suite("bench", other, selection,
                               output_dir=self.current.run_dir.parent / ids[1], argv=argv,
                               display=QuietDisplay(),
                               pairing=Pairing(ids[1], ids[0], self.revision.worktree))  # fmt: skip
        except BaseException:
            self.revision.remove()
            raise
        rounds = resolved.config.bench.rounds
        self.rounds = rounds if rounds >= 2 else DEFAULT_TURNS
        sides: tuple[Side, Side] = ("current", "revision")
        self._paces: dict[Side, Path] = {
            side: Path(tempfile.mkdtemp(prefix=f"tile-pace-{side}-")) for side in sides
        }

    def session(self) -> TakingTurns:
        """Both sides' sessions, paced; the revision's runner imports the revision's sources."""
        suites: dict[Side, Suite] = {"current": self.current, "revision": self.other}
        sessions: dict[Side, RunnerSession] = {}
        for side, suite in suites.items():
            bench = msgspec.structs.replace(suite.request.bench, rounds=self.rounds)
            request = derive(suite.request, bench=bench, pace=str(self._paces[side]))
            via = Via(env=self._revision_env()) if side == "revision" else Via()
            resolved = suite.setup.resolved
            sessions[side] = make_session(request, resolved, suite.sink,
                                          log_dir=suite.run_dir / "logs", via=via,
                                          redactor=suite.setup.writer.redactor)  # fmt: skip
        return TakingTurns(sessions, self._paces, self.rounds, self._say_turn)

    def _revision_env(self) -> dict[str, str]:
        current = self.other.setup.resolved.config.runner.env.get(
            "PYTHONPATH", os.environ.get("PYTHONPATH", "")
        )
        parts = [str(p) for p in self.revision.python_path()] + ([current] if current else [])
        return {"PYTHONPATH": os.pathsep.join(parts)}

    def _say_turn(self, side: Side, k: int) -> None:
        if k == 1 and side == "current":
            self.display.line(
                f"timing the working tree and {self.revision.name} ({self.revision.sha[:12]}) "
                f"in turns: {self.rounds} rounds each"
            )

    def drive(self, hold: contextlib.ExitStack | None = None) -> str | None:
        """Run both sides to their end (or to Ctrl-C or SIGTERM); the revision's directory is
        settled here, or finalized as failed when the current side's drive raised."""
        try:
            interrupted = self.current.drive(self.session(), hold)
        except BaseException as exc:
            self.other.recorder.finalize(error=repr(exc))
            self._clean()
            raise
        self.other.settle()
        return interrupted

    def finish(self, interrupted: str | None, compare_with: CompareSettings) -> Finished:
        """Finalize the revision's run, then the current one compared with it (`compare_with`
        names the revision's directory); the worktree is removed."""
        try:
            try:
                self.other.finish(interrupted)
            except CliError as exc:  # the revision planned no case of this selection
                self.current.finish(interrupted)  # kept, but not compared with nothing
                raise CliError(
                    f"`--against {self.revision.name}`: the revision has no such case "
                    f"({exc.message})",
                    hint="pick a revision that has these kernels, or narrow the selection",
                    code=ExitCode.USAGE,
                ) from None
            self._refuse_unmeasured()
            return self.current.finish(interrupted, compare_with)
        finally:
            self._clean()

    def _refuse_unmeasured(self) -> None:
        """Exit 2 when the revision measured nothing: it did not import, or has no such case."""
        results = self.other.recorder.results
        if results.bench_results:
            return
        first = results.failures[0].message if results.failures else "no case of this selection"
        self.current.finish(None)  # kept, but not compared with nothing
        raise CliError(
            f"`--against {self.revision.name}`: the revision measured no case ({first})",
            hint=f"the revision's run is in `{self.other.run_dir}`; check that it has these "
            "kernels and that they import",
            code=ExitCode.USAGE,
        )

    def _clean(self) -> None:
        self.revision.remove()
        for pace in self._paces.values():
            shutil.rmtree(pace, ignore_errors=True)
