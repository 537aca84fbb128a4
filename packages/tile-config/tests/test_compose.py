"""Composition: several profiles in order, TILE_VERBOSE, and the `[telemetry]` section."""

from __future__ import annotations

from pathlib import Path

import pytest

from tile_config import ConfigError, Origin, load_config, profile_names

PROFILES = """\
[bench]
max_runs = 500

[profiles.ci.bench]
max_runs = 50
max_time = 0.5

[profiles.ci.runner]
pin_cpu = true

[profiles.h200.bench]
max_time = 3.0
cold = true
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "tile.toml").write_text(PROFILES, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("given", [["ci", "h200"], "ci,h200", ["ci,h200"], ["ci", "h200", "ci"]])
def test_profiles_compose_in_order_and_origins_name_each(
    given: str | list[str], tmp_path: Path
) -> None:
    r = load_config(cwd=_project(tmp_path), environ={}, profile=given)
    assert r.profiles == ("ci", "h200")
    assert r.profile == "ci,h200"
    bench = r.config.bench
    assert (bench.max_runs, bench.max_time, bench.cold) == (50, 3.0, True)
    assert r.config.runner.pin_cpu is True
    assert r.origins["bench.max_runs"] == Origin("profile", "profile ci (tile.toml:5)")
    assert r.origins["bench.max_time"] == Origin("profile", "profile h200 (tile.toml:12)")
    assert r.origins["runner.pin_cpu"] == Origin("profile", "profile ci (tile.toml:9)")


def test_the_later_profile_wins_whichever_order(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert load_config(cwd=root, environ={}, profile="h200,ci").config.bench.max_time == 0.5
    assert load_config(cwd=root, environ={}, profile="ci,h200").config.bench.max_time == 3.0


def test_tile_profile_composes_and_a_flag_replaces_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    r = load_config(cwd=root, environ={"TILE_PROFILE": "ci, h200"})
    assert r.profiles == ("ci", "h200")
    assert r.config.bench.max_time == 3.0
    r = load_config(cwd=root, environ={"TILE_PROFILE": "ci,h200"}, profile=["ci"])
    assert r.profiles == ("ci",) and r.config.bench.max_time == 0.5


def test_an_unknown_profile_among_several_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(cwd=_project(tmp_path), environ={}, profile=["ci", "h100"])
    assert "unknown profile `h100`" in str(info.value)
    assert "`ci`, `h200`" in str(info.value)
    assert info.value.hint


def test_profile_names_splits_and_dedups() -> None:
    assert profile_names(None) == ()
    assert profile_names("") == ()
    assert profile_names(["a,b", " c ", "a"]) == ("a", "b", "c")


def test_tile_verbose_sets_output_verbose_or_is_refused(tmp_path: Path) -> None:
    r = load_config(cwd=tmp_path, environ={"TILE_VERBOSE": "2"})
    assert r.config.output.verbose == 2
    assert r.origins["output.verbose"] == Origin("env", "env TILE_VERBOSE")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path, environ={"TILE_VERBOSE": "loud"})
    assert "TILE_VERBOSE" in str(info.value) and "an integer" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path, environ={"TILE_VERBOSE": "9"})
    assert "output.verbose" in str(info.value)


def test_telemetry_defaults_and_overrides(tmp_path: Path) -> None:
    r = load_config(cwd=tmp_path, environ={})
    t = r.config.telemetry
    assert t.clocks is True and t.commands is True and "XLA_*" in t.env
    r = load_config(
        cwd=tmp_path,
        environ={"TILE_TELEMETRY_ENV": "XLA_*,MY_*"},
        overrides={"telemetry.clocks": "false", "telemetry.commands": "no"},
    )
    t = r.config.telemetry
    assert (t.clocks, t.commands, t.env) == (False, False, ["XLA_*", "MY_*"])
    assert r.origins["telemetry.clocks"] == Origin("cli", "cli")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path, environ={}, overrides={"telemetry.clock": "true"})
    assert "unknown key `telemetry.clock`" in str(info.value)
