"""The checks of `just release-check` find what they are there to find.

The whole flow (build, twine, install alone, smoke) runs as `just release-check` in CI; these
tests feed its checks broken inputs, which a green workspace never shows them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version
from release_check import SMOKE, Member, _wheel_problems, members, static_problems


def _member(tmp: Path, name: str, version: str, *requires: str, changelog: bool = True) -> Member:
    path = tmp / name
    path.mkdir()
    if changelog:
        (path / "CHANGELOG.md").write_text(f"# {name}\n\n## Unreleased\n\n## {version}\n")
    return Member(name, Version(version), path, tuple(Requirement(r) for r in requires))


def _scaffold(tmp: Path, *requires: str) -> Path:
    path = tmp / "pyproject.toml.tmpl"
    path.write_text("dependencies = [\n" + "".join(f'    "{r}",\n' for r in requires) + "]\n")
    return path


def test_the_workspace_passes_its_static_checks() -> None:
    pkgs = members()
    assert {m.name for m in pkgs} == set(SMOKE)  # every package has a smoke command
    assert static_problems(pkgs) == []


def test_static_problems_are_found(tmp_path: Path) -> None:
    pkgs = [
        _member(tmp_path, "tile-protocol", "0.2.0"),
        _member(tmp_path, "tile-cli", "0.1.0", "tile-protocol>=0.1,<0.2", changelog=False),
        _member(tmp_path, "tile-runner", "0.1.0", "tile-std>=0.1"),
        _member(tmp_path, "tile-std", "0.1.0", "tile-runner>=0.1,<0.2"),
        _member(tmp_path, "tile-extra", "0.1.0"),
    ]
    (pkgs[0].path / "CHANGELOG.md").write_text("## 0.1.0\n")  # not bumped with the version
    problems = static_problems(pkgs, _scaffold(tmp_path, "tile-runner>=0.2,<0.3", "jax>=0.4"))
    expected = [
        "tile-protocol: CHANGELOG.md has no `## 0.2.0` section",
        "tile-cli: no CHANGELOG.md",
        "tile-cli: requires `tile-protocol<0.2,>=0.1` but tile-protocol is 0.2.0",
        "dependency cycle: tile-runner -> tile-std -> tile-runner",
        "tile init's scaffold requires `tile-runner<0.3,>=0.2` but it is 0.1.0",
        "tile-extra: no smoke command in tests/release_check.py",
    ]
    for line in expected:
        assert line in problems, (line, problems)
    assert len(problems) == len(expected)


def _wheel(tmp: Path, filename: str, metadata: str) -> Path:
    path = tmp / filename
    name = filename.split("-", maxsplit=1)[0]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}-0.1.0.dist-info/METADATA", metadata)
    return path


def test_wheel_problems_twine_does_not_look_at(tmp_path: Path) -> None:
    m = Member("tile-stats", Version("0.1.0"), tmp_path, ())
    good = (
        "Metadata-Version: 2.4\nName: tile-stats\nVersion: 0.1.0\nSummary: s\n"
        "Requires-Python: >=3.11\nLicense-Expression: Apache-2.0\n"
        "Description-Content-Type: text/markdown\nRequires-Dist: numpy>=1\n"
    )
    ok = _wheel(tmp_path, "tile_stats-0.1.0-cp311-abi3-manylinux_2_34_x86_64.whl", good)
    assert _wheel_problems(m, ok) == []
    bad = _wheel(
        tmp_path,
        "tile_stats-0.1.0-cp311-abi3-linux_x86_64.whl",
        good.replace("Version: 0.1.0", "Version: 0.1.1").replace("Summary: s\n", "")
        + "Requires-Dist: tile-protocol @ file:///work/packages/tile-protocol\n",
    )
    problems = _wheel_problems(m, bad)
    assert any("platform tag `linux_x86_64` is refused by PyPI" in p for p in problems)
    assert "METADATA says tile-stats 0.1.1" in problems
    assert "METADATA has no Summary" in problems
    assert any("is a direct reference" in p for p in problems)
