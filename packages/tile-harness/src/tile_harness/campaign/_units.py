"""A campaign's unit attempts on disk: which are complete, and which one is a unit's result.

Whether a unit is done is read from its run directories alone, never from a campaign file
that a kill may have left behind: an attempt is the unit's result when it passes schema-check
(complete), its report's command line is the plan's (`context.argv`, output directory aside),
it ran on the device kind the machine expects, and no runner crashed, hung or was stopped in
it. A failed check is a result too (the kernel is wrong; running it again will not fix that).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import tile_artifacts as ta

__all__ = [
    "AttemptState",
    "Inspector",
    "Verdict",
    "attempt_dir",
    "attempt_log",
    "planned_args",
    "same_args",
    "verdict",
]

_ATTEMPT_RE: Final = re.compile(r"attempt-([1-9][0-9]*)")
_NOT_A_RESULT: Final = frozenset({"interrupted", "timed_out", "invalid", "incomplete"})


def attempt_dir(unit_id: str, number: int) -> str:
    """Campaign-relative run directory of a unit's n-th attempt."""
    return f"{ta.campaign.UNITS_DIR}/{unit_id}/attempt-{number}"


def attempt_log(unit_id: str, number: int) -> str:
    """Campaign-relative file with the `tile bench` output of a unit's n-th attempt."""
    return f"{attempt_dir(unit_id, number)}.log"


def planned_args(argv: list[str]) -> list[str]:
    """A unit's `tile bench` arguments from a report's argv: program and `-o DIR` left out."""
    args = list(argv[1:])
    for flag in ("-o", "--output-dir"):
        while flag in args:
            at = args.index(flag)
            del args[at : at + 2]
    return args


@dataclass(frozen=True)
class AttemptState:
    """What is on disk for one attempt; `report` only when the directory is complete."""

    number: int
    path: str
    log: str | None
    complete: bool
    report: ta.Report | None = None
    manifest_sha256: str | None = None
    problems: list[str] = field(default_factory=list[str])


@dataclass(frozen=True)
class Verdict:
    """Whether an attempt is its unit's result, and why not."""

    done: bool
    matches_plan: bool
    status: ta.Status
    reason: str | None


def same_args(argv: list[str], planned: list[str], redactor: ta.Redactor) -> bool:
    """Whether a report's argv (as written: secrets redacted) ran the `planned` arguments.

    Both sides go through the campaign's redactor before they are compared: the unit's run
    hid its secret values (`runner.env.HF_TOKEN=<redacted>`) and the plan holds them plain,
    so comparing as they were judged every attempt of a secret-setting variant stale.
    """
    recorded = [redactor.text(arg) for arg in planned_args(argv)]
    return recorded == [redactor.text(arg) for arg in planned]


def verdict(
    state: AttemptState, unit: ta.campaign.PlannedUnit | None, redactor: ta.Redactor | None = None
) -> Verdict:
    """Judge one attempt against the unit as planned now (None: no longer in the plan); the
    campaign's `redactor` hides in the plan what the attempt's run directory hides."""
    report = state.report
    if report is None:
        why = state.problems[0] if state.problems else "it has no artifact_manifest.json"
        return Verdict(False, False, "interrupted", f"not a complete run directory: {why}")
    hide = redactor or ta.Redactor()
    matches = unit is not None and same_args(report.context.argv, unit.args, hide)
    status, reason = report.run.status, report.run.status_reason
    if not matches:
        return Verdict(False, False, status, "made with other arguments than the current plan")
    if status in _NOT_A_RESULT or report.failures:
        failed = f"{len(report.failures)} failure(s)" if report.failures else status
        return Verdict(False, True, status, reason or failed)
    kind = report.device.device_kind
    if unit is not None and unit.device_kind is not None and kind != unit.device_kind:
        why = f"ran on `{kind}`, but machine `{unit.machine}` expects `{unit.device_kind}`"
        return Verdict(False, True, "invalid", why)
    return Verdict(True, True, status, reason)


class Inspector:
    """Reads attempts under `units/`; a complete one is checked once per manifest content."""

    def __init__(self, campaign_dir: Path, redactor: ta.Redactor | None = None) -> None:
        self.campaign_dir = campaign_dir
        self.redactor = redactor or ta.Redactor()
        """The campaign's secrets: what its units' run directories hide (`verdict`)."""
        self._cache: dict[tuple[str, str], AttemptState] = {}

    def unit_ids(self) -> list[str]:
        """Every unit directory under `units/`, sorted."""
        units = self.campaign_dir / ta.campaign.UNITS_DIR
        if not units.is_dir():
            return []
        return sorted(p.name for p in units.iterdir() if p.is_dir() and not p.is_symlink())

    def attempts(self, unit_id: str) -> list[AttemptState]:
        """The unit's attempts by number (a log without a directory is an attempt too)."""
        base = self.campaign_dir / ta.campaign.UNITS_DIR / unit_id
        numbers: set[int] = set()
        if base.is_dir():
            for entry in base.iterdir():
                match = _ATTEMPT_RE.fullmatch(entry.name.removesuffix(".log"))
                if match:
                    numbers.add(int(match.group(1)))
        return [self.inspect(unit_id, n) for n in sorted(numbers)]

    def inspect(self, unit_id: str, number: int) -> AttemptState:
        """One attempt as it is on disk now."""
        rel, log = attempt_dir(unit_id, number), attempt_log(unit_id, number)
        directory = self.campaign_dir / rel
        shown_log = log if (self.campaign_dir / log).is_file() else None
        manifest = directory / ta.MANIFEST_JSON
        if not manifest.is_file():
            return AttemptState(number, rel, shown_log, complete=False)
        try:
            digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
        except OSError as exc:
            return AttemptState(number, rel, shown_log, False, problems=[str(exc)])
        key = (rel, digest)
        if key not in self._cache:
            self._cache[key] = self._check(number, rel, shown_log, digest)
        return self._cache[key]

    def _check(self, number: int, rel: str, log: str | None, digest: str) -> AttemptState:
        directory = self.campaign_dir / rel
        try:
            problems = [str(p) for p in ta.check.check_path(directory)]
        except ta.ArtifactError as exc:
            problems = [exc.message]
        if problems:
            return AttemptState(number, rel, log, False, manifest_sha256=digest, problems=problems)
        report = ta.read_report(directory / ta.REPORT_JSON)
        return AttemptState(number, rel, log, True, report=report, manifest_sha256=digest)
