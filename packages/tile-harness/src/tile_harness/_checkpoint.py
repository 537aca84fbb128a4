"""The report-in-progress: a run directory that validates at every moment, even after SIGKILL.

SIGINT and SIGTERM let `finalize` write the report and the manifest; SIGKILL, the OOM killer
or a lost node do not. So the moment a case finishes its record is appended to the case log
(`cases.jsonl`, one fsynced line: the same record report.json will hold), before its
metrics; and now and then the whole report-in-progress is compacted: report.json with every
case finished so far (the others `incomplete`), summary.md, then an `incomplete` manifest
(`ArtifactWriter.checkpoint`). Readers and `tile schema-check` lay the case log over an
`incomplete` report (`tile_artifacts.merge_case_log`), so a killed run reads with every
finished case, and `tile schema-check` accepts what was appended after the last compaction.

Rewriting the whole report after every case made a run's time grow with the square of its
plan (1000 cases: 145 s of checkpoints, 13 s without). A case now costs one line; the
report is compacted when the run starts, when the plan arrives, and when the cases finished
since the last compaction are as many as there were at it (1, 2, 4, 8...), so compactions
are O(log n) and their work O(n) in all; `finalize` writes the final report as before.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from typing import TYPE_CHECKING, ClassVar

import tile_protocol as tp
from tile_harness._report import RunSetup, build_report, config_snapshots

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_harness._results import RunResults
    from tile_harness._runlog import RunLog

__all__ = ["Checkpoints"]


class Checkpoints:
    """Keeps each finished case's record (built once), logs it, and compacts now and then.

    The recorder calls it under its own lock; a case costs one line of the case log, never
    a pass over the other cases.
    """

    taken: ClassVar[bool] = True
    """False: no case log and no compaction, only `finalize`'s report: the baseline of
    benchmarks/checkpoint_sweep.py (what the checkpoints cost a real sweep), set in the
    process that runs `tile`; a run killed then leaves no report."""

    def __init__(self, setup: RunSetup, results: RunResults, log: RunLog) -> None:
        self._setup = setup
        self._results = results
        self._log = log
        self._records: dict[str, ta.CaseRecord] = {}
        self._unlogged: dict[str, ta.CaseRecord] = {}  # finished, not in the case log yet
        self._pending: dict[str, ta.CaseRecord] = {}  # the `incomplete` record of each, made once
        # How much of the run's failures, diagnostics and findings the log or report holds.
        self._sent = (0, 0, 0)
        self._held = 0
        self._missed = False
        self._compacted: tuple[int, int] | None = None  # (finished, planned) at the last one
        self.every_case = False
        """The old rule, kept for benchmarks/checkpoint_scale.py: compact at every write."""
        self.compactions = 0
        """How many times report.json, summary.md and the manifest were rewritten."""

    def record(self, info: tp.CaseInfo) -> ta.CaseRecord:
        """The report record of a case that has just finished (result or failure), kept
        and queued for the case log (the next `write` appends it)."""
        from tile_harness._compact import share_field_sets
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
        share_field_sets(record)  # kept to the end of the run: half its size (`_compact.py`)
        self._records[case_id] = record
        self._unlogged[case_id] = record
        self._pending.pop(case_id, None)  # its `incomplete` stand-in is not needed again
        return record

    def final_records(self, *, interrupted: bool) -> list[ta.CaseRecord]:
        """One record per planned case for the final report: the record a plainly finished
        case was logged with (made once: a second copy of every case doubled the CLI's
        memory at the end of a large run), a fresh one for every other case, and for any
        case whose standing may have changed since it was logged (a failure, or a second
        result that made it invalid)."""
        from tile_harness._report import case_records

        results = self._results

        def settled(case_id: str) -> bool:
            return (case_id in self._records and case_id not in results.invalid_cases
                    and results.failure_of(case_id) is None)  # fmt: skip

        again = [c for c in results.planned if not settled(c.case_id)]
        fresh = {r.case_id: r for r in case_records(results, interrupted=interrupted, only=again)}
        return [fresh.get(c.case_id) or self._records[c.case_id] for c in results.planned]

    def done(self, case_id: str) -> None:
        """A case finished: keep its record and checkpoint."""
        index = self._results.position(case_id)
        if index is not None and case_id not in self._records:
            self.record(self._results.planned[index])
        self.write()

    @contextlib.contextmanager
    def held(self) -> Generator[None]:
        """Compact once at the end instead of as cases come (a batch fed at once); each
        case is still logged the moment it finishes."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._missed:
                self.write()

    def write(self) -> None:
        """Append the cases finished since the last call to the case log, then compact if
        it is due (`_due`)."""
        if self._log.fault is not None or not self.taken:
            return
        self._append()
        if self._held:
            self._missed = True
            return
        self._missed = False
        if self._due():
            self.compact()

    def _due(self) -> bool:
        if self._compacted is None or self.every_case:
            return True
        finished, planned = self._compacted
        if planned != len(self._results.planned):  # the plan arrived (or a shard's)
            return True
        return len(self._records) - finished >= max(finished, 1)

    def _append(self) -> None:
        """The case log's new lines, in one fsynced write; the first carries the failures,
        diagnostics and findings the run gained since the last line or compaction."""
        import tile_artifacts as ta

        if not self._unlogged:
            return
        records = list(self._unlogged.values())
        self._unlogged.clear()
        failures, diagnostics, findings = self._news()
        lines = [self._line(records[0], self._sent, failures, diagnostics, findings)]
        self._sent = self._lengths()
        lines += [self._line(record, self._sent) for record in records[1:]]
        self._log.write(lambda: self._setup.writer.append_jsonl(ta.CASES_JSONL, *lines))

    def _line(
        self,
        record: ta.CaseRecord,
        at: tuple[int, int, int],
        failures: list[ta.FailureRecord] | None = None,
        diagnostics: list[ta.Diagnostic] | None = None,
        findings: list[ta.Finding] | None = None,
    ) -> ta.CaseLogRecord:
        import tile_artifacts as ta

        return ta.CaseLogRecord(
            run_id=self._setup.run_id,
            case=record,
            failures=failures or [],
            failures_from=at[0],
            diagnostics=diagnostics or [],
            diagnostics_from=at[1],
            findings=findings or [],
            findings_from=at[2],
        )

    def _lengths(self) -> tuple[int, int, int]:
        results = self._results
        return len(results.failures), len(results.diagnostics), len(results.findings)

    def _news(self) -> tuple[list[ta.FailureRecord], list[ta.Diagnostic], list[ta.Finding]]:
        """What the run's lists gained since `_sent`, converted as `build_report` does."""
        import tile_artifacts as ta
        from tile_harness._convert import failure_record

        results, run_dir = self._results, self._setup.run_dir
        first_failure, first_diagnostic, first_finding = self._sent
        failures: list[ta.FailureRecord] = []
        for number in range(first_failure + 1, len(results.failures) + 1):
            launch = results.failure_launch.get(number)
            failures.append(failure_record(
                number,
                results.failures[number - 1],
                stderr_log=os.path.relpath(launch.stderr_log, run_dir) if launch else None,
                command_id=f"C{launch.index:03d}" if launch else None,
            ))  # fmt: skip
        diagnostics = [
            ta.Diagnostic(level=d.level, message=d.message, case_id=d.case_id, phase="runner")
            for d in results.diagnostics[first_diagnostic:]
        ]
        return failures, diagnostics, list(results.findings[first_finding:])

    def compact(self) -> None:
        """report.json (status `incomplete`), summary.md, then an `incomplete` manifest."""
        import tile_artifacts as ta

        setup, writer = self._setup, self._setup.writer
        if self._log.fault is not None:
            return
        planned = self._results.planned
        cases = [self._records.get(c.case_id) or self._waiting(c) for c in planned]
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
        if self._log.write(write):
            self.compactions += 1
            self._compacted = (len(self._records), len(planned))
            self._sent = self._lengths()

    def _waiting(self, info: tp.CaseInfo) -> ta.CaseRecord:
        """A case not finished yet, as a compaction lists it (`incomplete`)."""
        import tile_artifacts as ta

        record = self._pending.get(info.case_id)
        if record is None:
            record = ta.CaseRecord(case_id=info.case_id, kernel=info.kernel,
                                   params=dict(info.params), status="incomplete")  # fmt: skip
            self._pending[info.case_id] = record
        return record
