"""The case log (`cases.jsonl`, `tile.case`): each case the moment it finished, one line each.

A run's report-in-progress (report.json) is rewritten only now and then, because rewriting
every case after every case made a run's time grow with the square of its plan. What
finished in between is appended here, one whole line per case, so that a run killed at any
moment still holds every finished case; readers of an `incomplete` report lay these lines
over it (`merge_case_log`, `read_report`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tile_artifacts._base import ArtifactModel
from tile_artifacts._models import CaseRecord, Diagnostic, FailureRecord, Finding

__all__ = ["CaseLogRecord"]


class CaseLogRecord(ArtifactModel):
    """One line of `cases.jsonl` (`tile.case`): a finished case as report.json will hold it.

    The run-level lists grow while cases finish (a failure, a runner's warning, a finding),
    so each line also carries what was added to them since the line before, with the
    position of its first item in the report's list (`failures_from`...): a reader keeps
    the items that the report it lays the line over does not hold yet. A case measured
    again (in rounds) has a line per round; the last line of a case id wins.
    """

    schema_name: Literal["tile.case"] = "tile.case"
    schema_version: Literal[1] = 1
    run_id: str
    case: CaseRecord
    failures: list[FailureRecord] = Field(default_factory=list[FailureRecord])
    failures_from: int = Field(default=0, ge=0)
    diagnostics: list[Diagnostic] = Field(default_factory=list[Diagnostic])
    diagnostics_from: int = Field(default=0, ge=0)
    findings: list[Finding] = Field(default_factory=list[Finding])
    findings_from: int = Field(default=0, ge=0)
