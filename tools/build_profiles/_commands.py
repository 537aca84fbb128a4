"""Shell-free child processes, each timed, logged and recorded in `commands/commands.jsonl`.

The records go through tile-artifacts' `ArtifactWriter.command`, the same recording the CLI
uses for its runners: argument vector (never a shell), cwd, redacted environment overrides,
status, return code and times, with stdout and stderr in `logs/`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tools.build_profiles._errors import BuildProfileError, ExitCode

if TYPE_CHECKING:
    import tile_artifacts as ta

__all__ = ["CommandResult", "Commands"]


@dataclass(frozen=True)
class CommandResult:
    """How one command ended; `wall_s` is the time from spawn to exit, as the user waits it."""

    command_id: str
    return_code: int | None
    timed_out: bool
    wall_s: float
    stdout_log: Path
    stderr_log: Path
    stderr_relpath: str
    """`stderr_log` relative to the output directory, as the records name it."""

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0 in time."""
        return self.return_code == 0 and not self.timed_out

    def stdout(self) -> str:
        """What the command wrote to stdout."""
        return self.stdout_log.read_text(encoding="utf-8", errors="replace")

    def stderr(self) -> str:
        """What the command wrote to stderr."""
        return self.stderr_log.read_text(encoding="utf-8", errors="replace")


class Commands:
    """Runs commands one after the other, numbering them C001, C002, ... in the records."""

    def __init__(self, writer: ta.ArtifactWriter, *, timeout_s: float) -> None:
        self._writer = writer
        self._timeout_s = timeout_s
        self._count = 0

    def run(
        self,
        phase: str,
        args: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run `args` in `cwd` with this environment plus `env`; record it whatever happens.

        A command that outlives the timeout is killed with its whole process group (cargo's
        rustc children included) and recorded as `timed_out`. A command that cannot start at
        all is a BuildProfileError naming it.
        """
        self._count += 1
        command_id = f"C{self._count:03d}"
        overrides = dict(env or {})
        stdout_rel = f"logs/{command_id}-{phase}.stdout.log"
        stderr_rel = f"logs/{command_id}-{phase}.stderr.log"
        stdout_log = self._writer.log_path(stdout_rel, description=f"stdout of `{args[0]}`")
        stderr_log = self._writer.log_path(stderr_rel, description=f"stderr of `{args[0]}`")
        started_at = datetime.now(UTC)
        start = time.perf_counter()
        timed_out = False
        with stdout_log.open("wb") as out, stderr_log.open("wb") as err:
            try:
                proc = subprocess.Popen(
                    list(args),
                    cwd=cwd,
                    env={**os.environ, **overrides},
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                raise BuildProfileError(
                    f"cannot start `{args[0]}`: {exc.strerror or exc}",
                    hint="install it or put it on PATH (cargo comes with rustup)",
                    code=ExitCode.INFRA,
                ) from None
            try:
                proc.wait(timeout=self._timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            except BaseException:
                _kill_group(proc)
                raise
            finally:
                if timed_out:
                    _kill_group(proc)
        wall = time.perf_counter() - start
        finished_at = datetime.now(UTC)
        code = proc.returncode
        self._writer.command(
            command_id,
            list(args),
            cwd=cwd,
            status="timed_out" if timed_out else "success" if code == 0 else "failed",
            phase=phase,
            environment_overrides=overrides,
            stdout_log=stdout_rel,
            stderr_log=stderr_rel,
            return_code=None if code is None or code < 0 else code,
            signal=_signal_name(code),
            started_at=started_at,
            finished_at=finished_at,
        )
        return CommandResult(command_id, code, timed_out, wall, stdout_log, stderr_log, stderr_rel)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return str(-code)
