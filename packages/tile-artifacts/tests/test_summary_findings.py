"""summary.md's findings and next steps: most severe first, evidence bounded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tile_artifacts import Finding, RecommendedAction, read_report, render_summary_markdown


def test_findings_and_actions_are_shown_most_severe_first(
    make_run: Callable[..., Path],
) -> None:
    report = read_report(make_run() / "report.json")
    report = report.model_copy(
        update={
            "findings": [
                Finding(
                    finding_id="N002",
                    severity="info",
                    category="roofline",
                    title="peaks from the built-in table",
                ),
                Finding(
                    finding_id="N001",
                    severity="high",
                    category="correctness",
                    title="2 cases fail | their check",
                    evidence=[f"case {i}: rel L2 0.5 > tol 1e-5" for i in range(7)],
                    interpretation="the kernel's output does not match its reference",
                ),
            ],
            "recommended_actions": [
                RecommendedAction(action_id="A002", priority="low", description="calibrate"),
                RecommendedAction(action_id="A001", priority="high", description="fix it"),
            ],
        }
    )
    text = render_summary_markdown(report, [])
    findings = text.split("## Findings\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert findings[0] == "- 🔴 **high** (correctness): 2 cases fail \\| their check"
    assert findings[1] == "  the kernel's output does not match its reference"
    assert findings[2:7] == [f"  - case {i}: rel L2 0.5 > tol 1e-5" for i in range(5)]
    assert findings[7] == "  - … 2 more in `report.json`"
    assert findings[8].startswith("- 🔵 **info** (roofline)")
    steps = text.split("## Next steps\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert steps == ["1. (high) fix it", "2. (low) calibrate"]


def test_no_findings_no_section(make_run: Callable[..., Path]) -> None:
    text = (make_run() / "summary.md").read_text()
    assert "## Findings" not in text and "## Next steps" not in text
