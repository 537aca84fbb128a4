"""A run directory as a whole: every file decoded, the manifest against the disk, the report
against the manifest, and the records against the run."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Final

from tile_artifacts._check_docs import (
    TORN,
    Found,
    Problem,
    check_comparison,
    check_records,
    check_relative,
    check_run_file,
    read_text,
)
from tile_artifacts._check_facts import CaseLine, MetricLine
from tile_artifacts._documents import ArtifactEntry, ComparisonDoc, Document, Manifest
from tile_artifacts._errors import ArtifactError
from tile_artifacts._models import Report
from tile_artifacts._paths import (
    MANIFEST_JSON,
    METRICS_JSONL,
    REPORT_JSON,
    RUN_LAYOUT,
    Layout,
    relative_path_problem,
    run_files,
    sha256_file,
)
from tile_artifacts._report_scan import MetricFacts, MetricKey, ReportScan, metrics_file_problems

Known = dict[MetricKey, MetricFacts]

__all__ = ["check_run_dir"]

# What the writer only appends to: a checkpoint's record of it stays a prefix of the file.
# (Runner logs are not among them: they are redacted in place when their runner ends.)
_APPEND_ONLY: Final = frozenset({".jsonl"})


def _check_entry(found: Found, run_dir: Path, path: str, entry: ArtifactEntry, grow: bool) -> None:
    """Size and sha256 of one listed file; with `grow` (an incomplete run's checkpoint), an
    append-only file may have grown since, and any other file may have been rewritten."""
    appendable = PurePosixPath(path).suffix in _APPEND_ONLY
    if grow and not appendable:
        return
    try:
        size, digest = sha256_file(run_dir / path)
        if grow and size > entry.size_bytes:
            size, digest = sha256_file(run_dir / path, entry.size_bytes)
    except OSError as e:
        found.add(path, f"cannot read: {e.strerror}")
        return
    if size != entry.size_bytes:
        found.add(path, f"size is {size} bytes, artifact_manifest.json records {entry.size_bytes}")
    if digest != entry.sha256:
        found.add(
            path,
            "its first bytes differ from what the checkpoint recorded: an append-only file "
            "was rewritten"
            if grow
            else "sha256 differs from artifact_manifest.json: the file changed "
            "after the run was finalized",
        )


def _check_manifest(found: Found, manifest: Manifest, run_dir: Path, regular: list[str]) -> None:
    """The manifest against the disk: the files it lists, and the paths it points to."""
    on_disk = set(regular)
    listed = _check_artifacts(found, manifest, run_dir, on_disk)
    _check_references(found, manifest, on_disk, listed)


def _check_artifacts(
    found: Found, manifest: Manifest, run_dir: Path, on_disk: set[str]
) -> set[str]:
    """The manifest's `artifacts` against the files on disk; returns the paths it lists."""
    listed: set[str] = set()
    incomplete = manifest.run.status == "incomplete"
    for i, entry in enumerate(manifest.artifacts):
        where = f"artifacts[{i}]"
        if entry.path_type != "artifact_relative":
            found.add(
                MANIFEST_JSON,
                f"{where}: path_type must be `artifact_relative` "
                "(files outside the run directory belong in input_files)",
            )
        problem = relative_path_problem(entry.path)
        if problem is not None:
            found.add(MANIFEST_JSON, f"{where}: {problem}")
            continue
        path = PurePosixPath(entry.path).as_posix()
        if path in listed:
            found.add(MANIFEST_JSON, f"{where}: `{path}` is listed twice")
        listed.add(path)
        if path == MANIFEST_JSON:
            found.add(MANIFEST_JSON, f"{where}: the manifest must not list itself")
        elif path not in on_disk:
            found.add(path, "listed in artifact_manifest.json but missing")
        else:
            _check_entry(found, run_dir, path, entry, incomplete)
    # A checkpoint lists what was there when it was written; the run went on after it.
    unlisted = set[str]() if incomplete else on_disk - listed - {MANIFEST_JSON}
    for path in sorted(unlisted):
        found.add(path, "not listed in artifact_manifest.json")
    return listed


def _check_references(
    found: Found, manifest: Manifest, on_disk: set[str], listed: set[str]
) -> None:
    """The paths the manifest names besides its `artifacts` (primary files, config snapshots,
    input files) point where their path_type says."""
    for name, path in manifest.primary_artifacts.model_dump().items():
        check_relative(found, MANIFEST_JSON, f"primary_artifacts.{name}", path, on_disk=listed)
    for i, snap in enumerate(manifest.config_snapshots):
        if snap.path_type == "artifact_relative":
            check_relative(
                found, MANIFEST_JSON, f"config_snapshots[{i}].path", snap.path, on_disk=listed
            )
    for i, item in enumerate(manifest.input_files):
        where = f"input_files[{i}].path"
        if item.path_type == "artifact_relative":
            check_relative(found, MANIFEST_JSON, where, item.path, on_disk=on_disk)
        elif not (
            PurePosixPath(item.path).is_absolute() or PureWindowsPath(item.path).is_absolute()
        ):
            found.add(
                MANIFEST_JSON, f"{where}: `{item.path}` is claimed `absolute_input` but is relative"
            )


def _merged(scan: ReportScan, lines: list[tuple[int, CaseLine]]) -> tuple[Known, set[str]]:
    """The report's metrics and case ids with the case log laid over it, as `merge_case_log`
    lays it: each logged case of the run replaces the report's (or follows its cases), the
    last line of a case winning, and its metrics replace the report's of that case."""
    report = scan.header
    mine = [record for _, record in lines if record.run_id == report.run.run_id]
    if report.run.status != "incomplete" or not mine:
        return scan.metrics, set(scan.case_ids)
    position = {case_id: i for i, case_id in enumerate(scan.case_ids)}
    count = len(scan.case_ids)
    last: dict[str, CaseLine] = {}
    for record in mine:
        if position.setdefault(record.case_id, count) == count:
            count += 1
        last[record.case_id] = record
    known = {key: facts for key, facts in scan.metrics.items() if key[0] not in last}
    for index, case_id in sorted((position[case_id], case_id) for case_id in last):
        for name, value, suffix in last[case_id].metrics:
            known[case_id, name] = MetricFacts(value, REPORT_JSON, f"/cases/{index}{suffix}")
    return known, set(scan.case_ids) | set(last)


def _check_cases(
    found: Found, scan: ReportScan, manifest: Document | None, layout: Layout, on_disk: set[str]
) -> None:
    """report.json on its own, then with the case log laid over it (a run killed since its
    last compaction), against metrics.jsonl; a finished report must hold each logged case."""
    for message in scan.problems(on_disk):
        found.add(REPORT_JSON, message)
    final = isinstance(manifest, Manifest) and manifest.run.status != "incomplete"
    log = layout.case_log
    lines = [
        (line, record)
        for line, record in (found.records.get(log, []) if log else [])
        if isinstance(record, CaseLine)
    ]
    known, case_ids = _merged(scan, lines)
    metric_lines = (
        (line, record.key, record.facts)
        for line, record in found.records.get(METRICS_JSONL, [])
        if isinstance(record, MetricLine)
    )
    metrics_file_problems(
        known,
        case_ids,
        metric_lines,
        lambda message, line: found.add(METRICS_JSONL, message, line or None),
        final=final,
    )
    if log is None or scan.header.run.status == "incomplete":
        return
    held = set(scan.case_ids)
    run_id = scan.header.run.run_id
    for line, record in lines:
        if record.case_id not in held and record.run_id == run_id:
            found.add(log, f"case `{record.case_id}` is not in {layout.primary}", line)


def _check_agree(found: Found, manifest: Manifest, report: Document, primary: str) -> None:
    """The manifest and the primary document name the same run, in the same state."""
    # After an incomplete checkpoint the final report may be written before a kill stops the
    # final manifest.
    if manifest.run.status not in (report.run.status, "incomplete"):
        found.add(
            MANIFEST_JSON,
            f"run status `{manifest.run.status}` differs from {primary}'s `{report.run.status}`",
        )
    if manifest.run.run_id != report.run.run_id:
        found.add(
            MANIFEST_JSON,
            f"run_id `{manifest.run.run_id}` differs from {primary}'s `{report.run.run_id}`",
        )


def _outside(paths: list[str], nested: tuple[str, ...]) -> list[str]:
    """The paths not under one of the `nested` directories (whose runs check themselves)."""
    return [p for p in paths if p.split("/", 1)[0] not in nested]


def _decode_files(run_dir: Path, layout: Layout, regular: list[str], other: list[str]) -> Found:
    """Each file on its own: regular, present when required, and decoded (JSON and JSON Lines);
    the cross-checks then read the decoded documents from what this returns."""
    found = Found()
    for rel in other:
        found.add(
            rel,
            "not a regular file (link or special file); a run directory holds regular files only",
        )
    for rel in layout.required:
        if rel not in regular:
            found.add(rel, "required file is missing")
    for rel in regular:
        suffix = PurePosixPath(rel).suffix
        if suffix in (".json", ".jsonl"):
            check_run_file(found, rel, run_dir / rel, layout)
        elif suffix == ".md":  # tile's own text for people (summary.md): UTF-8, as it says
            read_text(found, run_dir / rel, rel)
    return found


def check_run_dir(run_dir: Path, layout: Layout = RUN_LAYOUT) -> list[Problem]:
    """Every problem of the run directory (or campaign unit) at `run_dir`, by file and line."""
    regular, other = (_outside(paths, layout.nested) for paths in run_files(run_dir))
    if not set(layout.required) & set(regular):
        raise ArtifactError(
            f"`{run_dir}` is not a run directory: none of {', '.join(layout.required)} is in it",
            path=str(run_dir),
            hint="pass a run directory such as `.tile/runs/<run_id>` or one artifact file",
        )
    found = _decode_files(run_dir, layout, regular, other)
    on_disk = set(regular)
    manifest = found.documents.get(MANIFEST_JSON)
    report = found.documents.get(layout.primary)
    if isinstance(manifest, Manifest):
        _check_manifest(found, manifest, run_dir, regular)
        if manifest.run.status == "incomplete":
            # A kill after a checkpoint may tear the line it was appending: that is what a
            # kill leaves, and readers skip it (the recorded prefix is still checked).
            found.problems = [p for p in found.problems if p.message != TORN]
    scan = found.reports.get(layout.primary)
    if isinstance(report, Report) and scan is not None:
        _check_cases(found, scan, manifest, layout, on_disk)
    if report is not None and isinstance(manifest, Manifest):
        _check_agree(found, manifest, report, layout.primary)
    run_id = (
        report.run.run_id
        if report is not None
        else manifest.run.run_id
        if isinstance(manifest, Manifest)
        else None
    )
    check_records(found, run_id, on_disk)
    for rel, doc in found.documents.items():
        if isinstance(doc, ComparisonDoc):
            check_comparison(found, rel, doc)
    return sorted(found.problems, key=lambda p: (p.file, p.line or 0))
