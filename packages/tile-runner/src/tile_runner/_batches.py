"""The first round's cases made ready in batches ahead of their turn (`_ahead` makes one
batch; this decides when, and what a batch that changed the process state means)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from tile_protocol import ConfigInfo, RunRequest, StateDiff, Step
from tile_runner._isolation import left_changed, lived_with

if TYPE_CHECKING:
    from tile_runner._ahead import Ready
    from tile_runner._context import CaseContext
    from tile_runner._isolation import StateGuard
    from tile_runner._plan import Unit

__all__ = ["Batches"]


class Session(Protocol):
    """What of the runner's session (`_session.Session`) the batches use."""

    request: RunRequest
    devices: list[Any]
    current: str | None
    restart: str | None

    def batch_step(
        self, step: Step, case_id: str, done: int | None, total: int | None, /,
        config: ConfigInfo | None = None,
    ) -> None:  # fmt: skip
        """Say a step of a batch (a `progress` message)."""


class Batches:
    """The first round's cases made ready in batches, a batch when its first case is due.

    When making a batch ready changed the process state (a kernel that sets a JAX flag while
    traced would change how the others of its batch compile), the state is put back, what was
    made is dropped and that batch's cases are made ready each in its own turn instead, so
    that the state guard names the case that did it. What a case's inputs change is reported
    after its turn; when they change what cannot be put back (a thread left running) and cases
    before it in the batch have not run, this runner ends before them (`Done.restart`) and a
    fresh one, compiling each case in its turn, runs them in the state the run began with.
    Earlier cases compile while a case's inputs are made, so a change seen after them is only
    laid at those inputs' door when it is one that is lived with (a module's setup, a daemon
    thread); any other sends the batch to the cases' own turns (or a fresh runner), where the
    guard sees one case at a time.
    """

    def __init__(self, session: Session, ctx: CaseContext, cases: list[Unit], guard: StateGuard):
        from tile_runner._ahead import batch_size, input_budget

        self._session, self._ctx, self._cases, self._guard = session, ctx, cases, guard
        request = session.request
        self._size = batch_size(request)
        self._budget = input_budget(session.devices)
        self._ready: dict[int, Ready] = {}
        self._stopped: str | None = None  # why this runner must end before the batch runs
        self._unclear = False  # the batch changed the state, and which case did is not known
        self._first = ""  # the id of the batch's first case
        self.changes: dict[str, list[StateDiff]] = {}
        """What a case's inputs changed when made ahead, reported after its turn."""
        self._own_turn_until = 0  # cases before this index are made ready in their turn

    def ready(self, index: int) -> Ready | None:
        """Case `index` made ready, or None to make it ready in its turn."""
        if self._size <= 1 or index < self._own_turn_until:
            return None
        if index not in self._ready:
            self._batch(index)
        ready = self._ready.pop(index, None)
        if ready is not None and ready.error is not None and ready.error[0] == "compile":
            # Compiled again in its turn: a kernel that broke beside it in the pool (set a
            # memory limit while traced, say) must not fail it, and a real error recurs.
            return None
        return ready

    def _batch(self, index: int) -> None:
        from tile_runner._ahead import prepare

        session = self._session
        batch = self._cases[index : index + self._size]
        self._first = batch[0][3]
        self._unclear = False

        def on_case(rid: str | None) -> None:
            session.current = rid

        readies = prepare(self._ctx, batch, budget=self._budget, say=session.batch_step,
                          on_case=on_case, made=self._inputs_changed)  # fmt: skip
        if self._stopped is not None:
            # The cases before it in the batch would run in a process it changed for good: a
            # fresh runner, asked to make each case ready in its turn, takes them all.
            session.restart = self._stopped
            return
        if self._unclear or self._state_changed():
            import jax

            # Traced again in their turns (JAX would reuse the traces), so that the guard
            # sees which case does it.
            jax.clear_caches()
            self._own_turn_until = index + len(readies)
            return
        self._ready = {index + i: r for i, r in enumerate(readies)}

    def _inputs_changed(self, rid: str, compiling: bool) -> bool:
        """After a case's inputs: keep what they changed for its turn; True ends the batch.

        `compiling`: earlier cases of the batch were compiling meanwhile (their kernels traced,
        which is user code too), so a change to put back or restart for may be theirs."""
        try:
            diffs, restart = self._guard.check()
        except Exception:  # the guard must never cost a case its result
            return False
        if compiling and not all(lived_with(d) for d in diffs):
            if restart:
                self._stopped = (f"making cases ready ahead of their turn (the inputs of `{rid}`, "
                                 f"earlier cases compiling) changed what cannot be put back "
                                 f"({left_changed(diffs)})")  # fmt: skip
            self._unclear = True
            return True
        if restart and rid != self._first:
            self._stopped = (f"making the inputs of `{rid}` ahead of its turn changed what "
                             f"cannot be put back ({left_changed(diffs)})")  # fmt: skip
        elif diffs:
            self.changes[rid] = diffs
        return bool(diffs)

    def _state_changed(self) -> bool:
        try:
            diffs, _ = self._guard.check()
        except Exception:  # the guard must never cost a case its result
            return False
        # A daemon thread a library started on first use is lived with, as after a case, and
        # so is what a module set up in the environment while first imported.
        return not all(lived_with(d) for d in diffs)
