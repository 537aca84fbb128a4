"""The rules a runner's stream must follow, checked message by message where it is read.

The pipe from a runner is a trust boundary: a kernel (or a library it calls) runs inside the
runner and can fork, write into inherited descriptors, or break the runner's own state, and a
runner of another version can simply be wrong. `StreamValidator` sees each decoded message in
order and says whether to believe it. Two kinds of rejection:

- *forged*: the message did not come from the runner the CLI started (wrong token, wrong pid,
  a sequence number that does not grow). Dropped and logged as noise: nobody sent it.
- *invalid*: the runner sent it, but it breaks the protocol (no `hello` first, a case that was
  not planned, a second result, a negative time, round sizes that do not add up...). The
  message is dropped; the case it names (or the run) is marked invalid.

Everything else about the stream (what was valid) is kept by the reader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tile_protocol._codec import BadLine
from tile_protocol._messages import (
    Artifact,
    BenchResult,
    BuildResult,
    CaseStart,
    Done,
    Failure,
    Hello,
    Inspect,
    Message,
    Plan,
    Progress,
    Rung,
    RungDone,
    RunRequest,
    StateChange,
    TestResult,
)
from tile_protocol._parts import CaseInfo
from tile_protocol._result_checks import result_problem

__all__ = ["ForgedLine", "StreamValidator", "Violation", "result_problem"]


@dataclass(frozen=True, slots=True)
class Violation:
    """Why one message was not believed.

    `forged`: it did not come from the runner (drop it as noise); else the runner sent a
    message that breaks the protocol, and `case_id` names the case it spoils (None: the run).
    """

    message: Message
    reason: str
    forged: bool = False
    case_id: str | None = None

    @property
    def kind(self) -> str:
        """The message's `type` tag (`bench_result`, `done`, ...)."""
        return str(type(self.message).__struct_config__.tag)

    def describe(self) -> str:
        """One line for the run's failures or its noise log."""
        if self.forged:
            return f"dropped a `{self.kind}` message the runner did not send: {self.reason}"
        return f"runner sent an invalid {self.kind}: {self.reason}"


@dataclass(frozen=True, slots=True)
class ForgedLine(BadLine):
    """A well-formed message that did not come from the runner: noise, like a stray line."""


_Result = BenchResult | TestResult | BuildResult


class StreamValidator:
    """Checks one runner's stream, message by message, in the order it was read.

    `token` is the one put in that runner's `RunRequest`; `requested` its `case_ids` (None: all
    cases). Call `check` with every decoded message; None means believe it. A stream whose
    `hello` carries no token comes from a runner older than protocol 1.5 and is read without
    provenance checks (its `hello` is the first line, before any kernel can run).
    """

    def __init__(self, *, token: str | None = None, requested: Sequence[str] | None = None):
        self._token = token
        self._requested = None if requested is None else frozenset(requested)
        self._wanted = self._requested or frozenset[str]()
        self._hello: Hello | None = None
        self._stamped = False
        self._last_seq = 0
        self._command: str | None = None
        self._plan: dict[str, CaseInfo] | None = None  # by case id, in plan order
        self._outcome: set[str] = set()
        self._rung: list[str] | None = None  # a later tune rung's units, in its order
        self._views: set[tuple[str, str]] = set()
        self._done: Done | None = None

    @property
    def done(self) -> Done | None:
        """The `done` that ended the stream, once one was believed."""
        return self._done

    @property
    def undone(self) -> list[str]:
        """Planned cases without any outcome yet (result, failure, view or invalid message)."""
        if self._plan is None or self._command == "list":
            return []
        shown = {case_id for case_id, _ in self._views}
        return [c for c in self._plan if c not in self._outcome and c not in shown]

    def check(self, message: Message) -> Violation | None:
        """None when `message` is to be believed; else why it is not."""
        forged = self._provenance(message)
        if forged is not None:
            return Violation(message, forged, forged=True)
        problem = self._order(message)
        if problem is not None:
            return Violation(message, problem)
        return self._content(message)

    # ---------------------------------------------------------------- provenance

    def _provenance(self, message: Message) -> str | None:
        """Why the message cannot have come from the runner, or None."""
        if self._token is None or isinstance(message, RunRequest):
            return None
        if self._hello is None:
            # Only a hello with someone else's token is known to be foreign; anything else
            # before hello breaks the order rule below.
            if isinstance(message, Hello) and message.token not in (None, self._token):
                return "its token is not the one this runner was given"
            return None
        if not self._stamped:
            return None
        return self._unstamped(self._hello, token=message.token, pid=message.pid, seq=message.seq)

    def _unstamped(
        self, hello: Hello, *, token: str | None, pid: int | None, seq: int | None
    ) -> str | None:
        """Why a message's stamp is not this runner's (after a hello with a token: the token,
        the hello's pid, the next sequence number), or None, and its number is the last seen."""
        if token != self._token:
            return "it does not carry the token this runner was given"
        if pid != hello.pid:
            return f"it comes from pid {pid}, the runner is pid {hello.pid}"
        if seq is None or seq <= self._last_seq:
            return f"its sequence number {seq} does not follow {self._last_seq}"
        self._last_seq = seq
        return None

    # ---------------------------------------------------------------- order

    def _order(self, message: Message) -> str | None:
        """Why the message cannot come at this point of the stream, or None."""
        if isinstance(message, RunRequest):
            return "a run_request goes to the runner, never comes from it"
        if self._done is not None:
            return "it came after `done`, which must be the last message"
        if self._hello is None and not isinstance(message, Hello):
            return "it came before `hello`, which must be the first message"
        return self._stage(message)

    def _stage(self, message: Message) -> str | None:
        """hello, plan and done mark the stream's stages: why one cannot come at the stage
        reached, or None (and the stream is at its stage from then on)."""
        if isinstance(message, Hello):
            return self._on_hello(message)
        if isinstance(message, Plan):
            return self._on_plan(message)
        if isinstance(message, Done):
            return self._on_done(message)
        return None

    def _on_hello(self, hello: Hello) -> str | None:
        if self._hello is not None:
            return "a second hello; a stream has exactly one"
        if hello.token is not None and (hello.pid is None or hello.seq is None):
            return "it has a token but no pid or sequence number"
        self._hello = hello
        self._stamped = self._token is not None and hello.token is not None
        self._last_seq = hello.seq or 0
        return None

    def _on_plan(self, plan: Plan) -> str | None:
        if self._plan is not None:
            return "a second plan; a stream has at most one"
        ids: dict[str, CaseInfo] = {}
        for info in plan.cases:
            if info.case_id in ids:
                return f"case `{info.case_id}` is planned twice"
            if self._requested is not None and info.case_id not in self._requested:
                return f"case `{info.case_id}` was not requested"
            ids[info.case_id] = info
        self._plan = ids
        self._command = plan.command
        return None

    def _on_done(self, done: Done) -> str | None:
        if self._plan is not None:
            counted = done.counts.get("cases")
            if counted is not None and counted != len(self._plan):
                return f"it counts {counted} cases, the plan has {len(self._plan)}"
        undone = self.undone
        if undone and done.restart is None:
            s = "s" if len(undone) != 1 else ""
            return f"{len(undone)} planned case{s} got no result (first `{undone[0]}`)"
        if not math.isfinite(done.elapsed_s) or done.elapsed_s < 0:
            return f"elapsed_s is {done.elapsed_s!r}"
        self._done = done
        return None

    # ---------------------------------------------------------------- content

    def _content(self, message: Message) -> Violation | None:
        """Checks of the messages that name a case; None when the message is fine."""
        if isinstance(message, (BenchResult, TestResult, BuildResult)):
            return self._result(message)
        if isinstance(message, Failure):
            return self._failure(message)
        if isinstance(message, Inspect):
            return self._inspect(message)
        if isinstance(message, (CaseStart, Artifact, StateChange, Progress)):
            return self._on_the_way(message)
        if isinstance(message, (Rung, RungDone)):
            return self._spoils(message, None, self._on_rung(message))
        return None  # hello, plan, done (checked above), log, device_report

    def _on_rung(self, rung: Rung | RungDone) -> str | None:
        """A later tune rung reopens units that each had their outcome; its `case_start`s
        count places among them."""
        if self._plan is None or self._command != "tune":
            return "a rung comes only after a tune's plan"
        if isinstance(rung, RungDone):
            return None
        for case_id in rung.case_ids:
            if case_id not in self._plan:
                return f"case `{case_id}` is not in the plan"
            if case_id not in self._outcome:
                return f"case `{case_id}` has no outcome from an earlier rung to time again"
        if len(set(rung.case_ids)) != len(rung.case_ids):
            return "a rung names a case twice"
        self._outcome -= set(rung.case_ids)
        self._rung = list(rung.case_ids)
        return None

    def _on_the_way(
        self, message: CaseStart | Artifact | StateChange | Progress
    ) -> Violation | None:
        """A message on a case's way to its outcome: a start at its place in the plan, an
        artifact with a size; a bad state change or step (of a case not planned) spoils the
        run, never a case."""
        if isinstance(message, CaseStart):
            problem = self._planned(message.case_id) or self._open(message.case_id)
            if problem is None and self._plan is not None:
                ids = list(self._plan) if self._rung is None else self._rung
                where = "the plan" if self._rung is None else "the rung"
                if message.total != len(ids) or not 0 <= message.index < len(ids):
                    problem = f"index {message.index} of {message.total} for {where} of {len(ids)}"
                elif ids[message.index] != message.case_id:
                    problem = f"index {message.index} is `{ids[message.index]}` in {where}"
            return self._spoils(message, message.case_id, problem)
        if isinstance(message, Artifact):
            problem = None if message.case_id is None else self._planned(message.case_id)
            if problem is None and message.size_bytes < 0:
                problem = f"size_bytes is {message.size_bytes}"
            return self._spoils(message, message.case_id, problem)
        return self._spoils(message, None, self._planned(message.case_id))

    def _result(self, result: _Result) -> Violation | None:
        problem = self._planned(result.case_id) or self._open(result.case_id)
        if problem is None and self._plan is not None:
            planned = self._plan[result.case_id]
            if result.kernel != planned.kernel:
                problem = f"kernel `{result.kernel}`, the plan says `{planned.kernel}`"
            elif isinstance(result, BenchResult) and result.op != planned.op:
                problem = f"op {result.op}, the plan says {planned.op}"
        problem = problem or result_problem(result)
        violation = self._spoils(result, result.case_id, problem)
        self._closes(result.case_id)
        return violation

    def _failure(self, failure: Failure) -> Violation | None:
        case_id = failure.case_id
        if case_id is None:
            return None
        if failure.status == "invalid":
            return self._spoils(failure, case_id, "status `invalid` is the reader's to give")
        # A requested case the runner cannot find is reported against its id.
        if self._plan is not None and case_id not in self._plan and case_id in self._wanted:
            return None
        problem = self._planned(case_id) or self._open(case_id)
        violation = self._spoils(failure, case_id, problem)
        self._closes(case_id)
        return violation

    def _inspect(self, view: Inspect) -> Violation | None:
        problem = self._planned(view.case_id) or self._open(view.case_id)
        if problem is None and (view.case_id, view.kind) in self._views:
            problem = f"a second `{view.kind}` view of `{view.case_id}`"
        self._views.add((view.case_id, view.kind))
        return self._spoils(view, view.case_id, problem)

    def _closes(self, case_id: str) -> None:
        """An outcome for `case_id` was sent: a second one is a violation. One sent before the
        plan closes nothing (it spoiled the run, not a planned case), so a `done` cannot then
        pass the case off as finished."""
        if self._plan is not None:
            self._outcome.add(case_id)

    def _planned(self, case_id: str) -> str | None:
        if self._plan is None:
            return f"case `{case_id}` came before the plan"
        if case_id not in self._plan:
            return f"case `{case_id}` is not in the plan"
        return None

    def _open(self, case_id: str) -> str | None:
        if case_id in self._outcome:
            return f"case `{case_id}` already has its result; at most one per case"
        return None

    def _spoils(
        self, message: Message, case_id: str | None, problem: str | None
    ) -> Violation | None:
        """A violation that marks `case_id` invalid when it is a planned case, else the run."""
        if problem is None:
            return None
        planned = case_id is not None and self._plan is not None and case_id in self._plan
        return Violation(message, problem, case_id=case_id if planned else None)
