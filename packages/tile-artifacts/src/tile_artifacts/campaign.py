"""Campaigns (`tile campaign`): the plan and report documents, the directory's layout (one
run directory per unit attempt under `units/`), their readers and the campaign's summary.md.
`tile_artifacts.check.check_path` checks a campaign directory as it checks a run directory."""

from __future__ import annotations

from tile_artifacts._campaign import (
    AttemptRecord,
    BudgetRecord,
    CampaignAccounting,
    CampaignCounts,
    CampaignPlan,
    CampaignReport,
    CampaignSummary,
    CaseEstimate,
    ComparisonRef,
    EstimateBasis,
    PlannedUnit,
    SelectorKind,
    SelectorMatch,
    TimeSplit,
    UnitRecord,
    VariantCell,
    VariantRow,
)
from tile_artifacts._campaign_dir import not_one_run
from tile_artifacts._campaign_summary import render_campaign_markdown, row_configs, verdict_text
from tile_artifacts._paths import (
    CAMPAIGN_JSON,
    CAMPAIGN_LAYOUT,
    CAMPAIGN_PLAN_JSON,
    RESOLVED_CAMPAIGN_JSON,
    UNITS_DIR,
)
from tile_artifacts._read import read_campaign, read_campaign_plan

__all__ = [
    # the plan (`tile.campaign_plan`)
    "CampaignPlan",
    "CaseEstimate",
    "EstimateBasis",
    "PlannedUnit",
    "SelectorKind",
    "SelectorMatch",
    "read_campaign_plan",
    # the report (`tile.campaign`)
    "AttemptRecord",
    "BudgetRecord",
    "CampaignAccounting",
    "CampaignCounts",
    "CampaignReport",
    "CampaignSummary",
    "ComparisonRef",
    "TimeSplit",
    "UnitRecord",
    "VariantCell",
    "VariantRow",
    "read_campaign",
    # the directory
    "CAMPAIGN_JSON",
    "not_one_run",
    "CAMPAIGN_LAYOUT",
    "CAMPAIGN_PLAN_JSON",
    "RESOLVED_CAMPAIGN_JSON",
    "UNITS_DIR",
    # summary.md
    "render_campaign_markdown",
    "row_configs",
    "verdict_text",
]
