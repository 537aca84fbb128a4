"""Every flag is declared once in `Flags`: each sets a real configuration key or is read by a
command, each is offered by some command, and commands get what typer parsed as one `Flags`."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel
from typer.testing import CliRunner

import tile_config as tc
from tile_cli._app import app
from tile_cli.commands import _options as options
from tile_cli.commands._options import Flags

_DECLARED = {f.name for f in dataclasses.fields(Flags)}


def _config_field(key: str) -> Any:
    """The annotation of `section.key` in TileConfig; KeyError when there is no such key."""
    section, name = key.split(".")
    model = tc.TileConfig.model_fields[section].annotation
    assert isinstance(model, type) and issubclass(model, BaseModel), key
    return model.model_fields[name].annotation


def _read_by_commands() -> set[str]:
    """Every `flags.NAME` the modules of `tile_cli.commands` read."""
    read: set[str] = set()
    for path in Path(options.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "flags"
            ):
                read.add(node.attr)
    return read


def _offered(tree: typer.Typer) -> set[str]:
    """The parameter names of every command of `tree`, in its groups too."""
    names: set[str] = set()
    for command in tree.registered_commands:
        assert command.callback is not None
        names |= set(inspect.signature(command.callback).parameters)
    for group in tree.registered_groups:
        assert group.typer_instance is not None
        names |= _offered(group.typer_instance)
    return names


@pytest.mark.parametrize(("flag", "key"), sorted(options.CONFIG_KEYS.items()))
def test_every_flag_to_config_entry_names_a_real_key_and_a_declared_flag(
    flag: str, key: str
) -> None:
    assert flag in _DECLARED
    _config_field(key)  # raises KeyError for a misspelt key


def test_every_flag_sets_configuration_or_is_read_by_a_command() -> None:
    read = _read_by_commands()
    assert read, "no `flags.NAME` found: has the command's parameter been renamed?"
    unused = _DECLARED - set(options.CONFIG_KEYS) - read
    assert not unused, f"flags that no command reads and CONFIG_KEYS does not name: {unused}"
    assert read <= _DECLARED | {"__class__"}, read - _DECLARED


def test_every_flag_is_offered_by_some_command() -> None:
    unoffered = _DECLARED - _offered(app)
    assert not unoffered, f"flags declared in Flags but in no command's groups: {unoffered}"


def test_a_group_naming_an_undeclared_flag_is_refused() -> None:
    with pytest.raises(TypeError, match="max_tiem"):
        options._group("max_time", "max_tiem")  # pyright: ignore[reportPrivateUsage]


def test_a_command_gets_its_flags_as_one_flags_and_its_own_parameters_apart() -> None:
    got: list[tuple[Flags, int]] = []

    @options.with_flags(options.PROFILE, options.SAMPLING, options.TRACEBACKS)
    def probe(flags: Flags, times: int = 1) -> None:
        got.append((flags, times))

    probe_app = typer.Typer()
    probe_app.command()(probe)
    probe_app.command("other")(lambda: None)  # two commands, so `probe` is a subcommand
    args = ["probe", "--profile", "ci", "--timer", "wall", "--warm", "-vv", "--times", "3"]
    result = CliRunner().invoke(probe_app, args)
    assert result.exit_code == 0, result.output
    assert got == [(Flags(profile="ci", timer="wall", cold=False, verbose=2), 3)]


def test_config_overrides_turn_given_flags_into_keys_and_leave_the_rest() -> None:
    given = Flags(timer="wall", max_time=0.5, isolate=None, settings=["bench.rounds=3"])
    assert options.config_overrides(given) == {
        "bench.rounds": "3",
        "bench.timer": "wall",
        "bench.max_time": 0.5,
    }
