"""`tile schema-check` of a campaign directory: its own files, then every unit's run directory.

The campaign's manifest lists the campaign's own files; each unit attempt under `units/` is a
run directory with a manifest of its own, checked as one, and `campaign.json` records every
attempt (with the sha256 of a complete attempt's manifest) so that nothing under `units/` goes
unaccounted for. An attempt recorded as incomplete (its campaign was killed while it ran) may
lack a manifest; whatever it does hold is still checked.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from tile_artifacts._campaign import AttemptRecord, CampaignPlan, CampaignReport
from tile_artifacts._check_docs import Problem
from tile_artifacts._check_run import check_run_dir
from tile_artifacts._errors import ArtifactError
from tile_artifacts._paths import (
    CAMPAIGN_JSON,
    CAMPAIGN_LAYOUT,
    CAMPAIGN_PLAN_JSON,
    MANIFEST_JSON,
    UNITS_DIR,
    relative_path_problem,
    sha256_file,
)
from tile_artifacts._read import DecodeIssue, decode_document

__all__ = ["check_campaign_dir", "is_campaign_dir"]


def is_campaign_dir(path: Path) -> bool:
    """Whether `path` is a campaign directory (it has `campaign.json` or `plan.json`)."""
    return (path / CAMPAIGN_JSON).is_file() or (path / CAMPAIGN_PLAN_JSON).is_file()


def _decode(path: Path) -> CampaignReport | CampaignPlan | None:
    """The document at `path`, or None when it is missing or invalid (the file check says why)."""
    try:
        doc = decode_document(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, DecodeIssue):
        return None
    return doc if isinstance(doc, CampaignReport | CampaignPlan) else None


def _nested(prefix: str, problems: list[Problem]) -> list[Problem]:
    """A unit's problems with paths relative to the campaign directory."""
    return [Problem(f"{prefix}/{p.file}", p.line, p.message) for p in problems]


def _check_attempt(camp: Path, attempt: AttemptRecord, where: str) -> list[Problem]:
    """One recorded attempt: its run directory as a run directory, its manifest as recorded."""
    problem = relative_path_problem(attempt.path)
    if problem is not None or PurePosixPath(attempt.path).parts[:1] != (UNITS_DIR,):
        return [Problem(CAMPAIGN_JSON, None, f"{where}.path: {problem or 'not under units/'}")]
    directory = camp / attempt.path
    if not (directory / MANIFEST_JSON).is_file():
        if attempt.complete:
            return [
                Problem(
                    attempt.path,
                    None,
                    "recorded complete in campaign.json, but it has no artifact_manifest.json",
                )
            ]
        return []  # killed before it was finalized, as campaign.json says
    try:
        problems = _nested(attempt.path, check_run_dir(directory))
    except ArtifactError as exc:
        return [Problem(attempt.path, None, exc.message)]
    if attempt.complete and attempt.manifest_sha256 is not None:
        _, digest = sha256_file(directory / MANIFEST_JSON)
        if digest != attempt.manifest_sha256:
            problems.append(
                Problem(
                    f"{attempt.path}/{MANIFEST_JSON}",
                    None,
                    "sha256 differs from the one campaign.json records: the unit's run "
                    "directory changed after the campaign recorded it",
                )
            )
    if attempt.done and not attempt.complete:
        problems.append(Problem(CAMPAIGN_JSON, None, f"{where}: done but not complete"))
    return problems


def _recorded(report: CampaignReport) -> set[str]:
    paths: set[str] = set()
    for unit in report.units:
        for attempt in unit.attempts:
            paths.add(PurePosixPath(attempt.path).as_posix())
            if attempt.log is not None:
                paths.add(PurePosixPath(attempt.log).as_posix())
    return paths


def _unrecorded(camp: Path, report: CampaignReport) -> list[Problem]:
    """Entries of `units/<unit>/` that campaign.json does not know: nothing may go unaccounted."""
    units = camp / UNITS_DIR
    if not units.is_dir():
        return []
    known = _recorded(report)
    problems: list[Problem] = []
    for unit in sorted(units.iterdir()):
        if not unit.is_dir() or unit.is_symlink():
            problems.append(Problem(f"{UNITS_DIR}/{unit.name}", None, "not a unit directory"))
            continue
        for entry in sorted(unit.iterdir()):
            rel = f"{UNITS_DIR}/{unit.name}/{entry.name}"
            if rel not in known:
                problems.append(Problem(rel, None, "not recorded in campaign.json"))
    return problems


def _check_units(camp: Path, report: CampaignReport) -> list[Problem]:
    problems: list[Problem] = []
    for i, unit in enumerate(report.units):
        numbers = [a.attempt for a in unit.attempts]
        if unit.result_attempt is not None:
            result = [a for a in unit.attempts if a.attempt == unit.result_attempt]
            if not result or not result[0].done:
                problems.append(
                    Problem(
                        CAMPAIGN_JSON,
                        None,
                        f"units[{i}] `{unit.unit_id}`: result_attempt {unit.result_attempt} is "
                        f"not a done attempt (attempts: {numbers})",
                    )
                )
        for j, attempt in enumerate(unit.attempts):
            problems += _check_attempt(camp, attempt, f"units[{i}].attempts[{j}]")
            if attempt.log is not None and not (camp / attempt.log).is_file():
                problems.append(Problem(attempt.log, None, "recorded in campaign.json but missing"))
    return problems + _unrecorded(camp, report)


def _check_consistency(report: CampaignReport, plan: CampaignPlan | None) -> list[Problem]:
    problems: list[Problem] = []
    if report.summary.status != report.run.status:
        problems.append(
            Problem(
                CAMPAIGN_JSON,
                None,
                f"summary.status `{report.summary.status}` differs from run.status "
                f"`{report.run.status}`",
            )
        )
    planned = [u.unit_id for u in report.units if u.in_plan]
    if report.summary.counts.units != len(planned):
        problems.append(
            Problem(
                CAMPAIGN_JSON,
                None,
                f"summary.counts.units is {report.summary.counts.units} but {len(planned)} "
                "unit(s) are in the plan",
            )
        )
    if plan is not None and sorted(planned) != sorted(u.unit_id for u in plan.units):
        problems.append(
            Problem(CAMPAIGN_JSON, None, "the units marked in_plan differ from plan.json's units")
        )
    if plan is not None and plan.run.run_id != report.run.run_id:
        problems.append(
            Problem(
                CAMPAIGN_PLAN_JSON,
                None,
                f"run_id `{plan.run.run_id}` differs from campaign.json's `{report.run.run_id}`",
            )
        )
    return problems


def check_campaign_dir(camp: Path) -> list[Problem]:
    """Every problem of a campaign directory and of the unit run directories in it."""
    problems = check_run_dir(camp, CAMPAIGN_LAYOUT)
    report = _decode(camp / CAMPAIGN_JSON)
    plan = _decode(camp / CAMPAIGN_PLAN_JSON)
    if isinstance(report, CampaignReport):
        problems += _check_consistency(report, plan if isinstance(plan, CampaignPlan) else None)
        problems += _check_units(camp, report)
    else:
        problems += _check_unrecorded_units(camp)
    return sorted(problems, key=lambda p: (p.file, p.line or 0))


def _check_unrecorded_units(camp: Path) -> list[Problem]:
    """Without a readable campaign.json, every finalized unit run directory is still checked."""
    problems: list[Problem] = []
    for manifest in sorted((camp / UNITS_DIR).glob(f"*/*/{MANIFEST_JSON}")):
        rel = manifest.parent.relative_to(camp).as_posix()
        try:
            problems += _nested(rel, check_run_dir(manifest.parent))
        except ArtifactError as exc:
            problems.append(Problem(rel, None, exc.message))
    return problems
