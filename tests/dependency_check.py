"""The dependency graph as the code has it, against the graph the pyprojects declare.

Every import in a package's source (at module level, inside functions and under
TYPE_CHECKING alike: each is a dependency of some use of the package) must name the standard
library, the package itself, or a distribution its pyproject declares; the declared graph
between packages and the import graph between the modules of each package must be acyclic.
`tests/release_check.py` and `tests/test_dependencies.py` run these checks.

Usage: `python tests/dependency_check.py` prints every problem, then the import graph between
packages (what the code uses), and exits 1 when there is a problem.
"""

from __future__ import annotations

import ast
import functools
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]

__all__ = [
    "Package",
    "cycles",
    "import_problems",
    "imports_of",
    "module_cycles",
    "packages",
    "undeclared_imports",
    "used_graph",
]


@dataclass(frozen=True)
class Package:
    """A workspace package: its distribution name, import name, sources and declared needs."""

    name: str
    module: str
    source: Path
    """The directory of the import package (`src/<module>`, or `python/<module>`)."""
    requires: frozenset[str]
    """Canonical names of the distributions its `[project] dependencies` name."""


def packages(root: Path = ROOT) -> list[Package]:
    """Every member under `packages/`, by name."""
    found: list[Package] = []
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        module = project["name"].replace("-", "_")
        source = next(
            p
            for p in (pyproject.parent / "src" / module, pyproject.parent / "python" / module)
            if p.is_dir()
        )
        requires = {canonicalize_name(Requirement(r).name) for r in project.get("dependencies", [])}
        found.append(Package(project["name"], module, source, frozenset(requires)))
    return found


def imports_of(path: Path) -> set[str]:
    """Every absolute module a file imports, anywhere in it (relative imports left out)."""
    return set(_imports_in(path.read_text(), str(path)))


@functools.cache
def _imports_in(text: str, filename: str) -> frozenset[str]:
    """imports_of's answer for one file's text, parsed once: each check asks for every file of
    the workspace again (four times in import_problems), and the parses were most of its 6 s."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(text, filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from pkg import _mod` imports a module too
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(names)


def _files(pkg: Package) -> list[Path]:
    return sorted([*pkg.source.rglob("*.py"), *pkg.source.rglob("*.pyi")])


def undeclared_imports(
    pkgs: Iterable[Package], distributions: Mapping[str, list[str]] | None = None
) -> list[str]:
    """`<package>: imports <module> (from <dist>) but does not declare it`, per import."""
    pkgs = list(pkgs)
    owners = {p.module: canonicalize_name(p.name) for p in pkgs}
    dists = packages_distributions() if distributions is None else distributions
    problems: set[str] = set()
    for pkg in pkgs:
        for path in _files(pkg):
            for name in imports_of(path):
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == pkg.module:
                    continue
                provided = [owners[top]] if top in owners else dists.get(top, [])
                wanted = {canonicalize_name(d) for d in provided}
                if not wanted & pkg.requires:
                    where = path.relative_to(pkg.source.parent)
                    from_ = f" (from {', '.join(sorted(wanted))})" if wanted else ""
                    problems.add(f"{pkg.name}: {where} imports `{top}`{from_}, not declared")
    return sorted(problems)


def used_graph(pkgs: Iterable[Package]) -> dict[str, set[str]]:
    """Which sibling packages each package's code imports."""
    pkgs = list(pkgs)
    owners = {p.module: p.name for p in pkgs}
    graph: dict[str, set[str]] = {}
    for pkg in pkgs:
        used = {name.split(".")[0] for path in _files(pkg) for name in imports_of(path)}
        graph[pkg.name] = {owners[m] for m in used if m in owners and m != pkg.module}
    return graph


def cycles(edges: Mapping[str, Iterable[str]]) -> list[str]:
    """One cycle of each knot of a directed graph, spelt from its smallest node: `a -> b -> a`.

    A knot is a strongly connected component: every cycle lies inside one, so one per knot
    names every place to cut, and none hides behind another.
    """
    graph = {node: sorted(set(targets)) for node, targets in edges.items()}
    found: list[str] = []
    for knot in _knots(graph):
        start = min(knot)
        path = _path_back(graph, knot, start)
        if path is not None:
            found.append(" -> ".join((*path, start)))
    return sorted(found)


def _knots(graph: Mapping[str, list[str]]) -> list[set[str]]:
    """Strongly connected components (Tarjan), iteratively: deep imports need no recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    knots: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph.get(root, [])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    knot: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        knot.add(member)
                        if member == node:
                            break
                    knots.append(knot)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph.get(child, []))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return knots


def _path_back(graph: Mapping[str, list[str]], knot: set[str], start: str) -> list[str] | None:
    """The shortest walk inside `knot` from `start` back to it (None: a lone node, no loop)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for child in graph.get(node, []):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if child in knot and child not in came_from and child != start:
                    came_from[child] = node
                    nxt.append(child)
        frontier = nxt
    return None


def module_cycles(pkg: Package) -> list[str]:
    """Cycles between the modules of one package, every import counted."""
    modules = {_module_name(pkg, path): path for path in _files(pkg) if path.suffix == ".py"}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for imported in imports_of(path):
            # `a.b.c` may name a module, or a name inside module `a.b`.
            target = imported
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target not in (name, pkg.module):
                targets.add(target)
        edges[name] = targets
    return cycles(edges)


def _module_name(pkg: Package, path: Path) -> str:
    parts = path.relative_to(pkg.source.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(pkgs: Iterable[Package]) -> list[str]:
    """`<package>: <file> imports <module>`, per import of another package's private name.

    A package offers what its `__init__` exports (and its public submodules); what starts
    with `_` below its top level can change without notice, so no other package leans on it.
    """
    pkgs = list(pkgs)
    modules = {p.module for p in pkgs}
    problems: set[str] = set()
    for pkg in pkgs:
        for path in _files(pkg):
            for name in imports_of(path):
                top, *rest = name.split(".")
                private = any(p.startswith("_") and not p.startswith("__") for p in rest)
                if top in modules and top != pkg.module and private:
                    where = path.relative_to(pkg.source.parent)
                    problems.add(f"{pkg.name}: {where} imports `{name}`, private to `{top}`")
    return sorted(problems)


def import_problems(pkgs: Iterable[Package]) -> list[str]:
    """Undeclared imports, private imports across packages, import cycles inside a package,
    and cycles in what code uses."""
    pkgs = list(pkgs)
    problems = undeclared_imports(pkgs) + private_imports(pkgs)
    for pkg in pkgs:
        problems += [f"{pkg.name}: import cycle {c}" for c in module_cycles(pkg)]
    problems += [f"import cycle between packages: {c}" for c in cycles(used_graph(pkgs))]
    return problems


def main() -> int:
    pkgs = packages()
    problems = import_problems(pkgs)
    for problem in problems:
        print(f"FAIL {problem}")
    for name, used in sorted(used_graph(pkgs).items()):
        print(f"{name} <- {', '.join(sorted(used)) or '(no tile package)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
