"""tile_artifacts' public surface: a top level for run directories and three namespaces
(`cache`, `compare`, `campaign`, `check`, `kernels`, `ops`), each name in exactly one place."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest

import tile_artifacts as ta

NAMESPACES = ("cache", "compare", "campaign", "check", "kernels", "ops")


@pytest.mark.parametrize("name", ["tile_artifacts", *(f"tile_artifacts.{n}" for n in NAMESPACES)])
def test_every_name_in_all_imports(name: str) -> None:
    module = importlib.import_module(name)
    exported: list[str] = module.__all__
    assert len(exported) == len(set(exported))
    missing = [public for public in exported if not hasattr(module, public)]
    assert missing == [], f"{name}.__all__ names what it does not hold: {missing}"


def test_the_namespaces_are_attributes_of_the_package() -> None:
    for name in NAMESPACES:
        namespace = getattr(ta, name)
        assert isinstance(namespace, ModuleType) and name in ta.__all__
        assert namespace is importlib.import_module(f"tile_artifacts.{name}")


def test_a_moved_name_lives_in_its_namespace_only() -> None:
    homes: dict[str, str] = {}
    for name in NAMESPACES:
        for public in importlib.import_module(f"tile_artifacts.{name}").__all__:
            assert public not in homes, f"{public} is in both {homes.get(public)} and {name}"
            homes[public] = name
    on_top = sorted(n for n in homes if hasattr(ta, n) or n in ta.__all__)
    assert on_top == [], f"moved to a namespace, still on the top level: {on_top}"


def test_the_top_level_keeps_what_run_directories_need() -> None:
    for name in ("Report", "Manifest", "ArtifactWriter", "read_report", "ArtifactError",
                 "SCHEMA_VERSION", "new_run_id", "RUN_LAYOUT"):  # fmt: skip
        assert name in ta.__all__
    assert len(ta.__all__) < 110  # issue 32: it was 173 names before the namespaces


def test_the_consoles_redactor_does_not_import_the_models() -> None:
    """`Redactor` is all the CLI's console needs (every command): it must not pull in the
    pydantic models; a namespace is still there when asked for (tests/test_lazy_packages.py
    checks every name)."""
    code = (
        "import sys, tile_artifacts as ta; ta.Redactor; "
        "print('tile_artifacts._models' in sys.modules, ta.compare.__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["False", "tile_artifacts.compare"]
