"""The process-wide state a kernel can leave behind outside Python's modules and JAX.

`StateGuard` (`_isolation.py`) checks these beside the JAX flags, environment and signal
handlers. Each part takes its snapshot when it is made (before the first case) and `check()`
compares, puts back what it can and returns one `StateDiff` per change; a diff not restored
makes the runner end after the case. Each part exists because a tester's kernel broke the
cases after it: a closed `sys.stdout` (the runner's stderr) made the next failing case kill
the runner, an alarm left armed killed a later case with SIGALRM, a lowered recursion or file
limit made a later case fail, a profile hook slowed every later timing.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO, cast

from tile_protocol import StateDiff
from tile_protocol.format import format_seconds

__all__ = ["Part", "callable_name", "process_parts", "same", "show"]

_SHOWN = 160  # characters of a value shown in a finding


def same(a: object, b: object) -> bool:
    """Equality that never raises (a value's `==` may)."""
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def show(value: object) -> str:
    """A value as a finding shows it, cut to a readable length."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def callable_name(function: object) -> str:
    """`module.qualname` of a handler or hook, or its repr."""
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    module = getattr(function, "__module__", None)
    return f"{module}.{name}" if module and name else show(function)


class Part(Protocol):
    """One piece of process state: taken when made; `check` compares and puts it back."""

    def check(self) -> list[StateDiff]: ...


def process_parts() -> list[Part]:
    """Every part, snapshotted now; stdio first, so that the others' restores can print."""
    return [Stdio(), Timers(), RecursionLimit(), TraceHooks(), WarningFilters(), Umask(),
            ResourceLimits()]  # fmt: skip


# ---------------------------------------------------------------- stdio


def _closed(stream: object) -> bool:
    try:
        return bool(getattr(stream, "closed", False))
    except ValueError:
        return True


def _fd_identity(fd: int) -> tuple[int, int] | None:
    """What the descriptor points at (device, inode), or None when it is closed."""
    try:
        status = os.fstat(fd)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _fd_target(fd: int) -> str:
    """What the descriptor points at, for people: `pipe:[123]`, `/dev/null`, or `closed`."""
    if _fd_identity(fd) is None:
        return "closed"
    try:
        return str(Path(f"/proc/self/fd/{fd}").readlink())
    except OSError:  # no /proc (macOS)
        return "open"


def _reopen(stream: TextIO, fd: int, reading: bool) -> TextIO:
    """A new text stream on a closed stream's descriptor, with its encoding and buffering."""
    raw = io.FileIO(fd, "r" if reading else "w", closefd=False)
    buffered = io.BufferedReader(raw) if raw.readable() else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=stream.encoding, errors=stream.errors,
                            line_buffering=bool(stream.line_buffering),
                            write_through=bool(getattr(stream, "write_through", False)))  # fmt: skip


class Stdio:
    """sys.stdin/stdout/stderr and descriptors 0-2: a kernel may close or redirect them.

    The runner's sys.stdout *is* its sys.stderr (`protect_stdout`), so `sys.stdout.close()`
    closes the stream every later traceback is written to. A closed stream cannot be
    reopened: it is replaced by a new one on the same descriptor. A descriptor closed or
    pointed elsewhere is put back from a duplicate taken before the first case.
    """

    _NAMES = ("stdin", "stdout", "stderr")

    def __init__(self) -> None:
        self._streams: dict[str, tuple[TextIO, int]] = {}
        for name in self._NAMES:
            stream = getattr(sys, name)
            try:
                self._streams[name] = (stream, stream.fileno())
            except (AttributeError, OSError, ValueError):  # no stream, or one without a fd
                continue
        self._fds: dict[int, tuple[tuple[int, int], int, str]] = {}
        for fd in (0, 1, 2):
            identity = _fd_identity(fd)
            if identity is not None:
                self._fds[fd] = (identity, os.dup(fd), _fd_target(fd))

    def check(self) -> list[StateDiff]:
        # Descriptors first: a replacement stream is opened on the descriptor.
        return [*self._descriptors(), *self._objects()]

    def _descriptors(self) -> list[StateDiff]:
        diffs: list[StateDiff] = []
        for fd, (identity, spare, target) in self._fds.items():
            if _fd_identity(fd) == identity:
                continue
            after = _fd_target(fd)
            with contextlib.suppress(OSError):
                os.dup2(spare, fd, inheritable=True)
            restored = _fd_identity(fd) == identity
            diffs.append(StateDiff(kind="stdio", name=f"fd {fd}", before=target, after=after,
                                   restored=restored))  # fmt: skip
        return diffs

    def _objects(self) -> list[StateDiff]:
        fresh: dict[int, TextIO] = {}  # one replacement per stream: stdout and stderr stay one
        diffs: list[StateDiff] = []
        for name, (base, fd) in self._streams.items():
            now: object = getattr(sys, name)
            if now is base and not _closed(base):
                continue
            after = "closed" if now is base else show(now) + (" (closed)" if _closed(now) else "")
            replacement = base
            if _closed(base):
                if id(base) not in fresh:
                    fresh[id(base)] = _reopen(base, fd, reading=name == "stdin")
                replacement = fresh[id(base)]
                self._streams[name] = (replacement, fd)  # what later cases are compared with
            setattr(sys, name, replacement)
            diffs.append(StateDiff(kind="stdio", name=f"sys.{name}", before=show(base),
                                   after=after, restored=not _closed(getattr(sys, name))))  # fmt: skip
        return diffs


# ---------------------------------------------------------------- timers

_TIMERS: dict[str, tuple[int, str]] = {
    "ITIMER_REAL": (signal.ITIMER_REAL, "SIGALRM"),  # signal.alarm arms this one too
    "ITIMER_VIRTUAL": (signal.ITIMER_VIRTUAL, "SIGVTALRM"),
    "ITIMER_PROF": (signal.ITIMER_PROF, "SIGPROF"),
}
_DISARMED = (0.0, 0.0)


def _armed(timer: tuple[float, float], signame: str) -> str:
    delay, interval = timer
    text = f"{signame} in {format_seconds(delay)}"
    return text + (f", then every {format_seconds(interval)}" if interval else "")


class Timers:
    """Interval timers (`signal.setitimer`, `signal.alarm`): one left armed kills a later case.

    Only timers disarmed before the first case are watched: one armed by whoever started the
    runner counts down on its own and is not a case's doing.
    """

    def __init__(self) -> None:
        self._watched = [name for name, (which, _) in _TIMERS.items()
                         if signal.getitimer(which) == _DISARMED]  # fmt: skip

    def check(self) -> list[StateDiff]:
        diffs: list[StateDiff] = []
        for name in self._watched:
            which, signame = _TIMERS[name]
            now = signal.getitimer(which)
            if now == _DISARMED:
                continue
            signal.setitimer(which, 0)
            restored = signal.getitimer(which) == _DISARMED
            diffs.append(StateDiff(kind="timers", name=name, before="disarmed",
                                   after=_armed(now, signame), restored=restored))  # fmt: skip
        return diffs


# ---------------------------------------------------------------- interpreter settings


class RecursionLimit:
    """`sys.setrecursionlimit`: a lower one fails deep traces later, a higher one may crash."""

    def __init__(self) -> None:
        self._base = sys.getrecursionlimit()

    def check(self) -> list[StateDiff]:
        now = sys.getrecursionlimit()
        if now == self._base:
            return []
        sys.setrecursionlimit(self._base)
        return [StateDiff(kind="recursion_limit", before=str(self._base), after=str(now),
                          restored=sys.getrecursionlimit() == self._base)]  # fmt: skip


# Each getter with its setter; the hooks' own types differ, and only identity matters here.
_HOOKS: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {
    "sys.setprofile": (sys.getprofile, sys.setprofile),
    "sys.settrace": (sys.gettrace, sys.settrace),
    "threading.setprofile": (threading.getprofile, threading.setprofile),
    "threading.settrace": (threading.gettrace, threading.settrace),
}


def _hook_name(hook: object) -> str:
    return "none" if hook is None else callable_name(hook)


class TraceHooks:
    """Profile and trace functions: one left set runs on every later call and skews timings."""

    def __init__(self) -> None:
        self._base = {name: get() for name, (get, _) in _HOOKS.items()}

    def check(self) -> list[StateDiff]:
        diffs: list[StateDiff] = []
        for name, (get, put) in _HOOKS.items():
            before, after = self._base[name], get()
            if same(before, after):
                continue
            put(before)
            diffs.append(StateDiff(kind="trace_hooks", name=name, before=_hook_name(before),
                                   after=_hook_name(after), restored=same(get(), before)))  # fmt: skip
        return diffs


_Filter = tuple[Any, ...]


def _pattern(value: object) -> str:
    """A filter's message or module: a compiled pattern, a plain string, or None."""
    text = getattr(value, "pattern", value)
    return text if isinstance(text, str) else ""


def _filter_text(item: _Filter) -> str:
    """A warnings filter as `-W` writes it: `action:message:category:module:lineno`."""
    action, message, category, module, lineno = item
    kind = getattr(category, "__name__", show(category))
    return f"{action}:{_pattern(message)}:{kind}:{_pattern(module)}:{lineno or ''}".rstrip(":")


class WarningFilters:
    """The warnings filters and `showwarning`: a kernel's `simplefilter("error")` or a
    `catch_warnings` never exited would turn or swallow every later case's warnings."""

    def __init__(self) -> None:
        # The module's own list (typed read-only, mutated in place by warnings itself).
        self._list = cast("list[_Filter]", warnings.filters)
        self._items: list[_Filter] = list(warnings.filters)
        self._show = warnings.showwarning

    def check(self) -> list[StateDiff]:
        now: list[_Filter] = list(warnings.filters)
        diffs = self._filter_diffs(now)
        if warnings.showwarning is not self._show:
            diffs.append(StateDiff(kind="warnings", name="showwarning",
                                   before=callable_name(self._show),
                                   after=callable_name(warnings.showwarning)))  # fmt: skip
        if not diffs and warnings.filters is self._list:
            return []
        restored = self._restore()
        return [StateDiff(kind=d.kind, name=d.name, before=d.before, after=d.after,
                          restored=restored) for d in diffs]  # fmt: skip

    def _filter_diffs(self, now: list[_Filter]) -> list[StateDiff]:
        if now == self._items:
            return []
        added = [f for f in now if f not in self._items]
        removed = [f for f in self._items if f not in now]
        if not added and not removed:
            return [StateDiff(kind="warnings", name="filters order")]
        return [
            *(StateDiff(kind="warnings", name="filters", after=_filter_text(f)) for f in added),
            *(StateDiff(kind="warnings", name="filters", before=_filter_text(f)) for f in removed),
        ]

    def _restore(self) -> bool:
        warnings.filters = self._list  # a `catch_warnings` left open put its own list there
        self._list[:] = self._items
        warnings.showwarning = self._show
        # warnings caches each module's decisions against a version of the filters; its own
        # functions move the version on every change, and so must a change made behind them.
        mutated = getattr(warnings, "_filters_mutated", None)
        if callable(mutated):
            mutated()
        return list(warnings.filters) == self._items and warnings.showwarning is self._show


# ---------------------------------------------------------------- OS settings


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask


class Umask:
    """`os.umask`: a kernel's mask would change the mode of every file later cases write."""

    def __init__(self) -> None:
        self._base = _umask()

    def check(self) -> list[StateDiff]:
        now = _umask()
        if now == self._base:
            return []
        os.umask(self._base)
        return [StateDiff(kind="umask", before=f"{self._base:04o}", after=f"{now:04o}",
                          restored=_umask() == self._base)]  # fmt: skip


class ResourceLimits:
    """`resource.setrlimit`: a lowered open-file or memory limit fails a later case.

    A process that is not root cannot raise a hard limit it lowered, so a lowered hard limit
    is not restored and the runner is replaced.
    """

    _NAMES = ("RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_CORE",
              "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_MEMLOCK")  # fmt: skip

    def __init__(self) -> None:
        self._base: dict[str, tuple[int, tuple[int, int]]] = {}
        try:
            import resource
        except ImportError:  # not a POSIX system: no limits to watch
            return
        for name in self._NAMES:
            which = getattr(resource, name, None)
            if isinstance(which, int):
                self._base[name] = (which, resource.getrlimit(which))

    def check(self) -> list[StateDiff]:
        import resource

        diffs: list[StateDiff] = []
        for name, (which, before) in self._base.items():
            after = resource.getrlimit(which)
            if after == before:
                continue
            # Refused when a hard limit was lowered by a process without the right to raise it.
            with contextlib.suppress(OSError, ValueError):
                resource.setrlimit(which, before)
            diffs.append(StateDiff(kind="rlimits", name=name, before=_limits(before),
                                   after=_limits(after),
                                   restored=resource.getrlimit(which) == before))  # fmt: skip
        return diffs


def _limits(limits: tuple[int, int]) -> str:
    import resource

    soft, hard = ("unlimited" if v == resource.RLIM_INFINITY else str(v) for v in limits)
    return f"soft {soft}, hard {hard}"
