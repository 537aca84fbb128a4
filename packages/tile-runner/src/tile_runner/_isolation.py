"""Every case starts from the same process state, whatever the case before it did.

One runner serves many cases, so anything a kernel changes in the process is inherited by the
cases after it: a kernel that turns on `jax_enable_x64` makes every later case run in x64, one
that changes the working directory breaks every later relative path. Those later cases would
fail, or measure something else, and be blamed for it. `StateGuard` takes the state a kernel
can change before the first case; after each case it compares, puts back what can safely be
put back (flags, directory, environment, sys.path, Python signal handlers, and the
process-wide state of `_process_state`: stdio, interval timers, recursion limit, profile and
trace hooks, warnings filters, umask, resource limits), and asks for a fresh runner when
something cannot (a non-daemon thread still running, a handler Python did not set, a hard
limit lowered). A daemon thread is named once and then lived with, and so is an environment
variable a module's top-level code added as the case imported it: that is the module's own
setup (jax's Mosaic GPU points its compiler at its runtime so), and putting it back would break
the module for every later case. An audit hook tells who set a variable.
The case that changed it is named in a `StateChange` message.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from tile_protocol import StateDiff
from tile_runner._process_state import Part, callable_name, process_parts, same, show

__all__ = ["DAEMON", "OWN_THREADS", "StateGuard", "forces_restart", "left_changed", "lived_with"]

_SECRET = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
_DEFAULT_DEVICE = "jax_default_device"
_RUNNING = "thread running"
DAEMON = "daemon thread running"
"""A StateDiff's `after` for a daemon thread still running: lived with, never a restart."""
OWN_THREADS = "tile-runner-own"
"""The name prefix of the runner's own threads (the compile pool): never a case's doing."""


def left_changed(diffs: list[StateDiff]) -> str:
    """What of `diffs` stays changed (neither put back nor kept as a module's setup), named
    for a message: `kind name, ...`."""
    return ", ".join(f"{d.kind} {d.name}".strip() for d in diffs if not (d.restored or d.kept))


def forces_restart(diff: StateDiff) -> bool:
    """Whether the runner must end after this change: it stays changed, and it is not a
    daemon thread (those are lived with). The one rule for a case and for inputs made ahead."""
    return not (diff.restored or diff.kept) and diff.after != DAEMON


def lived_with(diff: StateDiff) -> bool:
    """Whether this change is kept as part of the process (a module's setup, a daemon thread)
    rather than put back or restarted for."""
    return diff.kept or diff.after == DAEMON


def _env_value(name: str, value: str | None) -> str | None:
    """An environment value for a finding; secret-looking names keep their value private."""
    if value is None:
        return None
    return "<redacted>" if _SECRET.search(name) else show(value)


def _handler_name(handler: object) -> str:
    if handler is None:
        return "a handler not set from Python"
    if isinstance(handler, signal.Handlers):
        return handler.name
    return callable_name(handler)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _jax_config() -> dict[str, object]:
    """Every JAX configuration value as this thread sees it (thread-local overrides included)."""
    from tile_runner._jaxapi import config

    values: dict[str, object] = {}
    for name, value in dict(config.values).items():
        try:
            values[name] = getattr(config, name)
        except AttributeError:  # absl-style flags are read from the table only
            values[name] = value
    return values


def _cwd() -> str | None:
    try:
        return str(Path.cwd())
    except OSError:  # the directory was removed under the process
        return None


# The signals whose handlers are watched, listed once: `signal.valid_signals()` builds a set of
# enum members on every call, two thirds of what comparing the handlers after a case cost.
_SIGNALS = tuple(
    int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)
)


def _handlers() -> dict[int, object]:
    handlers: dict[int, object] = {}
    for signum in _SIGNALS:
        try:
            handlers[int(signum)] = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
    return handlers


@dataclass(frozen=True)
class _State:
    """What a case can change in the runner's process and the next case would inherit."""

    jax_config: dict[str, object]
    cwd: str | None
    environ: dict[str, str]
    sys_path: list[str]
    handlers: dict[int, object]
    threads: frozenset[threading.Thread]

    @classmethod
    def now(cls) -> _State:
        return cls(
            jax_config=_jax_config(),
            cwd=_cwd(),
            environ=dict(os.environ),
            sys_path=list(sys.path),
            handlers=_handlers(),
            threads=frozenset(t for t in threading.enumerate() if t.is_alive()),
        )


class StateGuard:
    """The process state before the first case, and what each case changed of it.

    `check()` after every case: each change becomes a `StateDiff`, restored when that is safe;
    the second value says whether something stayed changed, in which case the runner must end
    before the next case. Call it on the thread that runs the cases (the main thread: signal
    handlers can only be set there).
    """

    def __init__(self) -> None:
        self._base = _State.now()
        self._parts: list[Part] = process_parts()
        self._adopted: set[threading.Thread] = set()
        self._setup = _module_setup()

    def check(self) -> tuple[list[StateDiff], bool]:
        """What changed since the start, restored where safe; True when a restart is needed."""
        # Stdio first: a closed stderr would swallow what the other restores say.
        parts = [d for part in self._parts for d in part.check()]
        now = _State.now()
        diffs = [
            *parts,
            *self._config(now),
            *self._cwd(now),
            *self._environ(now),
            *self._sys_path(now),
            *self._handlers(now),
            *self._threads(now),
        ]
        # A daemon thread is reported once and then lived with: libraries start such helpers
        # on first use, and a runner restarted for each would restart for every case.
        return diffs, any(forces_restart(d) for d in diffs)

    # ---------------------------------------------------------------- one kind each

    def _config(self, now: _State) -> list[StateDiff]:
        if same(now.jax_config, self._base.jax_config):  # the common case, at C speed
            return []
        diffs: list[StateDiff] = []
        for name, before in self._base.jax_config.items():
            after = now.jax_config.get(name, before)
            if same(before, after):
                continue
            kind = "default_device" if name == _DEFAULT_DEVICE else "jax_config"
            diffs.append(
                StateDiff(
                    kind=kind,
                    name=name,
                    before=show(before),
                    after=show(after),
                    restored=_restore_jax(name, before),
                )
            )
        return diffs

    def _cwd(self, now: _State) -> list[StateDiff]:
        before = self._base.cwd
        if before is None or now.cwd == before:
            return []
        try:
            os.chdir(before)
            restored = _cwd() == before
        except OSError:
            restored = False
        return [StateDiff(kind="cwd", before=before, after=now.cwd, restored=restored)]

    def _environ(self, now: _State) -> list[StateDiff]:
        """Variables changed, put back; one a module's top-level code added, kept."""
        base = self._base.environ
        if now.environ == base:
            return []
        diffs: list[StateDiff] = []
        for name in sorted(set(base) | set(now.environ)):
            before, after = base.get(name), now.environ.get(name)
            if before == after:
                continue
            kept = before is None and name in self._setup
            if kept and after is not None:
                base[name] = after  # the module's setup: the state later cases start from
            diffs.append(
                StateDiff(
                    kind="environment",
                    name=name,
                    before=_env_value(name, before),
                    after=_env_value(name, after),
                    restored=not kept and _restore_env(name, before),
                    kept=kept,
                )
            )
        return diffs

    def _sys_path(self, now: _State) -> list[StateDiff]:
        base = self._base.sys_path
        if now.sys_path == base:
            return []
        sys.path[:] = base
        restored = sys.path == base
        added = [p for p in now.sys_path if p not in base]
        removed = [p for p in base if p not in now.sys_path]
        if not added and not removed:  # the same entries in another order
            return [
                StateDiff(kind="sys_path", name="order", before=show(base),
                          after=show(now.sys_path), restored=restored)
            ]  # fmt: skip
        return [
            *(StateDiff(kind="sys_path", after=p, restored=restored) for p in added),
            *(StateDiff(kind="sys_path", before=p, restored=restored) for p in removed),
        ]

    def _handlers(self, now: _State) -> list[StateDiff]:
        diffs: list[StateDiff] = []
        for signum, before in self._base.handlers.items():
            after = now.handlers.get(signum, before)
            if same(before, after):
                continue
            diffs.append(
                StateDiff(
                    kind="signal_handlers",
                    name=_signal_name(signum),
                    before=_handler_name(before),
                    after=_handler_name(after),
                    restored=_restore_handler(signum, before),
                )
            )
        return diffs

    def _threads(self, now: _State) -> list[StateDiff]:
        # A running thread cannot be stopped from outside: a non-daemon one keeps competing
        # with the next case's timings and keeps the process alive, so only a new runner gets
        # rid of it. A daemon thread is named once, then taken as part of the process.
        started = sorted(now.threads - self._base.threads - self._adopted, key=lambda t: t.name)
        started = [t for t in started if not t.name.startswith(OWN_THREADS)]
        running = [t for t in started if t.is_alive()]
        self._adopted.update(t for t in running if t.daemon)
        return [
            StateDiff(
                kind="threads",
                name=t.name,
                after=DAEMON if t.daemon else _RUNNING,
                restored=False,
            )
            for t in running
        ]


_SETUP: set[str] = set()


@functools.cache
def _module_setup() -> set[str]:
    """Names of the environment variables a module's top-level code has set in this process
    (live: filled by an audit hook, registered once, from the first guard on)."""
    sys.addaudithook(_on_audit)
    return _SETUP


def _on_audit(event: str, args: tuple[object, ...]) -> None:
    """On `os.environ[...] = ...`: was it a module's own top-level code, run as imported?"""
    if event != "os.putenv":
        return
    here = inspect.currentframe()  # who set it: the only way to see is the stack
    frame = here.f_back if here is not None else None
    while frame is not None and frame.f_globals.get("__name__") == "os":
        frame = frame.f_back  # os.environ's own methods
    # The script the process runs is module-level code too, and never an import.
    if frame is None or frame.f_code.co_name != "<module>":
        return
    if frame.f_globals.get("__name__") != "__main__":
        name = args[0]
        _SETUP.add(os.fsdecode(name) if isinstance(name, (bytes, str)) else str(name))


def _restore_jax(name: str, before: object) -> bool:
    """Set a JAX flag back; False when JAX refuses or a thread-local override still wins."""
    from tile_runner._jaxapi import config

    try:
        config.update(name, before)
    except Exception:
        return False
    return same(_jax_config().get(name), before)


def _restore_env(name: str, before: str | None) -> bool:
    if before is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = before
    return os.environ.get(name) == before


def _restore_handler(signum: int, before: object) -> bool:
    """Reinstall a Python-level handler; one Python did not set (None) cannot be put back."""
    if before is None:
        return False
    try:
        signal.signal(signum, before)  # pyright: ignore[reportArgumentType]
    except (OSError, ValueError, TypeError):
        return False
    return same(signal.getsignal(signum), before)
