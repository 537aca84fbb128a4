"""A runner's result that cannot be recorded makes its case `invalid`; the run goes on.

Before a result is kept it is turned into the report's case record and held to the same
rules schema-check applies (models, then impossible timings). A result that fails them used
to end the whole run in "internal error: ValidationError" with no report, losing every case
measured before it; now that one case is `invalid`, with a failure that says why and keeps the
raw message for whoever has to find out where it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tile_protocol as tp

if TYPE_CHECKING:
    from tile_harness._results import CaseResult

__all__ = ["INVALID_RESULT", "invalid_failure", "result_problem"]

INVALID_RESULT = "InvalidResult"
"""The `error_type` of the failure that stands in for a result that was not recorded."""
_RAW_LIMIT = 4000
_LISTED = 3


def result_problem(info: tp.CaseInfo | None, result: CaseResult) -> str | None:
    """Why `result` cannot be recorded as its case (None: it can)."""
    import tile_artifacts as ta
    from tile_harness._convert import case_record

    planned = info or tp.CaseInfo(case_id=result.case_id, kernel=result.kernel)
    try:
        record = case_record(planned, result, None, interrupted=False)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return _describe(exc)
    problems = ta.case_problems(record)
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
