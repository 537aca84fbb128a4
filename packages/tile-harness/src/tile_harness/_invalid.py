"""A runner's result that cannot be recorded makes its case `invalid`; the run goes on.

Before a result is kept it is turned into the report's case record and held to the same
rules schema-check applies (models, then impossible timings). A result that fails them used
to end the whole run in "internal error: ValidationError" with no report, losing every case
measured before it; now that one case is `invalid`, with a failure that says why and keeps the
raw message for whoever has to find out where it came from. `CheckedResults` does this in front
of the sinks, so that the recorder and `--json` see the same messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tile_protocol as tp
from tile_harness._sinks import Relay

if TYPE_CHECKING:
    from tile_harness._results import CaseResult
    from tile_harness._sinks import Sink

__all__ = ["INVALID_RESULT", "CheckedResults", "invalid_failure", "result_problem"]

INVALID_RESULT = "InvalidResult"
"""The `error_type` of the failure that stands in for a result that was not recorded."""
_RAW_LIMIT = 4000
_LISTED = 3


class CheckedResults(Relay):
    """Passes each result on as it came, or, if it cannot be recorded, its `invalid` failure."""

    def __init__(self, inner: Sink) -> None:
        super().__init__(inner)
        self._planned: dict[str, tp.CaseInfo] = {}

    def on_plan(self, plan: tp.Plan) -> None:
        self._planned = {info.case_id: info for info in plan.cases}
        self.inner.on_plan(plan)

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, (tp.BenchResult, tp.TestResult, tp.BuildResult)):
            problem = result_problem(self._planned.get(message.case_id), message)
            if problem is not None:  # its case is `invalid`; the run goes on
                message = invalid_failure(message, problem)
        self.inner.on_message(message)


def result_problem(info: tp.CaseInfo | None, result: CaseResult) -> str | None:
    """Why `result` cannot be recorded as its case (None: it can)."""
    import tile_artifacts as ta
    from tile_harness._convert import case_record

    planned = info or tp.CaseInfo(case_id=result.case_id, kernel=result.kernel)
    try:
        record = case_record(planned, result, None, interrupted=False)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return _describe(exc)
    problems = ta.check.case_problems(record)
    return _join(problems) if problems else None


def invalid_failure(result: CaseResult, problem: str) -> tp.Failure:
    """The failure recorded in place of an invalid result, the raw message kept (bounded)."""
    raw = tp.encode(result).decode("utf-8", "replace").strip()
    if len(raw) > _RAW_LIMIT:
        raw = raw[:_RAW_LIMIT] + f" … ({len(raw) - _RAW_LIMIT} more characters)"
    return tp.Failure(
        case_id=result.case_id,
        phase="result",
        status="invalid",
        error_type=INVALID_RESULT,
        message=f"the runner's {result.__struct_config__.tag} is invalid and was not recorded: "
        f"{problem}",
        traceback=raw,
    )


def _describe(exc: ValueError) -> str:
    errors: Callable[[], list[dict[str, Any]]] | None = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    found: list[str] = []
    for error in errors():  # pydantic's list of {loc, msg, ...}
        loc = ".".join(str(part) for part in error.get("loc", ())) or "(result)"
        found.append(f"{loc}: {error.get('msg', 'invalid')}")
    return _join(found) or str(exc)


def _join(messages: list[str]) -> str:
    text = "; ".join(messages[:_LISTED])
    more = len(messages) - _LISTED
    return text + (f" (and {more} more)" if more > 0 else "")
