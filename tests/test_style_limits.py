"""STYLE's size limits, checked: a source module fits in one reading, a function on a screen.

"One concept per private module, roughly under 400 lines" and functions short enough to see
whole: past 400 lines a module holds two ideas, past 60 lines a function does. The limits
count every line (docstrings too: a long explanation belongs in the module docstring or the
docs), in the source of every package (`src/`, and tile-stats' `python/`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 400
FUNCTION_LINES = 60


def _sources() -> list[Path]:
    found = [*ROOT.glob("packages/*/src/**/*.py"), *ROOT.glob("packages/*/python/**/*.py")]
    return sorted(found)


def _too_long(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text()
    where = path.relative_to(root)
    problems: list[str] = []
    lines = len(text.splitlines())
    if lines > MODULE_LINES:
        problems.append(f"{where}: {lines} lines (at most {MODULE_LINES})")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                problems.append(
                    f"{where}:{node.lineno}: `{node.name}` is {length} lines "
                    f"(at most {FUNCTION_LINES})"
                )
    return problems


def test_every_package_has_sources_to_check() -> None:
    packages = {p.relative_to(ROOT).parts[1] for p in _sources()}
    assert {"tile-cli", "tile-protocol", "tile-runner", "tile-stats"} <= packages


def test_no_module_or_function_is_too_long() -> None:
    problems = [p for path in _sources() for p in _too_long(path)]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(("lines", "expected"), [(FUNCTION_LINES, 0), (FUNCTION_LINES + 1, 1)])
def test_the_function_limit_counts_every_line(tmp_path: Path, lines: int, expected: int) -> None:
    body = '    """A docstring line counts like any other."""\n' + "    x = 1\n" * (lines - 2)
    (tmp_path / "probe.py").write_text(f"def f():\n{body}")
    assert len(_too_long(tmp_path / "probe.py", tmp_path)) == expected


def test_the_module_limit_counts_every_line(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    assert _too_long(tmp_path / "probe.py", tmp_path) == [
        f"probe.py: {MODULE_LINES + 1} lines (at most {MODULE_LINES})"
    ]
