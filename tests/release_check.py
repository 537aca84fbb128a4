"""`just release-check`: build every package as it would be published and prove each one works
alone. docs/releasing.md says where this sits in cutting a release.

1. Static: each member has a CHANGELOG.md with a section for its version; every dependency on
   a sibling is a range that holds the sibling's version; the graph is acyclic; `tile init`'s
   scaffold asks for versions that exist; every import in a package's source is of a declared
   dependency, and no imports go round in a circle (tests/dependency_check.py).
2. Build: `uv build --no-sources` per package (sdist, then the wheel from that sdist, so an
   incomplete sdist fails here), into one wheelhouse. `--no-sources` drops the workspace's
   `[tool.uv.sources]`, as an index build would. tile-stats asks maturin for a tag PyPI
   accepts (`--compatibility pypi`: manylinux, not `linux_x86_64`).
3. Metadata: `twine check --strict` (run by uvx at a pinned version, so twine's 30 packages
   stay out of the dev environment) and the checks twine leaves out: no direct references,
   a platform tag PyPI takes, name and version as pyproject says.
4. Install each wheel alone in a fresh venv (tile siblings from the wheelhouse, the rest from
   the index), check that every tile package in it is the wheelhouse's version and that a
   `__version__` the package defines agrees, and run the package's smoke command.

Usage: `python tests/release_check.py [WHEELHOUSE]` (default `dist/release`); exit 1 on any
problem, each printed as `FAIL <package>: <what>`.
"""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dependency_check import cycles, import_problems, packages
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
TWINE = "twine==7.0.0"
SCAFFOLD = ROOT / "packages/tile-cli/src/tile_cli/templates/init/pyproject.toml.tmpl"
_PLATFORM_OK = re.compile(r"^(any|(manylinux|musllinux)_\d+_\d+_\w+|macosx_\d+_\d+_\w+|win\w*)$")

# What each package's smoke command runs: a real use of it, offline, in seconds.
_CONFIG = (
    "import tile_config as tc; print('max_time', tc.load_config(environ={}).config.bench.max_time)"
)
_DOWNLOADS = """\
import tempfile, tile_downloads as td
reg = td.registry_from_mapping({'x': {'url': 'https://example.invalid/x', 'sha256': '0' * 64}})
try:
    td.fetch('x', reg, cache_dir=tempfile.mkdtemp(), offline=True)
except td.OfflineError:
    print('offline refused')
"""
_RUNNER = """\
import jax.numpy as jnp, tile_runner as tile
m = tile.measure(lambda x: x + 1, jnp.ones(8), max_time=0.05)
print('timer', m.timer, m.stats.n > 0)
"""
_STD = """\
import tile_runner as tile
tile.discover(plugins=['tile-std'])
print('kernels', sum(k.startswith('std/') for k in tile.registry()) > 0)
"""

# One command per package, run in a venv that has only that wheel and its dependencies, and
# the text its output must contain. `{python}` and `{bin}` are the venv's.
_PY = "{python}"
SMOKE: dict[str, tuple[list[str], str]] = {
    "tile-protocol": (
        [_PY, "-c", "import tile_protocol as tp; print('protocol', tp.PROTOCOL_VERSION)"],
        "protocol 1",
    ),
    "tile-stats": (
        [_PY, "-c", "import tile_stats; print('median', tile_stats.median([3.0, 1.0, 2.0]))"],
        "median 2.0",
    ),
    "tile-config": ([_PY, "-c", _CONFIG], "max_time 2.0"),
    "tile-downloads": ([_PY, "-c", _DOWNLOADS], "offline refused"),
    "tile-artifacts": (
        [_PY, "-c", "import tile_artifacts as ta; print(ta.new_run_id('smoke').split('-')[0])"],
        "smoke",
    ),
    "tile-runner": ([_PY, "-c", _RUNNER], "timer wall True"),
    "tile-harness": (
        [_PY, "-c", "import tile_harness as th; print('slug', th.device_slug('NVIDIA H200'))"],
        "slug nvidia-h200",
    ),
    "tile-cli": (["{bin}/tile", "protocol", "schema"], '"RunRequest"'),
    "tile-std": ([_PY, "-c", _STD], "kernels True"),
    "tile-pytest": ([_PY, "-m", "pytest", "--help"], "--tile-compare=BASELINE"),
    "tile-report": (
        [_PY, "-c", "import tile_report as tr; print('report', 'render_html' in tr.__all__)"],
        "report True",
    ),
}


@dataclass(frozen=True)
class Member:
    """A workspace package: its name, version, directory and declared requirements."""

    name: str
    version: Version
    path: Path
    requires: tuple[Requirement, ...]

    @property
    def module(self) -> str:
        """Import name and wheel file prefix: `tile-config` -> `tile_config`."""
        return self.name.replace("-", "_")


def members() -> list[Member]:
    """Every package under packages/, by name."""
    found: list[Member] = []
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        found.append(
            Member(
                name=project["name"],
                version=Version(project["version"]),
                path=pyproject.parent,
                requires=tuple(Requirement(r) for r in project.get("dependencies", [])),
            )
        )
    return found


def static_problems(pkgs: list[Member], scaffold: Path = SCAFFOLD) -> list[str]:
    """Changelogs, sibling ranges, an acyclic graph, and the scaffold's ranges."""
    by_name = {m.name: m for m in pkgs}
    problems: list[str] = []
    for m in pkgs:
        changelog = m.path / "CHANGELOG.md"
        heading = re.compile(rf"^## \[?{re.escape(str(m.version))}\]?(\s|$)", re.MULTILINE)
        if not changelog.is_file():
            problems.append(f"{m.name}: no CHANGELOG.md")
        elif not heading.search(changelog.read_text()):
            problems.append(f"{m.name}: CHANGELOG.md has no `## {m.version}` section")
        if m.name not in SMOKE:
            problems.append(f"{m.name}: no smoke command in tests/release_check.py")
        for req in m.requires:
            sibling = by_name.get(req.name)
            if sibling is not None and sibling.version not in req.specifier:
                problems.append(
                    f"{m.name}: requires `{req}` but {sibling.name} is {sibling.version}"
                )
    problems += _cycles(pkgs)
    for line in re.findall(r'"(tile-[a-z-]+[<>=!~][^"]*)"', scaffold.read_text()):
        req = Requirement(line)
        sibling = by_name.get(req.name)
        if sibling is None or sibling.version not in req.specifier:
            have = sibling.version if sibling else "not a package"
            problems.append(f"tile init's scaffold requires `{req}` but it is {have}")
    return problems


def _cycles(pkgs: list[Member]) -> list[str]:
    names = {m.name for m in pkgs}
    edges = {m.name: [r.name for r in m.requires if r.name in names] for m in pkgs}
    return [f"dependency cycle: {c}" for c in cycles(edges)]


def _run(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def build(pkgs: list[Member], house: Path) -> list[str]:
    """sdist and wheel of every package into `house`, as an index would get them."""
    env = {**os.environ, "MATURIN_PEP517_ARGS": "--compatibility pypi"}
    # The sdist unpacks elsewhere; cargo can still reuse the workspace's compiled dependencies.
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target"))
    problems: list[str] = []
    for m in pkgs:
        done = _run(
            ["uv", "build", "--no-sources", "--package", m.name, "-o", str(house)],
            cwd=ROOT,
            env=env,
        )
        if done.returncode != 0:
            problems.append(f"{m.name}: uv build --no-sources failed\n{done.stderr[-3000:]}")
    return problems


def metadata_problems(pkgs: list[Member], house: Path) -> list[str]:
    """twine check --strict, then what twine does not look at."""
    files = sorted(str(p) for p in (*house.glob("*.whl"), *house.glob("*.tar.gz")))
    problems: list[str] = []
    twine = _run(["uvx", "--from", TWINE, "twine", "check", "--strict", *files], cwd=ROOT)
    if twine.returncode != 0:
        problems.append(
            f"twine check --strict failed\n{twine.stdout[-3000:]}{twine.stderr[-2000:]}"
        )
    for m in pkgs:
        wheels = sorted(house.glob(f"{m.module}-{m.version}-*.whl"))
        sdists = sorted(house.glob(f"{m.module}-{m.version}.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            problems.append(f"{m.name}: expected one wheel and one sdist of {m.version} in {house}")
            continue
        problems += [f"{m.name}: {p}" for p in _wheel_problems(m, wheels[0])]
    return problems


def _wheel_problems(m: Member, wheel: Path) -> list[str]:
    problems: list[str] = []
    platform = wheel.name.removesuffix(".whl").split("-")[-1]
    if not all(_PLATFORM_OK.match(tag) for tag in platform.split(".")):
        problems.append(f"{wheel.name}: platform tag `{platform}` is refused by PyPI")
    with zipfile.ZipFile(wheel) as z:
        meta_name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(meta_name).decode("utf-8"))
    if meta["Name"] != m.name or Version(meta["Version"]) != m.version:
        problems.append(f"METADATA says {meta['Name']} {meta['Version']}")
    for field in ("Summary", "Requires-Python", "License-Expression", "Description-Content-Type"):
        if not meta[field]:
            problems.append(f"METADATA has no {field}")
    for dist in meta.get_all("Requires-Dist") or []:
        if Requirement(dist).url is not None:
            problems.append(f"Requires-Dist `{dist}` is a direct reference (PyPI refuses it)")
    return problems


def smoke(m: Member, house: Path, tile_versions: dict[str, Version]) -> str | None:
    """Install the wheel alone in a fresh venv and run its smoke command; a problem or None."""
    (wheel,) = house.glob(f"{m.module}-{m.version}-*.whl")
    with tempfile.TemporaryDirectory(prefix=f"release-{m.name}-") as tmp:
        venv = Path(tmp) / "venv"
        made = _run(["uv", "venv", "-q", "--python", sys.executable, str(venv)])
        if made.returncode != 0:
            return f"uv venv failed: {made.stderr[-2000:]}"
        python = str(venv / "bin" / "python")
        # uv caches a find-links wheel by its path, name and version, so a wheelhouse rebuilt
        # at the same path with unchanged versions (CI's clone) would install last run's
        # siblings; refreshing the tile packages makes it read this run's files.
        refresh = [arg for name in tile_versions for arg in ("--refresh-package", name)]
        installed = _run(
            ["uv", "pip", "install", "-q", "--python", python, *refresh,
             "--find-links", str(house), str(wheel)]
        )  # fmt: skip
        if installed.returncode != 0:
            return f"installing it alone failed:\n{installed.stderr[-3000:]}"
        listed = _run(["uv", "pip", "freeze", "--python", python])
        for line in listed.stdout.splitlines():
            name, _, version = line.partition("==")
            want = tile_versions.get(name)
            if want is not None and Version(version) != want:
                return f"{name} {version} was installed, not the wheelhouse's {want}"
        # A hard-coded `__version__` must move with pyproject's version.
        probe = f"import {m.module} as p; print(getattr(p, '__version__', '{m.version}'))"
        said = _run([python, "-c", probe], cwd=Path(tmp)).stdout.strip()
        if said != str(m.version):
            return f"{m.module}.__version__ is {said!r}, pyproject says {m.version}"
        argv, expect = SMOKE[m.name]
        argv = [a.replace("{python}", python).replace("{bin}", str(venv / "bin")) for a in argv]
        ran = _run(argv, cwd=Path(tmp), env={**os.environ, "NO_COLOR": "1", "JAX_PLATFORMS": "cpu"})
        if ran.returncode != 0 or expect not in ran.stdout:
            return (
                f"smoke command failed (exit {ran.returncode}, expected "
                f"`{expect}`):\n{ran.stdout[-1500:]}{ran.stderr[-1500:]}"
            )
    return None


def main(house: Path) -> int:
    pkgs = members()
    print(f"release-check: {len(pkgs)} packages into {house}", flush=True)
    problems = static_problems(pkgs) + import_problems(packages())
    _report("static checks", problems)
    if house.exists():
        shutil.rmtree(house)
    house.mkdir(parents=True)
    step = build(pkgs, house)
    _report("uv build --no-sources", step)
    problems += step
    if not step:
        step = metadata_problems(pkgs, house)
        _report(f"metadata ({TWINE})", step)
        problems += step
        versions = {m.name: m.version for m in pkgs}
        for m in pkgs:
            found = smoke(m, house, versions)
            print(f"{'ok  ' if found is None else 'FAIL'} {m.name} {m.version}: alone + smoke")
            if found is not None:
                problems.append(f"{m.name}: {found}")
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    print(f"release-check: {len(pkgs)} packages, {len(problems)} problems")
    return 1 if problems else 0


def _report(what: str, problems: list[str]) -> None:
    print(f"{'ok  ' if not problems else 'FAIL'} {what}", flush=True)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist" / "release"))
