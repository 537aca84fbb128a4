"""Property tests: whatever the file, the environment or the flags hold, load_config either
returns a config or raises ConfigError, never anything else."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tile_config import SECTIONS, ConfigError, ResolvedConfig, TileConfig, flatten, load_config

FIELDS = {
    name: list(getattr(TileConfig.model_fields[name].annotation, "model_fields", {}))
    for name in SECTIONS
}
KNOWN_KEYS = sorted(
    {key for keys in FIELDS.values() for key in keys} | {"url", "sha256", "archive"}
)
ENV_NAMES = [f"TILE_{s.upper()}_{k.upper()}" for s, keys in FIELDS.items() for k in keys] + [
    "TILE_PROFILE",
    "TILE_OFFLINE",
    "TILE_BENCH_RUNZ",
    "TILE_DOWNLOADS_X",
    "TILE_RUNNER_ENV_X",
]
DOTTED = [f"{s}.{k}" for s, keys in FIELDS.items() for k in keys] + [
    "bench",
    "runner.env.X",
    "nope",
]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["auto", "wall", "local", "slurm", "zip", "https://x.org/f", "ab" * 32]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(KNOWN_KEYS) | st.text(min_size=1, max_size=10)
tables = st.dictionaries(keys, values, max_size=8)
sections = st.sampled_from(SECTIONS) | st.text(min_size=1, max_size=10)
documents = st.dictionaries(sections, tables | values, max_size=6)
profiles = st.dictionaries(
    st.sampled_from(["ci", "quick"]),
    st.dictionaries(st.sampled_from(SECTIONS), tables, max_size=3),
    max_size=2,
)


def toml_float(value: float) -> str:
    """A float as TOML writes it, the non-finite ones included."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def toml_value(value: Any) -> str:
    """A tiny TOML writer: everything TOML can say inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return toml_float(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in cast("list[Any]", value)) + "]"
    assert isinstance(value, dict)
    table = cast("dict[str, Any]", value)
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()) + "}"


def to_toml(doc: Mapping[str, Any], prefix: str = "") -> str:
    """Top-level scalars first, then one `[header]` per table (under `prefix`, if given)."""
    lines = [
        f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)
    ]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{prefix}{json.dumps(name)}]")
            entries = cast("dict[str, Any]", table)
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in entries.items()]
    return "\n".join(lines) + "\n"


def load_or_config_error(**kwargs: Any) -> ResolvedConfig | ConfigError:
    try:
        resolved = load_config(**kwargs)
    except ConfigError as exc:
        assert str(exc), "a ConfigError has a message"
        assert exc.hint, "a ConfigError has a hint"
        return exc
    assert isinstance(resolved.config, TileConfig)
    assert set(resolved.origins) == set(flatten(resolved.config))
    return resolved


def run_in(
    text: str | bytes, name: str = "tile.toml", **kwargs: Any
) -> ResolvedConfig | ConfigError:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return load_or_config_error(cwd=Path(tmp), environ=kwargs.pop("environ", {}), **kwargs)


@FUZZ
@given(documents, profiles, st.sampled_from([None, "ci", "quick"]))
def test_arbitrary_toml_documents(
    doc: dict[str, Any], profs: dict[str, Any], profile: str | None
) -> None:
    text = to_toml(doc)
    for name, body in profs.items():
        text += to_toml(body, prefix=f"profiles.{name}.")
    result = run_in(text, profile=profile)
    if isinstance(result, ResolvedConfig):
        assert result.raw_text == text
        assert result.profile == profile


@FUZZ
@given(documents)
def test_arbitrary_pyproject_tool_tile(doc: dict[str, Any]) -> None:
    run_in("[tool.tile]\n" + to_toml(doc, prefix="tool.tile."), name="pyproject.toml")


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text(text: str) -> None:
    run_in(text)
    run_in(text, name="pyproject.toml")


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes(data: bytes) -> None:
    run_in(data)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(ENV_NAMES) | st.text(max_size=20), st.text(max_size=20), max_size=8
    )
)
def test_arbitrary_environment(environ: dict[str, str]) -> None:
    run_in("[profiles.ci.bench]\nmax_runs = 20\n", environ=environ)


@FUZZ
@given(st.dictionaries(st.sampled_from(ENV_NAMES), st.text(max_size=20), min_size=1, max_size=3))
def test_every_known_variable_with_arbitrary_values(environ: dict[str, str]) -> None:
    result = run_in("", environ=environ)
    if isinstance(result, ConfigError):
        # The error names one of the variables that was set.
        assert any(name in str(result) for name in environ) or "TILE_PROFILE" in environ


@FUZZ
@given(
    st.dictionaries(st.sampled_from(DOTTED) | st.text(max_size=12), values | st.none(), max_size=5)
)
def test_arbitrary_overrides(overrides: dict[str, object]) -> None:
    run_in("", overrides=overrides)


valid_bench = st.fixed_dictionaries(
    {},
    optional={
        "warmup_runs": st.integers(0, 100),
        "min_runs": st.integers(1, 10),
        "max_runs": st.integers(10, 10**6),
        "min_time": st.floats(0, 1),
        "max_time": st.floats(1, 100),
        "target_precision": st.floats(1e-6, 0.99),
        "timer": st.sampled_from(["auto", "cupti", "wall", "batched"]),
        "cold": st.booleans(),
        "batch": st.integers(1, 100),
    },
)


@FUZZ
@given(valid_bench)
def test_valid_settings_round_trip_through_file_and_env(bench: dict[str, Any]) -> None:
    from_file = run_in(to_toml({"bench": bench}))
    assert isinstance(from_file, ResolvedConfig)
    environ = {
        f"TILE_BENCH_{k.upper()}": (
            str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)
        )
        for k, v in bench.items()
    }
    from_env = run_in("", environ=environ)
    assert isinstance(from_env, ResolvedConfig)
    for key, value in bench.items():
        assert getattr(from_file.config.bench, key) == value
        assert from_file.origins[f"bench.{key}"].kind == "file"
        assert from_env.origins[f"bench.{key}"].kind == "env"
    assert from_env.config == from_file.config
