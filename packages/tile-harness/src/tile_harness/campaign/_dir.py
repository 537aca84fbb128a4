"""A campaign directory: its identity across resumes, its lock, and crash-safe checkpoints.

The directory keeps one run id from its first `tile campaign run` to its last, so every
document in it belongs to one campaign. Each checkpoint rewrites `campaign.json`, `summary.md`
and, last, the manifest (which leaves `units/` to the units' own manifests): whatever kills
the campaign, the directory is the last checkpoint plus unit directories that it records.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Generator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tile_artifacts as ta
from tile_harness._errors import CliError, ExitCode

if TYPE_CHECKING:
    from tile_harness.campaign._plan import CampaignSetup

__all__ = ["CampaignDir", "campaign_redactor"]

_SOURCE_SNAPSHOT = "config/campaign.toml"


class CampaignDir:
    """Writes one campaign directory; `locked()` keeps a second `tile campaign run` out."""

    def __init__(
        self, path: Path, plan: ta.campaign.CampaignPlan, redactor: ta.Redactor | None = None
    ) -> None:
        self.path = path.absolute()
        self.run_id, self.created_at = _identity(self.path, plan)
        self.producer = plan.producer
        self.redactor = redactor
        self._writer: ta.ArtifactWriter | None = None

    @contextlib.contextmanager
    def locked(self) -> Generator[None]:
        """Hold the campaign's lock file (beside the directory) for the duration."""
        import fcntl

        lock = self.path.parent / f".{self.path.name}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("a+") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                raise CliError(
                    f"campaign directory `{self.path}` is in use by {holder}",
                    hint="wait for that `tile campaign run` to end (or stop it), then run again",
                    code=ExitCode.USAGE,
                ) from None
            fh.truncate(0)
            fh.write(f"pid {os.getpid()}\n")
            fh.flush()
            yield

    def writer(self) -> ta.ArtifactWriter:
        """The writer until the next checkpoint (a finalized writer writes nothing more)."""
        if self._writer is None:
            try:
                self._writer = ta.ArtifactWriter(
                    self.path,
                    run_id=self.run_id,
                    producer=self.producer,
                    created_at=self.created_at,
                    allow_existing=True,
                    redactor=self.redactor,
                )
            except ta.ArtifactError as exc:
                raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
        return self._writer

    def event(self, event: str, message: str, **fields: Any) -> None:
        """Append one event to `events.jsonl`."""
        level = "warning" if fields.pop("warning", False) else "info"
        self.writer().event(
            event,
            message,
            level=level,
            phase="campaign",
            fields=json.loads(json.dumps(fields, default=str)),
        )

    def write_start(self, setup: CampaignSetup) -> None:
        """The plan and the configuration snapshots, before any unit runs."""
        w = self.writer()
        plan = setup.plan.model_copy(update={"run": self.run_info("dry_run")})
        w.write_json(ta.campaign.CAMPAIGN_PLAN_JSON, plan)
        w.write_text(ta.campaign.RESOLVED_CAMPAIGN_JSON, _dumps(_resolved(setup)))
        w.write_text(_SOURCE_SNAPSHOT, w.redactor.toml(setup.campaign.source.text))

    def run_info(self, status: ta.Status, reason: str | None = None) -> ta.RunInfo:
        """The `run` block of the campaign's documents."""
        return ta.RunInfo(
            run_id=self.run_id,
            created_at=self.created_at,
            status=status,
            status_reason=reason,
            output_directory=str(self.path),
        )

    def checkpoint(
        self,
        report: ta.campaign.CampaignReport,
        docs: Mapping[str, ta.compare.ComparisonDoc] | None = None,
    ) -> None:
        """campaign.json, summary.md, comparisons, then the manifest last."""
        w = self.writer()
        for path, doc in (docs or {}).items():
            w.write_json(path, doc)
        w.write_json(ta.campaign.CAMPAIGN_JSON, report)
        w.write_text(ta.SUMMARY_MD, ta.campaign.render_campaign_markdown(report))
        w.finalize(
            status=report.run.status,
            status_reason=report.run.status_reason,
            config_snapshots=[
                ta.ConfigSnapshot(
                    path=ta.campaign.RESOLVED_CAMPAIGN_JSON, kind="resolved_campaign"
                ),
                ta.ConfigSnapshot(
                    path=_SOURCE_SNAPSHOT, kind="campaign_source", source_path=report.source
                ),
            ],
            primary_artifacts=ta.PrimaryArtifacts(report_json=ta.campaign.CAMPAIGN_JSON),
            nested=(ta.campaign.UNITS_DIR,),
        )
        self._writer = None


def _identity(path: Path, plan: ta.campaign.CampaignPlan) -> tuple[str, datetime]:
    """The run id and creation time the directory already has, or the plan's for a new one."""
    for name in (ta.campaign.CAMPAIGN_JSON, ta.campaign.CAMPAIGN_PLAN_JSON):
        if (path / name).exists() and not (path / name).is_file():
            raise CliError(  # a directory or a FIFO where the campaign's own document goes
                f"`{path / name}` is not a file: the campaign's `{name}` cannot be read or written",
                hint=f"remove `{path / name}` (tile writes it again from `units/`), "
                "or choose another `--output-dir`",
                code=ExitCode.USAGE,
            )
        try:
            doc = ta.load_document(path / name)
        except ta.ArtifactError:
            continue
        if isinstance(doc, ta.campaign.CampaignReport | ta.campaign.CampaignPlan):
            if (doc.campaign, doc.smoke) != (plan.campaign, plan.smoke):
                held = f"`{doc.campaign}`" + (" (smoke)" if doc.smoke else "")
                wanted = f"`{plan.campaign}`" + (" (smoke)" if plan.smoke else "")
                raise CliError(
                    f"`{path}` holds campaign {held}, not {wanted}",
                    hint="choose another `--output-dir`",
                    code=ExitCode.USAGE,
                )
            return doc.run.run_id, doc.run.created_at
    holds_units = (path / ta.campaign.UNITS_DIR).is_dir()
    if path.is_dir() and any(path.iterdir()) and not holds_units:
        raise CliError(
            f"`{path}` exists and is not a campaign directory",
            hint="choose another `--output-dir`, or remove it",
            code=ExitCode.USAGE,
        )
    return plan.run.run_id, plan.run.created_at


def _redacted(settings: Mapping[str, object]) -> dict[str, object]:
    names = [k.removeprefix("runner.env.") for k in settings if k.startswith("runner.env.")]
    _, secret = ta.redact_environment(dict.fromkeys(names, ""))
    hidden = {f"runner.env.{n}" for n in secret}
    return {k: ta.REDACTED if k in hidden else v for k, v in settings.items()}


def _resolved(setup: CampaignSetup) -> dict[str, object]:
    campaign = setup.campaign
    config = setup.resolved.config_file
    return {
        "campaign": campaign.name,
        "source": campaign.display,
        "config_file": str(config) if config else None,
        "spec": campaign.spec.model_dump(mode="json"),
        "units": {
            unit.unit_id: {
                "args": unit.args,
                "settings": _redacted(setup.unit_settings.get(unit.unit_id, {})),
            }
            for unit in setup.plan.units
        },
    }


def _dumps(value: object) -> str:
    return json.dumps(value, indent=2, default=str) + "\n"


def campaign_redactor(setup: CampaignSetup) -> ta.Redactor:
    """The secrets a campaign directory must not hold: its project's and its own file's."""
    import sys

    project = ta.Redactor.for_run(
        environ=os.environ,
        settings=setup.resolved.config.runner.env,
        config_text=setup.resolved.raw_text,
        argv=sys.argv,
    )
    return project | ta.Redactor.for_run(environ={}, config_text=setup.campaign.source.text)
