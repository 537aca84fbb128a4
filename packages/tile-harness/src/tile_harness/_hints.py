"""What to do next after a failure: one hint per kind of failure seen in a run.

A kernel that raised is not a runner killed by SIGSEGV (native code), nor one killed by
SIGKILL (most often out of memory), nor one that hung; each gets the hint for what happened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tile_harness._failure_kinds import declined
from tile_harness._process import NOT_PROTOCOL

if TYPE_CHECKING:
    import tile_protocol as tp

__all__ = ["failure_hints"]

_RAISED_PHASES = frozenset({"inputs", "compile", "run", "reference", "check", "work"})
_NATIVE = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"})
_RUNNER = frozenset({"RunnerCrash", "RunnerTimeout", "RunnerError"})
_SIGNAL = re.compile(r"killed by (SIG[A-Z]+)")


def _signal_of(failure: tp.Failure) -> str | None:
    match = _SIGNAL.search(failure.message)
    return match.group(1) if match else None


def _startup_hint(failures: Sequence[tp.Failure]) -> str:
    if any(f.phase == "startup" and NOT_PROTOCOL in f.message for f in failures):
        return (
            "what `[runner] python` (or TILE_RUNNER_PYTHON) started is not a tile runner: it "
            "must run `-m tile_runner` with the arguments it is given (a wrapper script passes "
            "them on, and prints nothing to stdout itself)"
        )
    return (
        "the runner did not start: check that `[runner] python` (or TILE_RUNNER_PYTHON) "
        "has tile-runner installed and that `[runner] env` / XLA_FLAGS are valid; its "
        "stderr is in `logs/runner-1.stderr.log` of the run directory"
    )


def failure_hints(failures: Sequence[tp.Failure]) -> list[str]:
    """One hint per kind of failure seen, saying what to do next (a case its kernel declined
    needs none)."""
    failures = [f for f in failures if not declined(f)]
    phases = {f.phase for f in failures}
    # A runner that died before its first case is a startup failure, not a case's crash.
    crashes = [f for f in failures if f.error_type == "RunnerCrash" and f.case_id]
    signals = {s for f in crashes if (s := _signal_of(f)) is not None}
    rerun = "rerun it alone with `tile bench --case ID --isolate`"
    hints: list[str] = []
    if any(f.error_type == "PluginNotFound" for f in failures):
        hints.append(
            "a kernel plugin is not installed where the runner runs: install it in the "
            "project's environment (`uv add tile-std`, or `pip install tile-std`), or fix its "
            "name in `[project] plugins` / `--plugin` (docs/getting-started.md)"
        )
    if any(f.phase == "import" and f.error_type != "PluginNotFound" for f in failures):
        hints.append(
            "a kernel module did not import: check `[project] modules`/`paths` in tile.toml "
            "(modules import with the project root on sys.path; install a packaged project "
            "with `pip install -e .`), or run `tile list` to see what loads"
        )
    if "startup" in phases:
        hints.append(_startup_hint(failures))
    if native := sorted(signals & _NATIVE):
        hints.append(
            f"the runner crashed with {', '.join(native)} in native code: an out-of-bounds "
            "access in a Pallas kernel, a bad custom call or a jaxlib bug; the native stack "
            f"is in its stderr under `logs/` of the run directory (`-vv` shows its end); {rerun}"
        )
    if "SIGKILL" in signals:
        hints.append(
            "the runner was killed by SIGKILL, most often by the out-of-memory killer "
            f"(`dmesg` says); try a smaller case (`-a shape=...`) or {rerun}"
        )
    if any(_signal_of(f) is None for f in crashes):
        hints.append(
            "the runner exited in the middle of a case (`sys.exit`/`os._exit` in a kernel or "
            f"its inputs?); its stderr is under `logs/` of the run directory; {rerun}"
        )
    if any(f.error_type == "RunnerTimeout" and f.case_id for f in failures):
        hints.append(
            "a case said nothing for `case_timeout` seconds (a hang, or a very long compile): "
            "raise `--case-timeout` if it is only slow; its stderr is under `logs/`"
        )
    if any(f.phase in _RAISED_PHASES and f.error_type not in _RUNNER for f in failures):
        hints.append(
            "a kernel raised: `-vv` shows its traceback (the whole one is in the runner's "
            "stderr log under `logs/`; report.json's failures hold its end)"
        )
    return hints
