"""Cases made ready ahead of their turn: a batch's inputs, and all its compilations at once.

A case used to compile when its turn came, one after another: on the H200 a fresh tile-std
run spent most of its 41 s compiling while 15 cores idled, and a compile pool of 8 threads
did the same programs in a third of the time. Here a batch of cases gets its inputs one case
after another (on the runner's thread: input makers are user code, and `tile.data` names the
case it serves), each case's kernel, references and check programs handed to one pool as
soon as its inputs are made, so that they compile while the next inputs are drawn (drawing
programs compile too, on a fresh machine), until the persistent cache answers for one of them
(`_Compiles`); only when all are compiled are the cases of the batch checked and timed, one
at a time, with nothing compiling beside them.

Memory stays bounded: a batch holds at most `batch_size` cases and stops taking inputs once
they pass `input_budget` bytes; what a case holds is dropped when the case is done.

While a batch is made ready no case is in flight, so the runner says what it is doing as it
goes (`Say`: a `progress` message as each case's inputs are made and as each case's
compilations are awaited, with how many ended), and the CLI bounds each silence there by the
case timeout.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from tile_protocol import ConfigInfo, Phase, RunRequest, StateDiff, Step
from tile_runner._api import KernelDef
from tile_runner._clock import Part, Stopwatch
from tile_runner._configure import Configured, configure
from tile_runner._context import CaseContext, case_inputs
from tile_runner._discover import USER_ERRORS
from tile_runner._isolation import OWN_THREADS
from tile_runner._plan import Unit
from tile_runner._process_state import callable_name
from tile_runner._stage import Building, Built, build, check_program
from tile_runner._vjp import mode_kernel

__all__ = ["Ready", "Say", "batch_size", "hooks_left_by", "input_budget", "prepare"]

_T = TypeVar("_T")


class Say(Protocol):
    """Tell the CLI a batch step: (step, case id, done, total); done of total count the cases
    whose compilations ended (None: a step of one case). `config`: on the `inputs` step, the
    tunable values the case runs with, for the screen (protocol 1.20)."""

    def __call__(
        self, step: Step, rid: str, done: int | None, total: int | None, /,
        config: ConfigInfo | None = None,
    ) -> None: ...  # fmt: skip


def _quiet(
    step: Step, rid: str, done: int | None, total: int | None, /, config: ConfigInfo | None = None
) -> None:
    """No one listens to the steps."""


_MAX_WORKERS = 16
_CASES_PER_WORKER = 4  # a batch: enough cases to keep every thread busy to its end
_MAX_BATCH = 32
_HOST_BUDGET = 1 << 30  # input bytes a batch may hold without a device memory figure


@dataclass
class Ready:
    """One case made ready before its turn, or where that failed, and the seconds it cost."""

    configured: Configured | None = None
    call: tuple[KernelDef, Callable[..., Any]] | None = None
    """The case's mode's kernel (`fwd`: the kernel itself) and the function it times."""
    args: tuple[Any, ...] | None = None
    built: Built | None = None
    error: tuple[Phase, BaseException] | None = None
    spent: dict[Part | None, float] = field(default_factory=dict[Part | None, float])
    """Seconds by accounting part (None: `other`), credited to the case's stopwatch."""

    def credit(self, part: Part | None, seconds: float) -> None:
        self.spent[part] = self.spent.get(part, 0.0) + seconds

    def stopwatch(self) -> Stopwatch:
        """A stopwatch for the case's turn that already holds what was spent ahead."""
        watch = Stopwatch()
        for part, seconds in self.spent.items():
            watch.credit(part, seconds)
        return watch


def _workers() -> int:
    """Threads that compile at once: the cores this process may use, at most 16."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity API (macOS)
        cores = os.cpu_count() or 1
    return max(1, min(_MAX_WORKERS, cores))


def batch_size(request: RunRequest) -> int:
    """Cases compiled together: 1 (each in its turn) unless asked, where that matters or
    nothing is timed.

    Batches are asked for (`compile_ahead`) by a CLI that knows their `progress` messages and
    restarts a crashed runner without them. With `cache_explain` every compile-cache event
    names the case in flight, so cases compile in their turn; `inspect` and `build` compile
    as their own output.
    """
    if (
        not request.compile_ahead
        or request.cache_explain
        or request.command not in ("bench", "test", "tune")
    ):
        return 1
    return min(_MAX_BATCH, _CASES_PER_WORKER * _workers())


def input_budget(devices: Sequence[Any]) -> int:
    """Input bytes a batch may hold at once: a quarter of the device's memory, else 1 GiB."""
    try:
        stats: dict[str, int] | None = devices[0].memory_stats() if devices else None
        limit = int((stats or {}).get("bytes_limit") or 0)
    except Exception:
        limit = 0
    return limit // 4 if limit > 0 else _HOST_BUDGET


def _nbytes(args: Any) -> int:
    import jax

    return sum(int(getattr(leaf, "nbytes", 0)) for leaf in jax.tree_util.tree_leaves(args))


def _inputs(ctx: CaseContext, unit: Unit, say: Say) -> Ready:
    """Configuration and inputs of one unit (the time is `inputs`, as it always was)."""
    kernel, case, values, rid = unit
    ready = Ready()
    t0 = time.perf_counter()
    phase: Phase = "plan"
    try:
        mode_kernel(kernel, kernel.fn, case.mode)  # a mode the kernel does not declare
        phase = "tunables"
        configured = configure(kernel, case, tuning=ctx.tuning, overrides=ctx.tunables, unit=values)
        ready.configured = configured
        moded = mode_kernel(kernel, configured.fn, case.mode)  # `fwd`: the kernel itself
        ready.call = (moded, configured.fn if case.mode == "fwd" else moded.fn)
        phase = "inputs"
        say("inputs", rid, None, None, config=configured.info)
        ready.args = case_inputs(ctx, moded, case)
    except USER_ERRORS as exc:
        ready.error = (phase, exc)
    ready.credit("inputs", time.perf_counter() - t0)
    return ready


def prepare(
    ctx: CaseContext,
    units: Sequence[Unit],
    *,
    budget: int,
    compile_: bool = True,
    say: Say = _quiet,
    on_case: Callable[[str | None], None] = lambda _: None,
    made: Callable[[str, bool], bool] = lambda _rid, _compiling: False,
) -> list[Ready]:
    """Make the leading units of `units` ready: inputs until `budget` bytes (at least one
    unit), each unit's compilations (with `compile_`) handed to one pool as soon as its inputs
    are made, so that they compile while the next units' inputs are drawn.

    `say` is told each step as it is taken (`Say`); `on_case(rid)` which unit's inputs are
    being made (None after); `made(rid, compiling)` after them, True to take no more units (the
    process state guard found a change; `compiling`: earlier units' compilations ran
    meanwhile, so the change may be theirs). Returns one Ready per unit taken, in order; the
    caller goes on from the first unit not taken.
    """
    readies: list[Ready] = []
    held = 0
    with _Compiles(ctx, say) if compile_ else contextlib.nullcontext() as compiles:
        for unit in units:
            if readies and held >= budget:
                break
            on_case(unit[3])
            ready = _inputs(ctx, unit, say)
            readies.append(ready)
            held += _nbytes(ready.args) if ready.args is not None else 0
            stop = made(unit[3], compiles is not None and compiles.started)
            if compiles is not None:
                compiles.submit(unit[3], ready)
            if stop:
                break
        on_case(None)
        if compiles is not None:
            compiles.finish()
    return readies


def _seconds(work: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    # A check program that does not compile is compiled again (and fails) at the check.
    with contextlib.suppress(Exception):
        work()
    return time.perf_counter() - t0


class _Compiles:
    """A batch's compilations in one pool: each case's submitted as soon as its inputs are
    made, then all awaited and the pool's wall time shared out.

    Compiling beside the inputs pays where XLA compiles (it does so without the GIL); where
    the persistent cache answers, tracing and lowering hold the GIL as the inputs do, and the
    two only slow each other (a warm tile-std run on a 16-core H100: inputs 1.0 -> 2.0 s,
    compile 2.2 -> 1.7 s). So once a kernel of the batch came from the cache, the next cases'
    compilations wait for the last inputs, as they all did before.

    What is shared is the time spent handing the compilations over (tracing a reference's
    upcast inputs, say) and the time the batch waits after its last inputs; what compiled
    while inputs were drawn cost the batch nothing more. So the cases' accounting adds up to
    the time the batch took, and a case compiled alone gets all of it, as before.
    """

    def __init__(self, ctx: CaseContext, say: Say) -> None:
        self._ctx, self._say = ctx, say
        # The state guard does not count these threads as a case's (`OWN_THREADS`).
        self._pool = ThreadPoolExecutor(max(3, _workers()), thread_name_prefix=OWN_THREADS)
        self._jobs: list[tuple[str, Ready, Building]] = []
        self._later: list[tuple[str, Ready]] = []  # handed over after the last inputs
        self._handing_s = 0.0  # seconds `build` took on this thread

    def __enter__(self) -> _Compiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    @property
    def started(self) -> bool:
        """Whether any case's compilations were handed to the pool."""
        return bool(self._jobs)

    def submit(self, rid: str, ready: Ready) -> None:
        """Hand the case's compilations to the pool now, or after the last inputs once the
        cache answers (none for a case whose inputs failed)."""
        if ready.error is not None:
            return
        if self._later or self._cache_answers():
            self._later.append((rid, ready))
        else:
            self._build(rid, ready)

    def _cache_answers(self) -> bool:
        """Whether a kernel compiled so far came from the persistent cache."""
        for _, _, building in self._jobs:
            job = building.kernel_job
            if job.done() and job.exception() is None and job.result()[0].phases.cache_hit:
                return True
        return False

    def _build(self, rid: str, ready: Ready) -> None:
        assert ready.call is not None and ready.args is not None
        kernel, fn = ready.call
        t0 = time.perf_counter()
        try:
            watched = _HookWatch(self._pool, rid)
            self._jobs.append(
                (rid, ready, build(watched, self._ctx.command, kernel, fn, ready.args))
            )
        except USER_ERRORS as exc:
            ready.error = ("compile", exc)
        self._handing_s += time.perf_counter() - t0

    def finish(self) -> None:
        """Await every compilation, then the check programs, in the pool.

        `say` is told, in plan order, which case's compilations are awaited and of how many
        cases they ended (k of n; n of n at the end), so that no silence outlasts one case's
        compile. Each case is credited its share of the wait in proportion to the seconds its
        own compilations took on their threads.
        """
        for rid, ready in self._later:
            self._build(rid, ready)
        jobs, say = self._jobs, self._say
        if not jobs:
            return
        t0 = time.perf_counter()
        for done, (rid, ready, building) in enumerate(jobs):
            say("compile", rid, done, len(jobs))
            try:
                ready.built = building.result()
            except USER_ERRORS as exc:  # the kernel did not compile
                ready.error = ("compile", exc)
        say("compile", jobs[-1][0], len(jobs), len(jobs))
        t1 = time.perf_counter()
        checks: list[tuple[Ready, Future[float]]] = [
            (r, self._pool.submit(_seconds, lambda b=r.built: check_program(b)))
            for _, r, _ in jobs
            if r.built is not None
        ]
        check_s = [(r, job.result()) for r, job in checks]
        t2 = time.perf_counter()
        compiled = [(r, r.built.kernel_s if r.built else 0.0, r.built.reference_s if r.built else 0.0)
                    for _, r, _ in jobs]  # fmt: skip
        _share(self._handing_s + t1 - t0, compiled)
        total = sum(s for _, s in check_s)
        for ready, seconds in check_s:
            ready.credit("check", (t2 - t1) * (seconds / total if total > 0 else 1 / len(check_s)))


def _thread_hooks() -> tuple[Any, Any]:
    """This thread's own (trace, profile) hooks: `sys.settrace` sets them per thread."""
    return sys.gettrace(), sys.getprofile()


def _put_back_thread_hooks(before: tuple[Any, Any]) -> list[StateDiff]:
    """Put this thread's hooks back as `_thread_hooks()` gave them; a diff for each changed (a
    kernel traced on a compile thread set one there, where no guard of the main thread sees
    it)."""
    diffs: list[StateDiff] = []
    for name, was, now, put in (("sys.settrace", before[0], sys.gettrace(), sys.settrace),
                                ("sys.setprofile", before[1], sys.getprofile(), sys.setprofile)):  # fmt: skip
        if now is not was:
            put(was)
            diffs.append(StateDiff(kind="trace_hooks", name=name, before=_hook_name(was),
                                   after=_hook_name(now), restored=True))  # fmt: skip
    return diffs


def _hook_name(hook: object) -> str:
    return "none" if hook is None else callable_name(hook)


_LEFT_ON_THREADS: dict[str, list[StateDiff]] = {}
"""Trace and profile hooks a case's compilations left set on pool threads (put back there),
by case id, until the session reports them after the case (`hooks_left_by`)."""
_LEFT_LOCK = threading.Lock()


def hooks_left_by(rid: str) -> list[StateDiff]:
    """What case `rid`'s compilations left set on their pool threads (then put back)."""
    with _LEFT_LOCK:
        return _LEFT_ON_THREADS.pop(rid, [])


class _HookWatch(Executor):
    """`pool` for one case's compilations: each job puts back a trace or profile hook its
    work left set on its thread (hooks are per thread, where no guard of the main thread can
    see them, and the thread compiles other cases next) and keeps it against the case."""

    def __init__(self, pool: Executor, rid: str) -> None:
        self._pool, self._rid = pool, rid

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        return self._pool.submit(self._watched, fn, *args, **kwargs)

    def _watched(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        before = _thread_hooks()
        try:
            return fn(*args, **kwargs)
        finally:
            if diffs := _put_back_thread_hooks(before):
                with _LEFT_LOCK:
                    _LEFT_ON_THREADS.setdefault(self._rid, []).extend(diffs)


def _share(wall: float, cases: list[tuple[Ready, float, float]]) -> None:
    """Credit `wall` to the cases in proportion to their compilations' thread seconds.

    Within a case's share the kernel's own seconds come first (`compile`), the rest is what
    its references added (`reference_compile`): a case compiled alone is accounted as
    before the batches, its kernel's time and the references' excess over it.
    """
    total = sum(k + r for _, k, r in cases)
    for ready, kernel_s, reference_s in cases:
        share = wall * (kernel_s + reference_s) / total if total > 0 else wall / len(cases)
        kernel_part = min(kernel_s, share) if total > 0 else share
        ready.credit("compile", kernel_part)
        ready.credit("reference_compile", share - kernel_part)
