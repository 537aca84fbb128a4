"""Campaign files: found beside tile.toml or inside it, checked with file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tile_config import (
    Campaign,
    ConfigError,
    campaign_names,
    load_campaign,
    load_config,
    parse_duration,
)

GOOD = """\
description = "norms"

[select]
kernels = "std/rms_norm, std/layer_norm"
filters = ["bfloat16"]
axes = ["dtype=float32,bfloat16", "shape=8x128"]

[variants.warm]
[variants.cold]
bench = { cold = true, max_time = 0.5 }
env = { XLA_FLAGS = "--xla_dump_to=dump" }

[perturb.XLA_FLAGS]
base = ""
no-autotune = "--xla_gpu_autotune_level=0"

[machines.h200]
launcher = "slurm"
partition = "h200"
shards = 4
time_limit = "1:00:00"
device_kind = "NVIDIA H200"
peak_tflops = { bfloat16 = 989 }

[budget]
wall_time = "1h30m"
max_cases = 400

[compare]
baseline = "warm"
"""


def _project(tmp_path: Path, campaign: str | None = None, toml: str = "") -> Path:
    root = tmp_path / "proj"
    (root / "campaigns").mkdir(parents=True)
    (root / "tile.toml").write_text("[project]\npaths = ['kernels']\n" + toml)
    if campaign is not None:
        (root / "campaigns" / "norms.toml").write_text(campaign)
    return root


def _load(root: Path, name: str = "norms") -> Campaign:
    return load_campaign(name, load_config(cwd=root, environ={}))


def _error(root: Path, name: str = "norms") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        _load(root, name)
    assert info.value.hint, "every campaign error says what to do"
    return info.value


def test_a_full_campaign_file_loads_with_its_lists_parsed(tmp_path: Path) -> None:
    campaign = _load(_project(tmp_path, GOOD))
    spec = campaign.spec
    assert spec.select.kernels == ["std/rms_norm", "std/layer_norm"]
    assert spec.select.axes == {"dtype": ["float32", "bfloat16"], "shape": ["8x128"]}
    assert list(spec.variants) == ["warm", "cold"]
    assert spec.variants["cold"].bench.cold is True
    assert spec.variants["cold"].bench.max_runs is None  # not set: the config's value stays
    assert spec.perturb["XLA_FLAGS"]["no-autotune"] == "--xla_gpu_autotune_level=0"
    assert spec.machines["h200"].launcher == "slurm"
    assert spec.budget.wall_time == 5400.0
    assert campaign.display == "campaigns/norms.toml"
    assert campaign.where("machines", "h200", "shards") == "campaigns/norms.toml:20"


def test_axes_as_a_table_take_numbers_and_shapes(tmp_path: Path) -> None:
    text = "[select.axes]\nn = [256, 1024]\nshape = [[8, 128]]\ndtype = 'float32, bfloat16'\n"
    spec = _load(_project(tmp_path, text)).spec
    assert spec.select.axes == {
        "n": ["256", "1024"],
        "shape": ["8x128"],
        "dtype": ["float32", "bfloat16"],
    }


def test_every_bad_key_is_named_with_its_line(tmp_path: Path) -> None:
    text = (
        "[select]\nkernels = 'a,,b'\n\n[variants.cold]\nbench = { cold = 'yes', max_tme = 2 }\n"
        "[machines.gpu]\nlauncher = 'slurmm'\n[budget]\nwall_time = 'soon'\n"
    )
    error = _error(_project(tmp_path, text))
    lines = str(error).splitlines()
    assert "campaigns/norms.toml:2: `select.kernels[1]` expected a non-empty string" in lines[0]
    assert any(
        line.startswith("campaigns/norms.toml:5: unknown key `variants.cold.bench.max_tme`")
        for line in lines
    )
    assert any(
        "campaigns/norms.toml:5: `variants.cold.bench.cold` expected a boolean" in line
        for line in lines
    )
    assert any(
        "campaigns/norms.toml:7: `machines.gpu.launcher` must be one of" in line for line in lines
    )
    assert any(
        "campaigns/norms.toml:9: `budget.wall_time` must be seconds or a duration" in line
        for line in lines
    )
    assert "did you mean `max_time`?" in error.hint


def test_toml_syntax_errors_name_the_line(tmp_path: Path) -> None:
    error = _error(_project(tmp_path, "[select]\nkernels = [\n"))
    assert str(error).startswith("campaigns/norms.toml:")
    assert "invalid TOML" in str(error)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[variants.'a b']\n", "has a variant named `a b`"),
        ("[machines.'x/y']\n", "has a machine named `x/y`"),
        ("[perturb.XLA_FLAGS]\n", "lists no values"),
        ("[perturb.'1BAD']\nx = '1'\n", "not a usable environment variable"),
        ("[variants.a]\nenv = { 'A=B' = 'c' }\n", "not a usable environment variable"),
        ("[machines.m]\nextra_args = ['qos=high']\n", "one srun flag"),
        ("[compare]\nbaseline = 'hot'\n[variants.cold]\n", "is not a variant"),
    ],
)
def test_bad_names_and_values_are_refused(tmp_path: Path, text: str, says: str) -> None:
    error = _error(_project(tmp_path, text))
    assert says in str(error)
    assert str(error).startswith("campaigns/norms.toml")


def test_a_campaign_inside_tile_toml(tmp_path: Path) -> None:
    toml = (
        "\n[campaigns.quick.select]\nkernels = ['fx/*']\n[campaigns.quick.budget]\nmax_cases = 0\n"
    )
    root = _project(tmp_path, None, toml)
    error = _error(root, "quick")
    assert str(error).startswith("tile.toml:7: `budget.max_cases` must be >= 1")
    # A broken campaign breaks `tile campaign`, not the configuration every command loads.
    assert load_config(cwd=root, environ={}).config.project.paths == ["kernels"]


def test_unknown_and_doubly_defined_campaigns(tmp_path: Path) -> None:
    root = _project(tmp_path, GOOD, "\n[campaigns.inline]\ndescription = 'x'\n")
    resolved = load_config(cwd=root, environ={})
    assert campaign_names(resolved) == {
        "norms": "campaigns/norms.toml",
        "inline": "tile.toml [campaigns.inline]",
    }
    error = _error(root, "nrms")
    assert "no campaign `nrms`" in str(error)
    assert "`norms`, `inline`" in str(error)
    (root / "campaigns" / "inline.toml").write_text("")
    assert "defined twice" in str(_error(root, "inline"))
    assert "not a campaign name" in str(_error(root, "../x"))


def test_campaigns_cannot_come_from_the_environment_or_flags(tmp_path: Path) -> None:
    root = _project(tmp_path, GOOD)
    with pytest.raises(ConfigError, match="cannot be set from the environment"):
        load_config(cwd=root, environ={"TILE_CAMPAIGNS_X": "1"})
    with pytest.raises(ConfigError, match="campaigns cannot be overridden"):
        load_config(cwd=root, environ={}, overrides={"campaigns.x.description": "y"})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("20m", 1200.0), ("1h30m", 5400.0), ("2h 5m 10s", 7510.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5 minutes", "1d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)
