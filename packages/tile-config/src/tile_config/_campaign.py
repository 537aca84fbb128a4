"""Finding and checking campaigns: `campaigns/NAME.toml` or `[campaigns.NAME]` in tile.toml.

Campaign files get the same treatment as tile.toml: TOML errors and bad values are reported
with the file and line (`campaigns/norms.toml:7`), unknown keys with the valid ones.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tile_config._campaign_models import NAME_PATTERN, CampaignSpec
from tile_config._errors import ConfigError, Place, translate
from tile_config._files import ConfigSource, read_config
from tile_config._loader import ResolvedConfig
from tile_config._models import known_keys

__all__ = ["CAMPAIGNS_DIR", "Campaign", "campaign_names", "load_campaign"]

CAMPAIGNS_DIR = "campaigns"
"""Directory of campaign files, beside tile.toml (or in the working directory without one)."""
_NAME_RE = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class Campaign:
    """A checked campaign, and where each of its keys is written (for later error messages)."""

    name: str
    spec: CampaignSpec
    source: ConfigSource
    """The campaign's own table (`data`), its file and the line of every key."""

    @property
    def display(self) -> str:
        """The file the campaign is written in, as the user would type it."""
        return self.source.display

    def where(self, *path: str) -> str:
        """`campaigns/norms.toml:7` for a key of the campaign (dotted path as separate parts)."""
        return self.source.where(path)


def _directory(resolved: ResolvedConfig) -> Path:
    return (resolved.project_root or resolved.cwd) / CAMPAIGNS_DIR


def _tables(resolved: ResolvedConfig) -> dict[str, Any]:
    return dict(resolved.config.campaigns)


def campaign_names(resolved: ResolvedConfig) -> dict[str, str]:
    """Every campaign there is, name -> where it is defined, files first."""
    names: dict[str, str] = {}
    directory = _directory(resolved)
    if directory.is_dir():
        for path in sorted(directory.glob("*.toml")):
            names[path.stem] = _display(path, resolved.cwd)
    config = _display(resolved.config_file, resolved.cwd) if resolved.config_file else "tile.toml"
    for name in _tables(resolved):
        names.setdefault(name, f"{config} [campaigns.{name}]")
    return names


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _unknown(name: str, resolved: ResolvedConfig) -> ConfigError:
    known = campaign_names(resolved)
    listed = ", ".join(f"`{n}`" for n in known) or "none"
    where = _display(_directory(resolved) / f"{name}.toml", resolved.cwd)
    return ConfigError(
        f"no campaign `{name}`: `{where}` does not exist and the config has no "
        f"`[campaigns.{name}]`; campaigns here: {listed}",
        hint=f"create `{where}` (docs/campaigns.md has a worked example)"
        if not known
        else f"use one of {listed}, or create `{where}`",
    )


def _source(name: str, resolved: ResolvedConfig) -> ConfigSource:
    """The campaign's table with its file and line numbers; ConfigError when absent or twice."""
    path = _directory(resolved) / f"{name}.toml"
    in_config = name in _tables(resolved)
    if path.is_file() and in_config:
        config = _display(resolved.config_file, resolved.cwd) if resolved.config_file else ""
        raise ConfigError(
            f"campaign `{name}` is defined twice: in `{_display(path, resolved.cwd)}` and as "
            f"`[campaigns.{name}]` in `{config}`",
            hint="keep one of the two",
        )
    if path.is_file():
        return read_config(path, resolved.cwd)
    if not in_config or resolved.config_file is None:
        raise _unknown(name, resolved)
    config = read_config(resolved.config_file, resolved.cwd)
    table = config.data["campaigns"][name]
    prefix = (*config.prefix, "campaigns", name)
    return dataclasses.replace(config, data=table, prefix=prefix)


def load_campaign(name: str, resolved: ResolvedConfig) -> Campaign:
    """Find campaign `name` beside the resolved config and check it; any problem is a ConfigError.

    Only the file's own content is checked here; what needs the kernels (does a selector match
    anything?) or the merged config (does a variant's profile exist?) is checked by the plan.
    """
    if not _NAME_RE.fullmatch(name):
        raise ConfigError(
            f"`{name}` is not a campaign name",
            hint="campaign names are letters, digits, `.`, `_` and `-`, e.g. `norms-h200`",
        )
    source = _source(name, resolved)

    def locate(path: tuple[str, ...]) -> Place:
        where = source.where(path)
        return Place(where, f"edit `{where}`", 1)

    try:
        spec = CampaignSpec.model_validate(source.data)
    except ValidationError as exc:
        raise translate(exc, locate, lambda p: known_keys(p, CampaignSpec)) from None
    campaign = Campaign(name=name, spec=spec, source=source)
    _cross_check(campaign)
    return campaign


def _cross_check(campaign: Campaign) -> None:
    """What one key alone cannot say: the baseline must be one of the variants."""
    spec = campaign.spec
    baseline = spec.compare.baseline
    variants = list(spec.variants) or ["default"]
    if baseline is not None and baseline.split("+", 1)[0] not in variants:
        where = campaign.where("compare", "baseline")
        raise ConfigError(
            f"{where}: `compare.baseline` = `{baseline}` is not a variant of campaign "
            f"`{campaign.name}`",
            hint=f"name one of: {', '.join(f'`{v}`' for v in variants)}",
        )
