"""The findings and next steps of `summary.md`: what tile noticed, and what to do about it."""

from __future__ import annotations

from typing import Final

from tile_artifacts._models import Finding, Report

__all__ = ["findings_markdown"]

_EVIDENCE_SHOWN: Final = 5
"""Evidence lines per finding in the summary; report.json keeps them all."""
_MARK: Final = {"critical": "🔴", "high": "🔴", "medium": "🟠", "low": "🟡", "info": "🔵"}


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _finding(finding: Finding) -> list[str]:
    head = f"- {_MARK[finding.severity]} **{finding.severity}** ({finding.category}): "
    lines = [head + _one_line(finding.title)]
    if finding.interpretation:
        lines.append(f"  {_one_line(finding.interpretation)}")
    shown = finding.evidence[:_EVIDENCE_SHOWN]
    lines += [f"  - {_one_line(e)}" for e in shown]
    if len(finding.evidence) > len(shown):
        lines.append(f"  - … {len(finding.evidence) - len(shown)} more in `report.json`")
    return lines


def findings_markdown(report: Report) -> list[str]:
    """`## Findings` (most severe first) and `## Next steps`, or nothing when there are none."""
    lines: list[str] = []
    if report.findings:
        order = list(_MARK)
        ranked = sorted(report.findings, key=lambda f: order.index(f.severity))
        lines += ["", "## Findings", ""]
        for finding in ranked:
            lines += _finding(finding)
    if report.recommended_actions:
        lines += ["", "## Next steps", ""]
        rank = {"high": 0, "medium": 1, "low": 2}
        actions = sorted(report.recommended_actions, key=lambda a: rank[a.priority])
        lines += [f"{i}. ({a.priority}) {a.description}" for i, a in enumerate(actions, 1)]
    return lines
