"""Where a new project gets tile from: the checkout, the wheelhouse or the index tile came from.

tile is not on a package index yet, so a scaffold that simply depends on `tile-cli` cannot be
installed (`uv sync`: "tile-cli was not found in the package registry"). `tile init` therefore
looks at how the running tile was installed (PEP 610's `direct_url.json`, which pip and uv
write for installs from a directory or a wheel file, and not for installs from an index) and
makes the new project resolve tile the same way:

- `checkout`: tile-cli installed from a source directory (the workspace's editable installs):
  `[tool.uv.sources]` path entries to that checkout's `tile-cli`, `tile-runner` and
  `tile-pytest` (the scaffold's direct dependencies). uv applies
  the checkout workspace's own sources to their dependencies, so the other tile packages come
  from the same checkout.
- `wheelhouse`: tile-cli installed from a wheel file: that file's directory as uv's
  `find-links`, when it also holds tile-runner and tile-pytest wheels.
- `index`: anything else, and `--from-index`: plain requirements, resolved from the index.

Pure standard library: the CLI never imports jax or numpy.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal, cast
from urllib.parse import unquote, urlparse

__all__ = ["DirectUrl", "SourceKind", "TileSource", "direct_url", "find_tile_source"]

SourceKind = Literal["checkout", "wheelhouse", "index"]

# The distributions a scaffold depends on directly (tile-pytest in its dev group); the rest
# follow from their metadata.
_DIRECT = ("tile-cli", "tile-runner", "tile-pytest")


@dataclass(frozen=True)
class DirectUrl:
    """A distribution installed from a local path: the path, and whether it was a directory."""

    path: Path
    is_dir: bool
    editable: bool


@dataclass(frozen=True)
class TileSource:
    """How the scaffold's pyproject.toml resolves tile, and the one line that says so."""

    kind: SourceKind
    reason: str
    paths: tuple[tuple[str, Path], ...] = ()  # checkout: distribution -> source directory
    editable: bool = False
    wheelhouse: Path | None = None

    def describe(self) -> str:
        """One line for the user: which form was written, and why."""
        other = "; `tile init --from-index` writes the plain index form"
        if self.kind == "checkout":
            root = _common_root([p for _, p in self.paths])
            how = "editable paths" if self.editable else "paths"
            where = f"the checkout at `{root}` ([tool.uv.sources], {how})"
            return f"Using tile from {where}: {self.reason}{other}"
        if self.kind == "wheelhouse":
            where = f"the wheels in `{self.wheelhouse}` ([tool.uv] find-links)"
            return f"Using tile from {where}: {self.reason}{other}"
        return f"Using tile from the package index: {self.reason}"

    def pyproject_block(self) -> str:
        """TOML appended to the scaffold's pyproject.toml, which ends in its `[tool.uv]` table;
        empty for the index form."""
        if self.kind == "checkout":
            lines = [
                "",
                "# tile is not on a package index yet: this project takes it from the checkout",
                "# that ran `tile init`. `tile init --from-index` writes the file without this.",
                "[tool.uv.sources]",
            ]
            flag = ", editable = true" if self.editable else ""
            lines += [f"{name} = {{ path = {_toml_str(path)}{flag} }}" for name, path in self.paths]
            return "\n".join(lines) + "\n"
        if self.kind == "wheelhouse" and self.wheelhouse is not None:
            return (
                "\n# tile is not on a package index yet: this project takes it from the folder of\n"
                "# wheels that tile itself was installed from. `tile init --from-index` writes\n"
                "# the file without this.\n"
                f"find-links = [{_toml_str(self.wheelhouse)}]\n"
            )
        return ""

    def sync_note(self) -> str:
        """The comment beside `uv sync` in the next steps: what it installs, or pip's way."""
        if self.kind == "checkout":
            return "installs tile from the checkout (pip ignores [tool.uv.sources])"
        if self.kind == "wheelhouse" and self.wheelhouse is not None:
            return f"or: pip install --find-links {_shell_path(self.wheelhouse)} -e ."
        return "or: pip install -e ."


def direct_url(distribution: str) -> DirectUrl | None:
    """The local path `distribution` was installed from (PEP 610), or None (index, or remote)."""
    data = _direct_url_json(distribution)
    if data is None:
        return None
    url = urlparse(str(data.get("url", "")))
    if url.scheme != "file":
        return None
    path = Path(unquote(url.path))
    dir_info = data.get("dir_info")
    if isinstance(dir_info, dict):
        editable = cast("dict[str, object]", dir_info).get("editable") is True
        return DirectUrl(path, is_dir=True, editable=editable)
    return DirectUrl(path, is_dir=False, editable=False)


def _direct_url_json(distribution: str) -> dict[str, object] | None:
    """The object in `distribution`'s `direct_url.json`; None when it has no such file (an
    install from an index) or the file holds no JSON object."""
    try:
        text = metadata.distribution(distribution).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        data = json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
    return cast("dict[str, object]", data) if isinstance(data, dict) else None


def find_tile_source(*, from_index: bool = False) -> TileSource:
    """The form that resolves the same tile as the one running, or the index form when asked."""
    if from_index:
        return TileSource("index", "asked for with --from-index")
    cli = direct_url("tile-cli")
    if cli is None:
        return TileSource("index", "this tile-cli was installed from one")
    if cli.is_dir:
        return _checkout(cli)
    return _wheelhouse(cli.path)


def _checkout(cli: DirectUrl) -> TileSource:
    paths: list[tuple[str, Path]] = []
    for name in _DIRECT:
        found = direct_url(name)
        if found is not None and found.is_dir:
            paths.append((name, found.path))
            continue
        # Not installed beside the CLI (or not from a directory): its sibling in the checkout.
        sibling = cli.path.parent / name
        if not (sibling / "pyproject.toml").is_file():
            return TileSource(
                "index", f"this tile-cli came from `{cli.path}`, but no `{name}` is beside it"
            )
        paths.append((name, sibling))
    return TileSource(
        "checkout", "this tile-cli was installed from it", paths=tuple(paths), editable=cli.editable
    )


def _wheelhouse(wheel: Path) -> TileSource:
    folder = wheel.parent
    for name in _DIRECT:
        if not any(folder.glob(f"{name.replace('-', '_')}-*.whl")):
            why = f"this tile-cli came from `{wheel}`, but `{folder}` has no {name} wheel"
            return TileSource("index", why)
    return TileSource("wheelhouse", "this tile-cli was installed from one", wheelhouse=folder)


def _common_root(paths: list[Path]) -> Path:
    """The checkout that holds every path: two levels up from `packages/<name>` when shared."""
    roots = {p.parent.parent if p.parent.name == "packages" else p.parent for p in paths}
    return roots.pop() if len(roots) == 1 else paths[0].parent


def _toml_str(path: Path) -> str:
    """A TOML basic string of an absolute path (forward slashes, quotes escaped)."""
    text = path.absolute().as_posix()
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _shell_path(path: Path) -> str:
    return shlex.quote(path.absolute().as_posix())
