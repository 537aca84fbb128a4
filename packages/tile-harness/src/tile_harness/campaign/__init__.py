"""Campaigns: a saved plan of `tile bench` units, run and resumed, variants compared."""

from __future__ import annotations

from tile_harness.campaign._dir import CampaignDir, campaign_redactor
from tile_harness.campaign._plan import CampaignSetup, make_plan
from tile_harness.campaign._report import compare_variants, summarize, unit_records
from tile_harness.campaign._run import CampaignRun, Ended
from tile_harness.campaign._units import Inspector, attempt_dir, attempt_log

__all__ = [
    "CampaignRun",
    "Ended",
    "CampaignDir",
    "CampaignSetup",
    "Inspector",
    "attempt_dir",
    "attempt_log",
    "campaign_redactor",
    "compare_variants",
    "make_plan",
    "summarize",
    "unit_records",
]
