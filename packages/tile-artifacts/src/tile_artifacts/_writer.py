"""Crash-safe writer of a run directory: atomic JSON, line-atomic JSONL, manifest written last.

Every byte goes through the run's `Redactor` on its way to disk, so no file of the directory
can hold a secret value the run knew about.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, JsonValue

from tile_artifacts._base import (
    RUN_ID_PATTERN,
    Aggregation,
    Context,
    Level,
    Producer,
    RunInfo,
    Status,
    Timer,
    Unit,
    utc_now,
)
from tile_artifacts._documents import (
    ArtifactEntry,
    ComparisonDoc,
    ConfigSnapshot,
    InputFile,
    Manifest,
    PrimaryArtifacts,
)
from tile_artifacts._durable import (
    append_batch,
    create_run_directory,
    write_atomically,
    write_error,
)
from tile_artifacts._entries import Digests, artifact_entries
from tile_artifacts._errors import ArtifactError, ArtifactWriteError
from tile_artifacts._json_pieces import json_pieces
from tile_artifacts._live import hold_live
from tile_artifacts._metrics import STANDARD_METRICS, MetricSpec
from tile_artifacts._models import Report
from tile_artifacts._paths import (
    COMMANDS_JSONL,
    EVENTS_JSONL,
    INCOMPLETE_REASON,
    MANIFEST_JSON,
    METRICS_JSONL,
    REPORT_JSON,
    SUMMARY_MD,
    relative_path_problem,
    run_files,
)
from tile_artifacts._records import CommandRecord, EventRecord, MetricRecord, MetricSource
from tile_artifacts._redact import Redactor, redact_environment
from tile_artifacts._summary import render_summary_markdown

__all__ = ["ArtifactWriter"]

_TEMP = re.compile(r"(^|/)\.[^/]+\.tmp$")


class ArtifactWriter:
    """Writes one run directory; every write leaves each file either old or new, never torn.

    JSON documents go to a temp file in the same directory, are fsynced and renamed over the
    target. JSONL lines are appended with a single `write(2)` of the whole line (newline
    included) and fsynced; a SIGKILL during the write of a line longer than a page can still
    leave part of it, without its newline, which readers drop and the next writer of the
    file cuts off. `finalize` writes `artifact_manifest.json` last; nothing may be written
    after it. `checkpoint` writes an `incomplete` manifest of what is there so far, so that a
    run killed without warning (SIGKILL, a lost node) still leaves a directory that validates.
    While the writer exists the directory is marked live (`_live.py`), so that pruning by
    another process leaves it alone.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        run_id: str,
        producer: Producer,
        created_at: datetime | None = None,
        durable: bool = True,
        allow_existing: bool = False,
        redactor: Redactor | None = None,
    ) -> None:
        if not re.match(RUN_ID_PATTERN, run_id):
            raise ArtifactError(
                f"run id `{run_id}` is not `<command>-<YYYYMMDDTHHMMSSZ>-<8 hex>`",
                hint="make one with `tile_artifacts.new_run_id(command)`",
            )
        self.run_dir = Path(run_dir).absolute()
        self.run_id = run_id
        self.producer = producer
        self.created_at = utc_now() if created_at is None else created_at
        self.durable = durable
        self.redactor = Redactor.for_run() if redactor is None else redactor
        """Hides the run's secret values in everything written (`Redactor.for_run`)."""
        # Reentrant: a checkpoint lists the files and writes the manifest as one step.
        self._lock = threading.RLock()
        self._descriptions: dict[str, str] = {}
        self._repaired: set[str] = set()
        # Checkpoints hash only what changed since the last one.
        self._digests: Digests = {}
        self._finalized = False
        create_run_directory(self.run_dir, allow_existing)
        # Marked live before its first file exists, so `[output] keep` in another process
        # (which removes only directories with `events.jsonl`) never sees it unmarked.
        hold_live(self.run_dir, owner=self)
        # The two JSONL streams exist from the start so that even an early crash leaves them.
        for relpath in (EVENTS_JSONL, METRICS_JSONL):
            self._append(relpath, b"")

    def run_info(self, status: Status, status_reason: str | None = None) -> RunInfo:
        """The `run` block of this run's envelopes."""
        return RunInfo(
            run_id=self.run_id,
            created_at=self.created_at,
            status=status,
            status_reason=status_reason,
            output_directory=str(self.run_dir),
        )

    def path(self, relpath: str, *, description: str | None = None) -> Path:
        """Absolute path of a run-relative file (parents created); refuses escaping paths."""
        problem = relative_path_problem(relpath)
        if problem is not None:
            raise ArtifactWriteError(
                f"cannot write {problem}",
                path=relpath,
                hint="pass a path relative to the run directory",
            )
        clean = PurePosixPath(relpath).as_posix()
        if self._finalized:
            raise ArtifactWriteError(
                f"cannot write `{clean}`: the run directory is finalized",
                path=str(self.run_dir),
                hint="write every file before calling `finalize()`",
            )
        target = self.run_dir / clean
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise write_error(target, e) from None
        if description is not None:
            self._descriptions[clean] = description
        return target

    def log_path(self, relpath: str, *, description: str | None = None) -> Path:
        """Absolute path for a log the caller writes itself (e.g. `logs/runner-1.stderr.log`)."""
        return self.path(relpath, description=description)

    def _atomic(self, relpath: str, data: bytes | Iterable[bytes], description: str | None) -> Path:
        with self._lock:
            target = self.path(relpath, description=description)
            write_atomically(target, data, durable=self.durable)
            return target

    def write_json(self, relpath: str, model: BaseModel, *, description: str | None = None) -> Path:
        """Write a model as indented JSON (every key present, null when unknown), atomically."""
        # In pieces (a long list item by item): a large report's whole text never exists.
        pieces = json_pieces(model, lambda text: self.redactor.json_text(text, indent=2))
        return self._atomic(relpath, (piece.encode("utf-8") for piece in pieces), description)

    def write_text(self, relpath: str, text: str, *, description: str | None = None) -> Path:
        """Write UTF-8 text atomically, secrets redacted."""
        return self._atomic(relpath, self.redactor.text(text).encode("utf-8"), description)

    def _append(self, relpath: str, data: bytes) -> None:
        with self._lock:
            repair = relpath not in self._repaired
            append_batch(self.path(relpath), data, durable=self.durable, repair=repair)
            self._repaired.add(relpath)

    def append_jsonl(self, relpath: str, *models: BaseModel) -> None:
        """Append each model as one compact JSON line, flushed and fsynced before returning."""
        redact = self.redactor.json_text
        lines = "".join(redact(model.model_dump_json()) + "\n" for model in models)
        self._append(relpath, lines.encode("utf-8"))

    def append_lines(self, relpath: str, lines: Iterable[str]) -> None:
        """Append JSON lines serialized by the caller (each without its newline) in one write.

        For records made in bulk, where building a model per line costs more than the line
        itself (a runner's 200,000 log lines); the caller answers for their schema. The run's
        secrets are redacted here as in every other line.
        """
        redact = self.redactor.json_text
        data = "".join(redact(line) + "\n" for line in lines)
        if data:
            self._append(relpath, data.encode("utf-8"))

    def event(
        self,
        event: str,
        message: str = "",
        *,
        level: Level = "info",
        phase: str | None = None,
        fields: Mapping[str, JsonValue] | None = None,
    ) -> EventRecord:
        """Append an event to `events.jsonl` and return it."""
        record = EventRecord(
            timestamp=utc_now(),
            level=level,
            tool_name=self.producer.tool_name,
            run_id=self.run_id,
            phase=phase,
            event=event,
            message=message,
            fields=dict(fields or {}),
        )
        self.append_jsonl(EVENTS_JSONL, record)
        return record

    def metric(  # noqa: PLR0913 (public call: its keyword options are MetricRecord's fields)
        self,
        metric_name: str,
        value: float | None,
        *,
        case_id: str | None = None,
        unit: Unit | None = None,
        aggregation: Aggregation | None = None,
        higher_is_better: bool | None = None,
        timer: Timer | None = None,
        dimensions: Mapping[str, str] | None = None,
        source: MetricSource | None = None,
    ) -> MetricRecord:
        """Append a metric to `metrics.jsonl`; unit etc. default from `STANDARD_METRICS`."""
        spec = STANDARD_METRICS.get(metric_name)
        if spec is None:
            if unit is None:
                raise ArtifactError(
                    f"metric `{metric_name}` is not a standard metric and has no unit",
                    hint=f"pass unit=...; standard names: {', '.join(STANDARD_METRICS)}",
                )
            spec = MetricSpec(unit, "exact", None, False)
        record = MetricRecord(
            run_id=self.run_id,
            case_id=case_id,
            metric_name=metric_name,
            value=value,
            unit=unit or spec.unit,
            aggregation=aggregation or spec.aggregation,
            higher_is_better=spec.higher_is_better
            if higher_is_better is None
            else higher_is_better,
            timer=timer,
            dimensions=dict(dimensions or {}),
            source=source or MetricSource(),
        )
        self.append_jsonl(METRICS_JSONL, record)
        return record

    def command(  # noqa: PLR0913 (public call: its keyword options are CommandRecord's fields)
        self,
        command_id: str,
        args: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        status: Status,
        phase: str | None = None,
        environment_overrides: Mapping[str, str] | None = None,
        stdout_log: str | None = None,
        stderr_log: str | None = None,
        return_code: int | None = None,
        signal: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
    ) -> CommandRecord:
        """Append a child process to `commands/commands.jsonl`, its environment redacted."""
        env, redacted = redact_environment(environment_overrides or {})
        wall = None
        if started_at is not None and finished_at is not None:
            wall = (finished_at - started_at).total_seconds()
        record = CommandRecord(
            command_id=command_id,
            phase=phase,
            args=list(args),
            display=shlex.join(args),
            cwd=str(cwd),
            environment_overrides=env,
            redacted_environment_keys=redacted,
            stdout_log=stdout_log,
            stderr_log=stderr_log,
            status=status,
            return_code=return_code,
            signal=signal,
            started_at=started_at,
            finished_at=finished_at,
            wall_time_s=wall,
        )
        self.append_jsonl(COMMANDS_JSONL, record)
        return record

    def scrub(self, relpath: str) -> bool:
        """Redact a file another process wrote into the run (a runner's stderr log)."""
        return self.redactor.scrub_file(self.run_dir / relpath)

    def files(self) -> list[str]:
        """Run-relative paths of the regular files written so far, sorted; the writer's own
        temp files (`.NAME.*.tmp`, there only while a write is under way) left out."""
        return [p for p in run_files(self.run_dir)[0] if not _TEMP.search(p)]

    def write_summary(self, report: Report, comparison: ComparisonDoc | None = None) -> Path:
        """Render `summary.md` from the report (and its comparison, if it was compared), with
        the artifact map of the files so far."""
        paths = sorted({*self.files(), SUMMARY_MD, MANIFEST_JSON})
        return self.write_text(SUMMARY_MD, render_summary_markdown(report, paths, comparison))

    def finalize(
        self,
        *,
        status: Status,
        status_reason: str | None = None,
        context: Context | None = None,
        input_files: Iterable[InputFile] = (),
        config_snapshots: Iterable[ConfigSnapshot] = (),
        notes: Iterable[str] = (),
        primary_artifacts: PrimaryArtifacts | None = None,
        nested: Sequence[str] = (),
    ) -> Manifest:
        """Write `artifact_manifest.json` listing every regular file but itself; return it.

        Files under a `nested` top-level directory are left out: in a campaign directory,
        `units/` holds run directories with manifests of their own.
        """
        with self._lock:
            manifest = self._write_manifest(
                Manifest(
                    producer=self.producer,
                    run=self.run_info(status, status_reason),
                    context=context or Context(),
                    primary_artifacts=primary_artifacts or PrimaryArtifacts(),
                    artifacts=self._entries(nested),
                    input_files=list(input_files),
                    config_snapshots=list(config_snapshots),
                    notes=list(notes),
                )
            )
            self._finalized = True
            return manifest

    def checkpoint(
        self,
        report: BaseModel,
        *,
        summary: str | None = None,
        report_path: str = REPORT_JSON,
        context: Context | None = None,
        config_snapshots: Iterable[ConfigSnapshot] = (),
    ) -> Manifest:
        """Write a report-in-progress, its summary, then an `incomplete` manifest of the files
        so far; the run goes on writing after it.

        What a kill leaves is this checkpoint plus whatever was appended since: `tile
        schema-check` accepts that (append-only files may have grown past what the manifest
        records, later files may be missing from it), so every case finished before the
        last checkpoint is in a directory that validates.
        """
        with self._lock:
            self.write_json(report_path, report)
            if summary is not None:
                self.write_text(SUMMARY_MD, summary)
            return self._write_manifest(
                Manifest(
                    producer=self.producer,
                    run=self.run_info("incomplete", INCOMPLETE_REASON),
                    context=context or Context(),
                    primary_artifacts=PrimaryArtifacts(report_json=report_path),
                    artifacts=self._entries((), reuse=True),
                    config_snapshots=list(config_snapshots),
                    notes=[INCOMPLETE_REASON],
                )
            )

    def _entries(self, nested: Sequence[str], *, reuse: bool = False) -> list[ArtifactEntry]:
        try:
            return artifact_entries(
                self.run_dir,
                self.files(),
                self._descriptions,
                nested=nested,
                digests=self._digests if reuse else None,
            )
        except OSError as e:
            raise write_error(Path(e.filename or self.run_dir), e) from None

    def _write_manifest(self, manifest: Manifest) -> Manifest:
        self.write_json(MANIFEST_JSON, manifest)
        return manifest
