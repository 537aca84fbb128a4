"""The layered loader: each layer, each origin, precedence, discovery and error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tile_config import CompareConfig, ConfigError, Origin, TileConfig, flatten, load_config

SHA = "ab" * 32


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error(cwd: Path, **kwargs: Any) -> ConfigError:
    kwargs.setdefault("environ", {})
    with pytest.raises(ConfigError) as info:
        load_config(cwd=cwd, **kwargs)
    assert info.value.hint, "every ConfigError says what to do next"
    return info.value


# --- defaults ---------------------------------------------------------------------------------


def test_defaults_without_any_file(tmp_path: Path) -> None:
    r = load_config(cwd=tmp_path, environ={})
    assert r.config == TileConfig()
    assert r.config.bench.max_runs == 1000
    assert r.config.output.dir == ".tile/runs"
    assert r.config_file is None
    assert r.project_root is None
    assert r.raw_text is None
    assert r.profile is None
    assert set(r.origins) == set(flatten(r.config))
    assert {o.kind for o in r.origins.values()} == {"default"}
    assert r.origins["bench.max_runs"] == Origin("default", "default")
    # With no project, relative paths hang off the working directory.
    assert r.resolve_path("kernels") == tmp_path.resolve() / "kernels"


def test_flatten_expands_tables_and_leaves_out_profiles() -> None:
    cfg = TileConfig.model_validate(
        {
            "runner": {"env": {"XLA_FLAGS": "--x"}},
            "profiles": {"ci": {"bench": {"max_runs": 5}}},
        }
    )
    flat = flatten(cfg)
    assert flat["runner.env.XLA_FLAGS"] == "--x"
    assert flat["test.tolerances"] == {}
    assert flat["project.modules"] == []
    assert not any(key.startswith("profiles") for key in flat)


# --- file layer -------------------------------------------------------------------------------


def test_tile_toml_values_and_line_origins(tmp_path: Path) -> None:
    text = (
        "# tile settings\n"
        "[project]\n"
        'modules = ["mylib.kernels"]\n'
        "\n"
        "[bench]\n"
        "max_runs = 50\n"
        "cold = true\n"
        "min_time = 1  # an integer is a fine float\n"
        "\n"
        "[runner.env]\n"
        'XLA_FLAGS = "--xla_dump_to=/tmp/x"\n'
    )
    write(tmp_path / "tile.toml", text)
    r = load_config(cwd=tmp_path, environ={})
    assert r.config.bench.max_runs == 50
    assert r.config.bench.cold is True
    assert r.config.bench.min_time == 1.0
    assert r.config.project.modules == ["mylib.kernels"]
    assert r.origins["bench.max_runs"] == Origin("file", "tile.toml:6")
    assert r.origins["bench.cold"] == Origin("file", "tile.toml:7")
    assert r.origins["project.modules"] == Origin("file", "tile.toml:3")
    assert r.origins["runner.env.XLA_FLAGS"] == Origin("file", "tile.toml:11")
    assert r.origins["bench.min_runs"].kind == "default"
    assert r.config_file == tmp_path.resolve() / "tile.toml"
    assert r.project_root == tmp_path.resolve()
    assert r.raw_text == text


def test_pyproject_tool_tile(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "mylib"\n\n'
        '[tool.tile.bench]\nmax_runs = 77\n\n[tool.tile.output]\ndir = "out"\n',
    )
    r = load_config(cwd=tmp_path, environ={})
    assert r.config.bench.max_runs == 77
    assert r.origins["bench.max_runs"] == Origin("file", "pyproject.toml:5")
    assert r.origins["output.dir"] == Origin("file", "pyproject.toml:8")
    assert r.config_file == tmp_path.resolve() / "pyproject.toml"
    assert r.resolve_path(r.config.output.dir) == tmp_path.resolve() / "out"


def test_tile_toml_wins_over_pyproject_in_the_same_directory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.tile.bench]\nmax_runs = 11\n")
    write(tmp_path / "tile.toml", "[bench]\nmax_runs = 12\n")
    r = load_config(cwd=tmp_path, environ={})
    assert r.config.bench.max_runs == 12
    assert r.config_file == tmp_path.resolve() / "tile.toml"


def test_walks_up_from_a_nested_directory(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", '[bench]\nmax_runs = 42\n[project]\npaths = ["kernels"]\n')
    # A pyproject.toml without [tool.tile] on the way up is not a tile config.
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')
    nested = tmp_path / "pkg" / "src" / "deep"
    nested.mkdir(parents=True)
    r = load_config(cwd=nested, environ={})
    assert r.config.bench.max_runs == 42
    assert r.config_file == tmp_path.resolve() / "tile.toml"
    assert r.project_root == tmp_path.resolve()
    assert r.origins["bench.max_runs"] == Origin("file", f"{tmp_path.resolve() / 'tile.toml'}:2")
    assert r.resolve_path(r.config.project.paths[0]) == tmp_path.resolve() / "kernels"


def test_nearest_pyproject_with_tool_tile_beats_a_farther_tile_toml(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[bench]\nmax_runs = 11\n")
    write(tmp_path / "sub" / "pyproject.toml", "[tool.tile.bench]\nmax_runs = 12\n")
    r = load_config(cwd=tmp_path / "sub", environ={})
    assert r.config.bench.max_runs == 12


def test_explicit_config_file(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[bench]\nmax_runs = 11\n")
    write(tmp_path / "conf" / "ci.toml", "[bench]\nmax_runs = 19\n")
    r = load_config(cwd=tmp_path, environ={}, config_file=Path("conf/ci.toml"))
    assert r.config.bench.max_runs == 19
    assert r.origins["bench.max_runs"] == Origin("file", "conf/ci.toml:2")
    assert r.project_root == tmp_path.resolve() / "conf"
    e = error(tmp_path, config_file=Path("missing.toml"))
    assert "missing.toml" in str(e)
    assert "not found" in str(e)


def test_explicit_pyproject_without_tool_tile_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    e = error(tmp_path, config_file=Path("pyproject.toml"))
    assert "[tool.tile]" in str(e)


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[bench]\nmax_runs = 5\n\n\n\n\nmin_runs = = 3\n")
    e = error(tmp_path)
    assert str(e).startswith("tile.toml:7: invalid TOML")
    assert "line 7" in e.hint


def test_broken_pyproject_that_mentions_tool_tile_is_reported(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.tile.bench]\nmax_runs = \n")
    e = error(tmp_path)
    assert str(e).startswith("pyproject.toml:2: invalid TOML")


def test_unknown_key_in_file_names_key_line_and_suggests(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[bench]\nmax_runs = 5\nmin_runz = 3\n")
    e = error(tmp_path)
    assert str(e) == "tile.toml:3: unknown key `bench.min_runz`"
    assert "did you mean `min_runs`?" in e.hint


def test_unknown_section_in_file(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[benchmark]\nmax_runs = 5\n")
    e = error(tmp_path)
    assert "tile.toml:1: unknown key `benchmark`" in str(e)
    assert "did you mean `bench`?" in e.hint


def test_file_booleans_are_strict(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", '[bench]\ncold = "false"\n')
    e = error(tmp_path)
    assert (
        str(e)
        == "tile.toml:2: `bench.cold` expected a boolean (true or false), got 'false' (string)"
    )


def test_every_problem_gets_its_own_line(tmp_path: Path) -> None:
    write(
        tmp_path / "tile.toml",
        '[bench]\nmax_runs = "many"\ntimer = "fast"\n[test]\nseed = -1\n[runner]\nenv = {A = 1}\n',
    )
    e = error(tmp_path)
    assert e.problems == (
        "tile.toml:2: `bench.max_runs` expected an integer, got 'many' (string)",
        "tile.toml:3: `bench.timer` must be one of 'auto', 'cupti', 'wall' or 'batched', "
        "got 'fast' (string)",
        "tile.toml:5: `test.seed` must be >= 0, got -1 (integer)",
        "tile.toml:7: `runner.env.A` expected a string, got 1 (integer)",
    )
    assert str(e) == "\n".join(e.problems)


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        (
            "[bench]\nmin_runs = 20\nmax_runs = 10\n",
            "`bench.min_runs` = 20 must be <= `bench.max_runs` = 10",
        ),
        ("[bench]\ntarget_precision = 1.0\n", "`bench.target_precision` must be < 1"),
        ("[bench]\nmax_time = inf\n", "`bench.max_time` expected a finite number"),
        ("[bench]\nwarmup_runs = -1\n", "`bench.warmup_runs` must be >= 0"),
        ("[launcher]\nshards = 0\n", "`launcher.shards` must be >= 1"),
        ('[launcher]\ntime_limit = "soon"\n', "`launcher.time_limit` must be a SLURM time"),
        ("[output]\nkeep = 0\n", "`output.keep` must be >= 1"),
        ('[output]\ndir = ""\n', "`output.dir` expected a non-empty string"),
        ('[history]\nenabled = "false"\n', "`history.enabled` expected a boolean"),
        ('[history]\npath = ""\n', "`history.path` expected a non-empty string"),
        ("[history]\nenable = false\n", "unknown key `history.enable`"),
        ("[machine.peak_tflops]\nbfloat16 = 0\n", "`machine.peak_tflops.bfloat16` must be > 0"),
        ('[downloads.d]\nurl = "https://x.org/a"\nsha256 = "abc"\n', "must be 64 hexadecimal"),
        (f'[downloads.d]\nurl = "ftp://x.org/a"\nsha256 = "{SHA}"\n', "http:// or https://"),
        ('[downloads.d]\nurl = "https://x.org/a"\n', "missing required key `downloads.d.sha256`"),
        (
            f'[downloads.d]\nurl = "https://x.org/a"\nsha256 = "{SHA}"\nmembers = ["a"]\n',
            "`members` needs `archive`",
        ),
        (
            f'[downloads.d]\nurl = "https://x.org/a"\nsha256 = "{SHA}"\narchive = "zip"\n'
            'members = ["../etc/passwd"]\n',
            "relative paths without `..`",
        ),
    ],
)
def test_range_and_shape_checks(tmp_path: Path, toml: str, needle: str) -> None:
    write(tmp_path / "tile.toml", toml)
    e = error(tmp_path)
    assert needle in str(e)
    assert str(e).startswith("tile.toml:")


def test_download_entries_are_normalized(tmp_path: Path) -> None:
    write(
        tmp_path / "tile.toml",
        f'[downloads.weights]\nurl = "https://x.org/w.tar.gz"\nsha256 = "sha256:{SHA.upper()}"\n'
        'archive = "tar.gz"\nmembers = ["w/a.npy"]\n',
    )
    entry = load_config(cwd=tmp_path, environ={}).config.downloads["weights"]
    assert entry.sha256 == SHA
    assert entry.archive == "tar.gz"
    assert entry.members == ["w/a.npy"]


def test_models_are_frozen() -> None:
    cfg = TileConfig()
    with pytest.raises(ValueError, match="frozen"):
        cfg.bench.max_runs = 3


# --- profile layer ----------------------------------------------------------------------------

PROFILES = """\
[bench]
max_runs = 500
min_runs = 5

[runner.env]
A = "file"

[profiles.ci.bench]
max_runs = 50
cold = true

[profiles.ci.runner.env]
B = "profile"

[profiles.quick.bench]
max_runs = 7
"""


def test_profile_by_argument(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", PROFILES)
    r = load_config(cwd=tmp_path, environ={}, profile="ci")
    assert r.profile == "ci"
    assert r.config.bench.max_runs == 50
    assert r.config.bench.cold is True
    assert r.config.bench.min_runs == 5
    assert r.config.runner.env == {"A": "file", "B": "profile"}
    assert r.origins["bench.max_runs"] == Origin("profile", "profile ci (tile.toml:9)")
    assert r.origins["runner.env.B"] == Origin("profile", "profile ci (tile.toml:13)")
    assert r.origins["runner.env.A"] == Origin("file", "tile.toml:6")
    assert r.origins["bench.min_runs"] == Origin("file", "tile.toml:3")


def test_profile_by_environment_and_argument_wins(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", PROFILES)
    r = load_config(cwd=tmp_path, environ={"TILE_PROFILE": "quick"})
    assert r.profile == "quick"
    assert r.config.bench.max_runs == 7
    assert r.origins["bench.max_runs"].kind == "profile"
    r = load_config(cwd=tmp_path, environ={"TILE_PROFILE": "quick"}, profile="ci")
    assert r.config.bench.max_runs == 50


def test_unknown_profile_lists_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", PROFILES)
    e = error(tmp_path, profile="nightly")
    assert "unknown profile `nightly`" in str(e)
    assert "`ci`, `quick`" in str(e)
    e = error(tmp_path, environ={"TILE_PROFILE": "nightly"})
    assert "TILE_PROFILE=nightly" in str(e)


def test_unknown_profile_without_a_config_file(tmp_path: Path) -> None:
    e = error(tmp_path, profile="ci")
    assert "unknown profile `ci`" in str(e)
    assert "no tile.toml" in str(e)


def test_bad_unselected_profile_is_still_reported(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[profiles.ci.bench]\nmax_runz = 5\n")
    e = error(tmp_path)
    assert str(e) == "tile.toml:2: unknown key `profiles.ci.bench.max_runz`"


def test_profile_may_break_consistency_only_when_applied(tmp_path: Path) -> None:
    # The profile alone (max_runs = 5 < default min_runs 10) is fine until it is applied.
    write(tmp_path / "tile.toml", "[profiles.small.bench]\nmax_runs = 5\n")
    assert load_config(cwd=tmp_path, environ={}).config.bench.max_runs == 1000
    e = error(tmp_path, profile="small")
    assert str(e).startswith("profile small (tile.toml:2): `bench.min_runs` = 10 must be <=")


def test_profile_replaces_a_download_entry_whole(tmp_path: Path) -> None:
    write(
        tmp_path / "tile.toml",
        f'[downloads.d]\nurl = "https://a.org/d.zip"\nsha256 = "{SHA}"\narchive = "zip"\n'
        f'members = ["x"]\n\n[profiles.mirror.downloads.d]\nurl = "https://b.org/d.bin"\n'
        f'sha256 = "{"cd" * 32}"\n',
    )
    r = load_config(cwd=tmp_path, environ={}, profile="mirror")
    entry = r.config.downloads["d"]
    assert (entry.url, entry.archive, entry.members) == ("https://b.org/d.bin", None, None)
    assert r.origins["downloads.d.archive"].kind == "profile"


# --- env layer --------------------------------------------------------------------------------


def test_env_values_are_parsed_by_type(tmp_path: Path) -> None:
    r = load_config(
        cwd=tmp_path,
        environ={
            "TILE_BENCH_MAX_RUNS": "50",
            "TILE_RUNNER_CASE_TIMEOUT": "10",
            "TILE_BENCH_COLD": "false",
            "TILE_RUNNER_ISOLATE": "yes",
            "TILE_BENCH_TIMER": "wall",
            "TILE_PROJECT_MODULES": "a.b, c.d,,",
            "TILE_RUNNER_TIMEOUT": "none",
            "TILE_RUNNER_PYTHON": "/usr/bin/python3",
            "TILE_MACHINE_L2_BYTES": "52428800",
        },
    )
    cfg = r.config
    assert cfg.bench.max_runs == 50
    assert cfg.runner.case_timeout == 10.0
    assert cfg.bench.cold is False
    assert cfg.runner.isolate is True
    assert cfg.bench.timer == "wall"
    assert cfg.project.modules == ["a.b", "c.d"]
    assert cfg.runner.timeout is None
    assert cfg.runner.python == "/usr/bin/python3"
    assert cfg.machine.l2_bytes == 52428800
    assert r.origins["bench.max_runs"] == Origin("env", "env TILE_BENCH_MAX_RUNS")
    assert r.origins["project.modules"] == Origin("env", "env TILE_PROJECT_MODULES")


@pytest.mark.parametrize("word", ["false", "0", "no", "off", "FALSE", " No ", "Off"])
def test_env_false_words(tmp_path: Path, word: str) -> None:
    write(tmp_path / "tile.toml", "[bench]\ncold = true\n")
    r = load_config(cwd=tmp_path, environ={"TILE_BENCH_COLD": word})
    assert r.config.bench.cold is False


@pytest.mark.parametrize("word", ["true", "1", "yes", "on", "TRUE", "Yes"])
def test_env_true_words(tmp_path: Path, word: str) -> None:
    assert load_config(cwd=tmp_path, environ={"TILE_BENCH_COLD": word}).config.bench.cold is True


@pytest.mark.parametrize("word", ["maybe", "", "2", "t", "y", "nope"])
def test_env_other_words_are_not_booleans(tmp_path: Path, word: str) -> None:
    e = error(tmp_path, environ={"TILE_BENCH_COLD": word})
    assert str(e).startswith("env TILE_BENCH_COLD: `bench.cold` expected a boolean")
    assert "TILE_BENCH_COLD" in e.hint


def test_env_bad_integer_names_the_variable(tmp_path: Path) -> None:
    e = error(tmp_path, environ={"TILE_BENCH_MAX_RUNS": "abc"})
    assert str(e) == "env TILE_BENCH_MAX_RUNS: `bench.max_runs` expected an integer, got 'abc'"
    assert e.hint == "fix or unset `TILE_BENCH_MAX_RUNS`"


def test_env_out_of_range_names_the_variable(tmp_path: Path) -> None:
    e = error(tmp_path, environ={"TILE_BENCH_MAX_RUNS": "0"})
    assert str(e) == "env TILE_BENCH_MAX_RUNS: `bench.max_runs` must be >= 1, got 0 (integer)"


def test_env_unknown_key_in_known_section(tmp_path: Path) -> None:
    e = error(tmp_path, environ={"TILE_BENCH_RUNZ": "5"})
    assert str(e) == "env TILE_BENCH_RUNZ: unknown key `bench.runz`"
    assert "TILE_BENCH_RUNZ" in e.hint


def test_env_tables_are_not_settable(tmp_path: Path) -> None:
    for name in (
        "TILE_RUNNER_ENV",
        "TILE_RUNNER_ENV_FOO",
        "TILE_TEST_TOLERANCES",
        "TILE_DOWNLOADS_X",
    ):
        e = error(tmp_path, environ={name: "1"})
        assert name in str(e)
        assert "not settable from the environment" in str(e) or "cannot be set" in str(e)


def test_env_outside_config_sections_is_ignored(tmp_path: Path) -> None:
    r = load_config(
        cwd=tmp_path,
        environ={"TILE_OFFLINE": "1", "TILE_CACHE_DIR": "/c", "TILE_WHATEVER_X": "y", "TILE_": ""},
    )
    assert r.config == TileConfig()


# --- overrides layer --------------------------------------------------------------------------


def test_overrides_take_typed_values_and_strings(tmp_path: Path) -> None:
    r = load_config(
        cwd=tmp_path,
        environ={},
        overrides={
            "bench.max_runs": 12,
            "bench.cold": "on",
            "bench.min_time": "0.5",
            "output.dir": tmp_path / "runs",
            "project.plugins": ("tile-std",),
            "test.tolerances.bfloat16": "0.02",
            "runner.env": {"X": "1"},
        },
    )
    cfg = r.config
    assert (cfg.bench.max_runs, cfg.bench.cold, cfg.bench.min_time) == (12, True, 0.5)
    assert cfg.output.dir == str(tmp_path / "runs")
    assert cfg.project.plugins == ["tile-std"]
    assert cfg.test.tolerances == {"bfloat16": 0.02}
    assert cfg.runner.env == {"X": "1"}
    assert r.origins["bench.max_runs"] == Origin("cli", "cli")
    assert r.origins["test.tolerances.bfloat16"] == Origin("cli", "cli")


def test_override_errors_name_the_key(tmp_path: Path) -> None:
    e = error(tmp_path, overrides={"bench.max_runz": 3, "bench.max_runs.x": 1, "profiles.ci": {}})
    assert "cli: unknown key `bench.max_runz`" in str(e)
    assert "cli: unknown key `bench.max_runs.x`" in str(e)
    assert "profiles cannot be overridden" in str(e)
    assert "did you mean `max_runs`?" in e.hint
    e = error(tmp_path, overrides={"bench.max_runs": True})
    assert str(e) == "cli: `bench.max_runs` expected an integer, got true (boolean)"
    e = error(tmp_path, overrides={"bench.max_runs": "lots"})
    assert str(e) == "cli: `bench.max_runs` expected an integer, got 'lots' (string)"


# --- precedence -------------------------------------------------------------------------------


def test_precedence_default_file_profile_env_cli(tmp_path: Path) -> None:
    write(
        tmp_path / "tile.toml",
        "[bench]\n"
        "warmup_runs = 1\n"  # file only
        "min_runs = 2\n"  # file < profile
        "max_runs = 300\n"  # file < profile < env
        "batch = 4\n"  # file < profile < env < cli
        "\n"
        "[profiles.p.bench]\n"
        "min_runs = 3\n"
        "max_runs = 400\n"
        "batch = 5\n",
    )
    r = load_config(
        cwd=tmp_path,
        profile="p",
        environ={"TILE_BENCH_MAX_RUNS": "500", "TILE_BENCH_BATCH": "6"},
        overrides={"bench.batch": 7},
    )
    b = r.config.bench
    assert (b.target_precision, b.warmup_runs, b.min_runs, b.max_runs, b.batch) == (
        0.0,
        1,
        3,
        500,
        7,
    )
    assert r.origins["bench.target_precision"].kind == "default"
    assert r.origins["bench.warmup_runs"] == Origin("file", "tile.toml:2")
    assert r.origins["bench.min_runs"] == Origin("profile", "profile p (tile.toml:8)")
    assert r.origins["bench.max_runs"] == Origin("env", "env TILE_BENCH_MAX_RUNS")
    assert r.origins["bench.batch"] == Origin("cli", "cli")


def test_bad_file_value_is_reported_even_when_overridden(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", '[bench]\nmax_runs = "x"\n')
    e = error(tmp_path, environ={"TILE_BENCH_MAX_RUNS": "5"})
    assert str(e).startswith("tile.toml:2:")


def test_cross_field_error_blames_the_higher_layer(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[bench]\nmin_runs = 5\n")
    e = error(tmp_path, environ={"TILE_BENCH_MAX_RUNS": "3"})
    assert str(e) == (
        "env TILE_BENCH_MAX_RUNS: `bench.min_runs` = 5 must be <= `bench.max_runs` = 3 "
        "(`bench.min_runs` from tile.toml:2)"
    )
    assert e.hint == "fix or unset `TILE_BENCH_MAX_RUNS`"


def test_line_numbers_of_dotted_keys_inline_tables_and_multiline_strings(tmp_path: Path) -> None:
    write(
        tmp_path / "tile.toml",
        "bench.max_runs = 20\n"
        "[runner]\n"
        'python = """\n'
        "case_timeout = 3\n"  # text inside the string, not a key
        '"""\n'
        'env = { A = "1" }\n'
        '"case_timeout" = 9\n',
    )
    r = load_config(cwd=tmp_path, environ={})
    assert r.config.runner.python == "case_timeout = 3\n"
    assert r.origins["bench.max_runs"].detail == "tile.toml:1"
    assert r.origins["runner.python"].detail == "tile.toml:3"
    assert r.origins["runner.env.A"].detail == "tile.toml:6"
    assert r.origins["runner.case_timeout"].detail == "tile.toml:7"


def test_readme_example_loads(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    write(tmp_path / "tile.toml", example)
    r = load_config(cwd=tmp_path, environ={}, profile="ci", overrides={"bench.cold": True})
    assert r.config.bench.max_runs == 50
    assert r.config.bench.cold is True
    assert r.config.downloads["weights"].archive == "tar.gz"
    assert r.origins["bench.cold"] == Origin("cli", "cli")
    assert f"# {r.origins['bench.max_runs']}" in readme


# --- [compare] --------------------------------------------------------------------------------


def test_compare_section_from_file_env_and_cli(tmp_path: Path) -> None:
    assert load_config(cwd=tmp_path, environ={}).config.compare == CompareConfig(
        noise_floor=2.0, alpha=0.05, fail_on_inconclusive=False, basis="auto"
    )
    write(
        tmp_path / "tile.toml",
        '[compare]\nnoise_floor = 3.5\nalpha = 0.01\nfail_on_inconclusive = true\nbasis = "absolute"\n',
    )
    r = load_config(cwd=tmp_path, environ={})
    assert r.config.compare == CompareConfig(
        noise_floor=3.5, alpha=0.01, fail_on_inconclusive=True, basis="absolute"
    )
    assert r.origins["compare.basis"].detail == "tile.toml:5"
    env = {"TILE_COMPARE_BASIS": "relative", "TILE_COMPARE_FAIL_ON_INCONCLUSIVE": "no"}
    r = load_config(cwd=tmp_path, environ=env, overrides={"compare.noise_floor": 1.0})
    assert r.config.compare.basis == "relative"
    assert r.config.compare.fail_on_inconclusive is False
    assert r.config.compare.noise_floor == 1.0 and r.config.compare.alpha == 0.01
    assert r.origins["compare.basis"].detail == "env TILE_COMPARE_BASIS"
    assert r.origins["compare.noise_floor"].kind == "cli"


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ("[compare]\nnoise_floor = -1.0\n", "`compare.noise_floor` must be >= 0"),
        ("[compare]\nalpha = 1.0\n", "`compare.alpha` must be < 1"),
        ("[compare]\nalpha = 0.0\n", "`compare.alpha` must be > 0"),
        ('[compare]\nbasis = "ratio"\n', "`compare.basis`"),
        ('[compare]\nfail_on_inconclusive = "yes"\n', "`compare.fail_on_inconclusive`"),
        ("[compare]\nnoise = 2.0\n", "unknown key `compare.noise`"),
    ],
)
def test_compare_section_checks_name_the_key(tmp_path: Path, toml: str, needle: str) -> None:
    write(tmp_path / "tile.toml", toml)
    e = error(tmp_path)
    assert needle in str(e) and str(e).startswith("tile.toml:2")


def test_compare_env_errors_name_the_variable(tmp_path: Path) -> None:
    e = error(tmp_path, environ={"TILE_COMPARE_BASIS": "ratio"})
    assert str(e).startswith("env TILE_COMPARE_BASIS: `compare.basis`")
    assert "absolute" in str(e) and "relative" in str(e)
    e = error(tmp_path, environ={"TILE_COMPARE_BASES": "auto"})
    assert str(e) == "env TILE_COMPARE_BASES: unknown key `compare.bases`"


def test_a_profile_may_set_compare(tmp_path: Path) -> None:
    write(tmp_path / "tile.toml", "[profiles.ci.compare]\nfail_on_inconclusive = true\n")
    assert load_config(cwd=tmp_path, environ={}).config.compare.fail_on_inconclusive is False
    r = load_config(cwd=tmp_path, environ={}, profile="ci")
    assert r.config.compare.fail_on_inconclusive is True


def test_runner_pin_cpu_from_file_and_env(tmp_path: Path) -> None:
    assert load_config(cwd=tmp_path, environ={}).config.runner.pin_cpu is False
    write(tmp_path / "tile.toml", "[runner]\npin_cpu = true\n")
    r = load_config(cwd=tmp_path, environ={})
    assert r.config.runner.pin_cpu is True
    assert r.origins["runner.pin_cpu"].detail == "tile.toml:2"
    assert (
        load_config(cwd=tmp_path, environ={"TILE_RUNNER_PIN_CPU": "0"}).config.runner.pin_cpu
        is False
    )
    e = error(tmp_path, environ={"TILE_RUNNER_PIN_CPU": "sometimes"})
    assert str(e).startswith("env TILE_RUNNER_PIN_CPU: `runner.pin_cpu`")


def test_bench_rounds_default_file_env_and_range(tmp_path: Path) -> None:
    assert load_config(cwd=tmp_path, environ={}).config.bench.rounds == 1
    write(tmp_path / "tile.toml", "[bench]\nrounds = 8\n")
    assert load_config(cwd=tmp_path, environ={}).config.bench.rounds == 8
    assert load_config(cwd=tmp_path, environ={"TILE_BENCH_ROUNDS": "3"}).config.bench.rounds == 3
    e = error(tmp_path, environ={"TILE_BENCH_ROUNDS": "0"})
    assert str(e).startswith("env TILE_BENCH_ROUNDS: `bench.rounds`")
