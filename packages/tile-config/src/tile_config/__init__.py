"""tile-config: the configuration of tile and its layered loader.

Sources, lowest first: defaults < tile.toml (or `[tool.tile]` in pyproject.toml) found by
walking up from the working directory < a profile < `TILE_<SECTION>_<KEY>` variables < CLI
overrides. `load_config` returns the validated `TileConfig` with the origin of every value;
`load_campaign` reads and checks a saved benchmark plan (`campaigns/NAME.toml`).
"""

from __future__ import annotations

from tile_config._campaign import CAMPAIGNS_DIR, Campaign, campaign_names, load_campaign
from tile_config._campaign_models import (
    NAME_PATTERN,
    BenchPatch,
    BudgetSpec,
    CampaignSpec,
    CompareSpec,
    MachineSpec,
    RunnerPatch,
    SelectSpec,
    SmokeSpec,
    VariantSpec,
    parse_duration,
)
from tile_config._dtypes import DTYPE_NAMES, dtype_problem
from tile_config._errors import ConfigError
from tile_config._loader import (
    Origin,
    OriginKind,
    ResolvedConfig,
    flatten,
    load_config,
    profile_names,
)
from tile_config._models import (
    SECTIONS,
    ArchiveKind,
    BenchConfig,
    CompareBasis,
    CompareConfig,
    DownloadEntry,
    HistoryConfig,
    KernelMode,
    LauncherConfig,
    LauncherKind,
    MachineConfig,
    OutputConfig,
    ProfileConfig,
    ProjectConfig,
    RunnerConfig,
    TelemetryConfig,
    TestConfig,
    TileConfig,
    Timer,
    TuneConfig,
)

__all__ = [
    # loading
    "Origin",
    "OriginKind",
    "ResolvedConfig",
    "flatten",
    "load_config",
    "profile_names",
    # models
    "SECTIONS",
    "ArchiveKind",
    "BenchConfig",
    "CompareBasis",
    "CompareConfig",
    "DownloadEntry",
    "HistoryConfig",
    "LauncherConfig",
    "TuneConfig",
    "LauncherKind",
    "MachineConfig",
    "OutputConfig",
    "ProfileConfig",
    "ProjectConfig",
    "RunnerConfig",
    "TelemetryConfig",
    "TestConfig",
    "TileConfig",
    "KernelMode",
    "Timer",
    # campaigns
    "CAMPAIGNS_DIR",
    "NAME_PATTERN",
    "BenchPatch",
    "BudgetSpec",
    "Campaign",
    "CampaignSpec",
    "CompareSpec",
    "MachineSpec",
    "RunnerPatch",
    "SelectSpec",
    "SmokeSpec",
    "VariantSpec",
    "campaign_names",
    "load_campaign",
    "parse_duration",
    # dtype names
    "DTYPE_NAMES",
    "dtype_problem",
    # errors
    "ConfigError",
]
