"""The report-in-progress: a run directory that validates at every moment, even after SIGKILL.

SIGINT and SIGTERM let `finalize` write the report and the manifest; SIGKILL, the OOM killer
or a lost node do not. So the recorder checkpoints when the run starts, when the plan
arrives and after every case: report.json with every case finished so far (the others
`incomplete`), summary.md, then an `incomplete` manifest (`ArtifactWriter.checkpoint`).
Everything else (events, metrics, commands) is appended as it happens, and `tile
schema-check` accepts what was appended after the last checkpoint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_harness._report import RunSetup, build_report, config_snapshots

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_harness._results import RunResults
    from tile_harness._runlog import RunLog

__all__ = ["Checkpoints"]


class Checkpoints:
    """Keeps each finished case's record (built once) and writes a checkpoint on demand.

    The recorder calls it under its own lock; building a checkpoint costs one pass over the
    cases, never a re-validation of those already finished.
    """

    def __init__(self, setup: RunSetup, results: RunResults, log: RunLog) -> None:
        self._setup = setup
        self._results = results
        self._log = log
        self._records: dict[str, ta.CaseRecord] = {}
        self._held = 0
        self._missed = False

    def record(self, info: tp.CaseInfo) -> ta.CaseRecord:
        """The report record of a case that has just finished (result or failure), kept."""
        from tile_harness._convert import case_record

        results = self._results
        case_id = info.case_id
        record = case_record(
            info,
            results.outcome(case_id),
            results.failure_of(case_id),
            interrupted=False,
            invalid=case_id in results.invalid_cases,
        )
        self._records[info.case_id] = record
        return record

    def done(self, case_id: str) -> None:
        """A case finished: keep its record and checkpoint."""
        index = self._results.position(case_id)
        if index is not None and case_id not in self._records:
            self.record(self._results.planned[index])
        self.write()

    @contextlib.contextmanager
    def held(self) -> Generator[None]:
        """Write one checkpoint at the end instead of one per case (a batch fed at once)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._missed:
                self.write()

    def write(self) -> None:
        """report.json (status `incomplete`), summary.md, then an `incomplete` manifest."""
        import tile_artifacts as ta

        if self._held:
            self._missed = True
            return
        self._missed = False
        setup, writer = self._setup, self._setup.writer
        if self._log.fault is not None:
            return
        cases = [self._records.get(c.case_id) or _pending(c) for c in self._results.planned]
        report = build_report(setup, self._results, interrupted=None, error=None, cases=cases)
        run = writer.run_info("incomplete", ta.INCOMPLETE_REASON)
        summary = report.summary.model_copy(update={"status": "incomplete"})
        report = report.model_copy(update={"run": run, "summary": summary})

        def write() -> None:
            paths = sorted({*writer.files(), ta.MANIFEST_JSON})
            writer.checkpoint(
                report,
                summary=ta.render_summary_markdown(report, paths),
                context=report.context,
                config_snapshots=config_snapshots(setup.resolved),
            )

        # Under the run log's rule: a full disk is said once and ends the checkpoints, and
        # the last good one stays (the directory then reads as incomplete).
        self._log.write(write)


def _pending(info: tp.CaseInfo) -> ta.CaseRecord:
    import tile_artifacts as ta

    return ta.CaseRecord(
        case_id=info.case_id, kernel=info.kernel, params=dict(info.params), status="incomplete"
    )
