"""A campaign directory given where one run is wanted (`tile report`, `tile baseline save`,
`tile compare`; `.tile/latest` names the campaign after `tile campaign run`): what to say."""

from __future__ import annotations

from pathlib import Path

from tile_artifacts._paths import CAMPAIGN_JSON, CAMPAIGN_PLAN_JSON, REPORT_JSON, UNITS_DIR

__all__ = ["not_one_run"]


def not_one_run(path: Path) -> tuple[str, str] | None:
    """(message, hint) when `path` is a campaign directory rather than a run, else None.

    The hint names the unit runs inside it (the newest attempt of each, at most three) so that
    the person picks the variant they meant instead of tile picking one silently."""
    if not path.is_dir() or (path / REPORT_JSON).exists():
        return None
    if not ((path / CAMPAIGN_JSON).is_file() or (path / CAMPAIGN_PLAN_JSON).is_file()):
        return None
    runs: list[str] = []
    for unit in sorted(p for p in (path / UNITS_DIR).glob("*") if p.is_dir()):
        attempts = sorted(
            (p.parent.name for p in unit.glob("attempt-*/" + REPORT_JSON)),
            key=lambda name: int(name[8:]) if name[8:].isdigit() else 0,
        )
        if attempts:
            runs.append(f"`{path / UNITS_DIR / unit.name / attempts[-1]}`")
    shown = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
    message = f"`{path}` is a campaign directory, not one run: each of its units is a run"
    whole = f"the whole campaign is in `{path / 'summary.md'}`"
    hint = (
        f"pass one unit's run, e.g. {shown}; {whole}" if runs else f"no unit has run yet; {whole}"
    )
    return message, hint
