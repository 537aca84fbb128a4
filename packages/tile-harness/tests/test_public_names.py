"""tile_harness's lazy public surface: every name resolves, and the type checker sees what runs."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest


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


def test_every_public_name_resolves_to_its_home() -> None:
    import tile_harness as package

    # What the type checker is told (the TYPE_CHECKING imports) is what runs and what __all__ says.
    homes = _type_checking_imports("tile_harness")
    assert sorted(homes) == sorted(package.__all__)
    for name, home in homes.items():
        value = getattr(package, name)
        module = importlib.import_module(home)
        assert value is (module if home.endswith(f".{name}") else getattr(module, name))


def test_unknown_name_is_an_attribute_error() -> None:
    import tile_harness

    with pytest.raises(AttributeError, match="no_such_name"):
        _ = tile_harness.no_such_name


def test_importing_the_package_imports_no_module_of_it() -> None:
    code = "import sys, tile_harness; print(sorted(m for m in sys.modules if m.startswith('tile_harness')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['tile_harness']"
