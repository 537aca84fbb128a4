"""Asking a runner a question: the commands that measure nothing and write no run directory.

`tile list`, `tile device`, `tile inspect`, `tile snap`, a campaign's or a tune's listing:
each sends one request and keeps what the runner answers (`Answer`); the runner's logs go to
a temporary directory that is gone afterwards.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import tile_protocol as tp
from tile_harness._errors import usage_failure
from tile_harness._hints import failure_hints
from tile_harness._requests import RequestChanges, build_request, derive
from tile_harness._runners import make_session
from tile_harness._sinks import NullSink

if TYPE_CHECKING:
    from collections.abc import Callable

    from tile_config import ResolvedConfig
    from tile_harness._settings import Selection

__all__ = ["Answer", "ask"]


class Answer(NullSink):
    """What a runner said to a question: hello, plan, views, device, failures, warnings."""

    def __init__(self) -> None:
        self.hello: tp.Hello | None = None
        self.plan: tp.Plan | None = None
        self.views: list[tp.Inspect] = []
        self.device: tp.DeviceReport | None = None
        self.failures: list[tp.Failure] = []
        self.warnings: list[tp.Log] = []

    def on_hello(self, hello: tp.Hello) -> None:
        self.hello = self.hello or hello

    def on_plan(self, plan: tp.Plan) -> None:
        self.plan = plan

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.Inspect):
            self.views.append(message)
        elif isinstance(message, tp.Failure):
            self.failures.append(message)
        elif isinstance(message, tp.DeviceReport):
            self.device = message
        elif isinstance(message, tp.Log) and message.level in ("warning", "error"):
            self.warnings.append(message)

    def unusable(self, say: Callable[[str], None], *, clean: bool) -> bool:
        """Whether a listing cannot be used: its failures said (and True) if it cannot.

        A selection the runner refused (`-a` naming an axis no kernel has, `--case` ids none of
        which is a case) raises the usage error (exit 2) instead.
        """
        refused = usage_failure(self.failures, planned=len(self.case_ids))
        if refused is not None:
            raise refused
        for failure in self.failures:
            say(f"error: {failure.phase}: {failure.message}")
        for hint in failure_hints(self.failures):
            say(f"hint: {hint}")
        return not clean or bool(self.failures)

    @property
    def cases(self) -> list[tp.CaseInfo]:
        """Every planned case, in run order."""
        return list(self.plan.cases) if self.plan is not None else []

    @property
    def case_ids(self) -> list[str]:
        """Every planned case id, in run order."""
        return [c.case_id for c in self.cases]

    @property
    def backend(self) -> str | None:
        """The backend the runner found (`cpu`, `gpu`...), if it said hello."""
        return self.hello.backend if self.hello is not None else None

    @property
    def device_kind(self) -> str | None:
        """The kind of the runner's first device, if it said hello."""
        devices = self.hello.devices if self.hello is not None else []
        return devices[0].device_kind if devices else None


def ask(
    question: tp.Command,
    resolved: ResolvedConfig,
    sel: Selection,
    **changes: Unpack[RequestChanges],
) -> tuple[Answer, bool]:
    """Ask `question` about the selected cases; the answer, and whether no runner died or hung.

    `changes` (`inspect_kind`, `calibrate`, `units`...) derive the question's request.
    """
    request = derive(build_request(question, resolved, sel, None), **changes)
    answer = Answer()
    with tempfile.TemporaryDirectory(prefix=f"tile-{question}-") as tmp:
        clean = make_session(request, resolved, answer, log_dir=Path(tmp)).run()
    return answer, clean
