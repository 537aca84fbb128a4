"""The one factory of runner sessions: a request, the configuration and a sink make a session.

Every command that starts runners (a suite, a shard, a tune rung, the cold and warm runners
of `--cold-process`, a question to a runner) comes through `make_session`, so the runner's
interpreter, working directory, environment and clocks are chosen in one place.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tile_harness._process import REAP_WAIT_S, STARTUP_TIMEOUT_S, RunnerSpec
from tile_harness._session import RunnerSession

if TYPE_CHECKING:
    import tile_artifacts as ta
    import tile_protocol as tp
    from tile_config import ResolvedConfig
    from tile_harness._sinks import Sink

__all__ = ["HERE", "Via", "make_session", "runner_python"]


@dataclass(frozen=True)
class Via:
    """How a runner starts beyond `PYTHON -m tile_runner` on this machine.

    `argv_prefix` goes in front of the runner's argument vector (`srun ... --`), `environ`
    replaces the inherited environment and `env` adds to `[runner] env` (a shard's GPU).
    `queued`: the runner waits in a batch queue before it starts, so its hello may take any
    time; `exit_signal` reads a signal out of the launcher's exit status; `exit_wait`: how long
    the process may take to exit once its stream ended.
    """

    argv_prefix: tuple[str, ...] = ()
    environ: Mapping[str, str] | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    queued: bool = False
    exit_signal: Callable[[int], int | None] | None = None
    exit_wait: float = REAP_WAIT_S


HERE = Via()
"""A runner started directly on this machine."""


def runner_python(resolved: ResolvedConfig) -> str:
    """The interpreter that runs kernels: `[runner] python`, else the CLI's own."""
    return resolved.config.runner.python or sys.executable


def make_session(
    request: tp.RunRequest,
    resolved: ResolvedConfig,
    sink: Sink,
    *,
    log_dir: Path,
    numbering: Callable[[], int] | None = None,
    isolate: bool = False,
    via: Via = HERE,
    redactor: ta.Redactor | None = None,
) -> RunnerSession:
    """A session that runs `request` to its end, telling `sink` everything.

    `isolate` starts one runner per case; `numbering` shares runner numbers (and log names)
    between the sessions of one run. `redactor`: the run's secrets, which its runners' stderr
    logs never hold (every session of a run directory passes its writer's); without one the
    runner writes its log itself.
    """
    runner = resolved.config.runner
    spec = RunnerSpec(
        python=runner_python(resolved),
        cwd=Path.cwd(),
        env_overrides={**runner.env, **via.env},
        case_timeout=runner.case_timeout,
        timeout=runner.timeout,
        isolate=isolate,
        argv_prefix=via.argv_prefix,
        environ=via.environ,
        startup_timeout=None if via.queued else STARTUP_TIMEOUT_S,
        exit_signal=via.exit_signal,
        exit_wait=via.exit_wait,
        redactor=redactor,
    )
    return RunnerSession(request, spec, sink, log_dir=log_dir, numbering=numbering)
