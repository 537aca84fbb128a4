"""The lazy public surfaces (tile-harness, tile-artifacts: names imported on first use, PEP 562):
every name resolves, and the type checker sees what runs."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

LAZY = ["tile_harness", "tile_artifacts"]


def _type_checking_imports(module: str) -> dict[str, str]:
    """name -> defining module, from the `if TYPE_CHECKING:` block of a package's __init__."""
    init = importlib.import_module(module).__file__
    assert init is not None
    tree = ast.parse(Path(init).read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module is not None:
                    for alias in stmt.names:
                        home = stmt.module
                        found[alias.name] = home if home != module else f"{home}.{alias.name}"
    return found


@pytest.mark.parametrize("name", LAZY)
def test_every_public_name_resolves_to_its_home(name: str) -> None:
    package = importlib.import_module(name)
    # What the type checker is told (the TYPE_CHECKING imports) is what runs and what __all__ says.
    homes = _type_checking_imports(name)
    assert sorted(homes) == sorted(package.__all__)
    for public, home in homes.items():
        value = getattr(package, public)
        module = importlib.import_module(home)
        assert value is (module if home.endswith(f".{public}") else getattr(module, public))


@pytest.mark.parametrize("name", LAZY)
def test_unknown_name_is_an_attribute_error(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = package.no_such_name


@pytest.mark.parametrize("name", LAZY)
def test_importing_the_package_imports_no_module_of_it(name: str) -> None:
    code = (
        f"import sys, {name}; print(sorted(m for m in sys.modules if m.split('.')[0] == {name!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"[{name!r}]"
