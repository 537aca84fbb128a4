"""Every import of every package is a declared dependency, and nothing imports in a circle.

The workspace is checked as it is; small packages written here show that each kind of problem
is found (so a green run means the checks looked, not that they cannot fail).
"""

from __future__ import annotations

from pathlib import Path

from dependency_check import (
    Package,
    cycles,
    import_problems,
    module_cycles,
    packages,
    private_imports,
    undeclared_imports,
    used_graph,
)


def test_the_workspace_imports_only_what_it_declares_and_has_no_cycle() -> None:
    pkgs = packages()
    assert {p.name for p in pkgs} >= {"tile-protocol", "tile-cli", "tile-runner", "tile-stats"}
    assert import_problems(pkgs) == []


def test_the_cli_never_imports_the_runner() -> None:
    # DESIGN: the CLI and the runner meet only through tile-protocol.
    graph = used_graph(packages())
    assert "tile-runner" not in graph["tile-cli"]
    assert graph["tile-protocol"] == set()


def _package(tmp: Path, name: str, requires: set[str], files: dict[str, str]) -> Package:
    module = name.replace("-", "_")
    source = tmp / name / "src" / module
    source.mkdir(parents=True)
    for filename, text in files.items():
        (source / filename).write_text(text)
    return Package(name, module, source, frozenset(requires))


def test_an_undeclared_import_is_found_wherever_it_hides(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        "tile-demo",
        {"tile-base", "msgspec"},
        {
            "__init__.py": "import os\nimport msgspec\nfrom tile_demo import _impl\n",
            "_impl.py": "def f():\n    import requests  # lazily, still a dependency\n",
            "_types.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from tile_other import Thing\n"
                "from tile_base import ok\n"
            ),
        },
    )
    siblings = [
        pkg,
        _package(tmp_path, "tile-base", set(), {"__init__.py": ""}),
        _package(tmp_path, "tile-other", set(), {"__init__.py": ""}),
    ]
    dists = {"msgspec": ["msgspec"], "requests": ["requests"]}
    assert undeclared_imports(siblings, dists) == [
        "tile-demo: tile_demo/_impl.py imports `requests` (from requests), not declared",
        "tile-demo: tile_demo/_types.py imports `tile_other` (from tile-other), not declared",
    ]


def test_another_package_s_private_module_is_found_however_it_is_imported(
    tmp_path: Path,
) -> None:
    base = _package(tmp_path, "tile-base", set(), {"__init__.py": "", "_impl.py": "X = 1\n"})
    user = _package(
        tmp_path,
        "tile-user",
        {"tile-base"},
        {
            "__init__.py": "from tile_base import X, __version__\nfrom tile_user import _own\n",
            "_own.py": "def f():\n    from tile_base._impl import X\n",
            "_two.py": "from tile_base import _impl\n",
        },
    )
    assert private_imports([base, user]) == [
        "tile-user: tile_user/_own.py imports `tile_base._impl.X`, private to `tile_base`",
        "tile-user: tile_user/_own.py imports `tile_base._impl`, private to `tile_base`",
        "tile-user: tile_user/_two.py imports `tile_base._impl`, private to `tile_base`",
    ]


def test_a_cycle_between_modules_is_found_through_lazy_imports(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        "tile-loop",
        set(),
        {
            "__init__.py": "from tile_loop._a import a\n",
            "_a.py": "from tile_loop._b import b\ndef a(): ...\n",
            "_b.py": "def b():\n    from tile_loop import _c\n",
            "_c.py": "from tile_loop._a import a\n",
            "_d.py": "from tile_loop._a import a\n",  # points into the loop, is not in it
        },
    )
    assert module_cycles(pkg) == ["tile_loop._a -> tile_loop._b -> tile_loop._c -> tile_loop._a"]


def test_every_knot_is_named_once_from_its_smallest_node() -> None:
    edges = {"b": ["c"], "c": ["b", "d"], "d": [], "a": ["a"]}
    assert cycles(edges) == ["a -> a", "b -> c -> b"]
    # A walk that meets one cycle first must not hide the other one it also reaches.
    edges = {"m": ["x", "n"], "n": ["m"], "x": ["y"], "y": ["x", "z"], "z": ["y"]}
    assert cycles(edges) == ["m -> n -> m", "x -> y -> x"]
