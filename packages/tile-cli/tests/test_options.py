"""The flags that set configuration name real keys, and every such flag is in the table."""

from __future__ import annotations

import inspect
from typing import Any, cast

import pytest
from pydantic import BaseModel

import tile_config as tc
from tile_cli.commands import _options as options


def _declared() -> set[str]:
    """Every parameter name an option group of `_options` declares."""
    names = {p.name for p in options.compare_flags(after_run=False)}
    for name, value in vars(options).items():
        if name.isupper() and isinstance(value, tuple):
            group = cast("tuple[object, ...]", value)
            names |= {p.name for p in group if isinstance(p, inspect.Parameter)}
    return names


_DECLARED = _declared()


def _config_field(key: str) -> Any:
    """The annotation of `section.key` in TileConfig; KeyError when there is no such key."""
    section, name = key.split(".")
    model = tc.TileConfig.model_fields[section].annotation
    assert isinstance(model, type) and issubclass(model, BaseModel), key
    return model.model_fields[name].annotation


@pytest.mark.parametrize(("flag", "key"), sorted(options.CONFIG_KEYS.items()))
def test_every_flag_to_config_entry_names_a_real_key_and_a_declared_flag(
    flag: str, key: str
) -> None:
    assert flag in _DECLARED
    _config_field(key)  # raises KeyError for a misspelt key


def test_a_flag_that_sets_configuration_is_in_the_table() -> None:
    # Flags that are not configuration: selection, output, the command's own switches.
    not_config = {
        "filters", "kernels", "axes", "plugins", "profile", "output_dir", "json", "verbose",
        "tunable", "slurm_args", "assignments", "cache_report", "cold_process", "case_ids",
        "check", "update", "directory", "db", "dry_run", "settings", "compare",
        # `tile history`'s selection of runs
        "device", "branch", "last", "include_dirty",
    }  # fmt: skip
    unlisted = _DECLARED - set(options.CONFIG_KEYS) - not_config
    assert not unlisted, f"flags missing from CONFIG_KEYS (or from not_config): {unlisted}"


def test_config_overrides_turn_given_flags_into_keys_and_leave_the_rest() -> None:
    given = {"timer": "wall", "max_time": 0.5, "isolate": None, "settings": ["bench.rounds=3"]}
    assert options.config_overrides(given) == {
        "bench.rounds": "3",
        "bench.timer": "wall",
        "bench.max_time": 0.5,
    }
