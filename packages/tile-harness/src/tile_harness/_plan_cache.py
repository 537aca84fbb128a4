"""The last whole plan of a project, kept so that filters matching nothing need no runner.

A runner takes seconds to start and import jax; a typo in `-k` or `--kernel` should not. After
a suite run without filters planned its cases cleanly, the case ids and kernel names are kept
in `.tile/plans.json` under a key made of everything the plan depends on: the command, the
request without its filters, the runner's interpreter and environment, tile.toml's text, the
versions of tile and jax, the accelerator device nodes present and JAX's PJRT plugins, and
the content of every kernel source (the project's Python files, the packages of `[project]
modules` and of the installed kernel plugins, the `[project] paths` folders). A later run with
filters whose key is the same, and whose filters match none of the kept cases, is refused at
once with the message a runner's plan would have led to.

The key errs towards missing: anything it cannot account for (another interpreter for the
runner, a module it cannot find without importing, a project too large to read quickly,
captured cases, exact case ids) means no key, and the run goes to the runner as before. A
kept plan that says "matches" decides nothing: the runner's plan is the truth.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import json
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

import tile_protocol as tp
from tile_harness._errors import CliError
from tile_harness._nomatch import nothing_matched
from tile_harness._requests import build_request
from tile_harness._runners import runner_python
from tile_harness._settings import Selection, kernel_matches, matches

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = ["PLANS_FILE", "PlanCache", "plans_path"]

PLANS_FILE: Final = "plans.json"
_FORMAT: Final = 1
_KEPT: Final = 8  # keys (command, flags, sources) remembered per project
_MAX_FILES: Final = 5000  # more than this and reading them costs what a runner would
_PLUGIN_GROUP: Final = "tile.kernels"  # tile_runner._discover's, which the host cannot import
_ENV_PREFIXES: Final = ("JAX_", "XLA_", "CUDA_", "TPU_", "ROCR_", "HIP_", "PYTHON")
_NOT_THE_PLAN: Final = frozenset({
    "filters", "kernels", "case_ids", "output_dir", "bench", "test", "peaks", "downloads",
    "jax_cache_dir", "token", "progress", "cache_explain", "pace", "profile", "compile_ahead",
    "inspect_kind", "calibrate", "tuning_files", "user_tuning_files",
})  # fmt: skip
"""Request fields that narrow or time the plan's cases but do not change which cases exist."""
_PRUNED: Final = frozenset({"__pycache__", "node_modules", "site-packages"})
_VERSIONS: Final = ("tile-runner", "tile-protocol", "tile-harness", "jax", "jaxlib")
_DEVICE_NODES: Final = ("/dev/nvidiactl", "/dev/kfd", "/dev/accel0", "/dev/vfio")
"""Present when an NVIDIA, AMD or TPU device is: the cases a kernel declares can depend on the
device JAX finds, which the host cannot ask without importing it."""


def plans_path(resolved: ResolvedConfig) -> Path:
    """`.tile/plans.json` of the project (of the current folder outside any project)."""
    return resolved.resolve_path(".tile") / PLANS_FILE


class _TooMany(Exception):
    """The sources are too many to read before every run: no key."""


class PlanCache:
    """The kept plans of one project, looked up and written under one key."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.key = key

    @classmethod
    def open(
        cls, command: tp.Command, resolved: ResolvedConfig, sel: Selection
    ) -> PlanCache | None:
        """The cache of this run's plan, or None when its key cannot be known cheaply."""
        if sel.cases is not None or sel.capture or sel.cases_file or sel.case_ids is not None:
            return None  # captured cases and exact ids plan otherwise than the kept plan did
        if runner_python(resolved) != sys.executable:
            return None  # another interpreter: its packages are not the ones seen here
        try:
            key = _key(command, resolved, sel)
        except Exception:  # a metadata or file oddity: the runner answers, as without a key
            return None
        return None if key is None else cls(plans_path(resolved), key)

    def refusal(self, sel: Selection) -> CliError | None:
        """The usage error of `sel`'s filters matching none of the kept plan's cases; None
        when no plan is kept under this key, or some kept case matches."""
        if not (sel.filters or sel.kernels):
            return None
        kept = self._entries().get(self.key)
        if kept is None:
            return None
        for case_id, kernel in kept:
            chosen = not sel.kernels or any(kernel_matches(kernel, k) for k in sel.kernels)
            if chosen and (not sel.filters or any(matches(case_id, f) for f in sel.filters)):
                return None
        cases = [tp.CaseInfo(case_id=case_id, kernel=kernel) for case_id, kernel in kept]
        return nothing_matched(sel, cases) if cases else None

    def remember(self, cases: Sequence[tp.CaseInfo]) -> None:
        """Keep `cases` (a whole, clean plan) under this key; best effort."""
        entries = self._entries()
        entries.pop(self.key, None)
        entries[self.key] = [(c.case_id, c.kernel) for c in cases]
        kept = [_Kept(key=k, cases=v) for k, v in list(entries.items())[-_KEPT:]]
        import tile_artifacts as ta

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            ta.replace_file(self.path, msgspec.json.encode(_PlansFile(format=_FORMAT, plans=kept)))
        except OSError:
            pass  # a plan not kept costs the next typo a runner start, nothing more

    def _entries(self) -> dict[str, list[tuple[str, str]]]:
        """The kept plans, oldest first; nothing from a file that is missing or not ours."""
        try:
            document = msgspec.json.decode(self.path.read_bytes(), type=_PlansFile)
        except (OSError, msgspec.DecodeError):
            return {}
        if document.format != _FORMAT:
            return {}
        return {plan.key: plan.cases for plan in document.plans}


class _Kept(msgspec.Struct, frozen=True):
    key: str
    cases: list[tuple[str, str]]
    """(case id, kernel) of every case, in plan order."""


class _PlansFile(msgspec.Struct, frozen=True):
    format: int
    plans: list[_Kept] = []


def _key(command: tp.Command, resolved: ResolvedConfig, sel: Selection) -> str | None:
    """The digest of everything the plan of `sel` without its filters depends on."""
    whole = Selection(axes=sel.axes, plugins=sel.plugins, tunables=sel.tunables, modes=sel.modes)
    request = build_request(command, resolved, whole, None)
    fields = {k: v for k, v in msgspec.to_builtins(request).items() if k not in _NOT_THE_PLAN}
    sources = _sources(resolved, request)
    if sources is None:
        return None
    digest = hashlib.sha256()
    for part in (
        fields,
        resolved.raw_text or "",
        dict(resolved.config.runner.env),
        {k: v for k, v in sorted(os.environ.items()) if k.startswith(_ENV_PREFIXES)},
        [sys.executable, sys.version, str(resolved.cwd)],
        [(name, _version(name)) for name in _VERSIONS],
        _plugin_versions(),
        _accelerators(),
    ):
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
    for path in sorted(sources):
        digest.update(b"\0" + os.fsencode(path) + b"\0" + _fingerprint(path))
    return digest.hexdigest()


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _fingerprint(path: Path) -> bytes:
    """A Python file's content digest; another file's type, size and modification time (a
    compiled extension: reading megabytes before every run would cost what the cache saves;
    a FIFO named like a module: reading it would wait forever)."""
    st = path.stat()
    if path.suffix == ".py" and stat.S_ISREG(st.st_mode):
        return hashlib.sha256(path.read_bytes()).digest()
    return f"{stat.S_IFMT(st.st_mode)}:{st.st_size}:{st.st_mtime_ns}".encode()


def _sources(resolved: ResolvedConfig, request: tp.RunRequest) -> set[Path] | None:
    """Every file the runner's discovery may read; None when one cannot be found."""
    root = resolved.project_root
    first = [str(root)] if root is not None else []
    search: list[str] = list(dict.fromkeys([*first, str(resolved.cwd), *sys.path]))
    found: set[Path] = set(_walk(root)) if root is not None else set()
    names = list(request.modules)
    names += [ep.value.partition(":")[0] for ep in _plugins()]
    for name in names:
        files = _module_files(name, search)
        if files is None:
            return None
        found.update(files)
    for entry in request.paths:
        path = Path(entry)
        folder = path if path.is_dir() else path.parent
        found.update(p for p in folder.glob("*.py") if p.is_file())
    if len(found) > _MAX_FILES:
        raise _TooMany
    return found


def _plugins() -> list[importlib.metadata.EntryPoint]:
    """Every installed kernel plugin (those the request does not name too: the key errs
    towards missing)."""
    return sorted(importlib.metadata.entry_points(group=_PLUGIN_GROUP), key=lambda ep: ep.name)


def _plugin_versions() -> list[tuple[str, str, str | None]]:
    return [(ep.name, ep.value, ep.dist.version if ep.dist else None) for ep in _plugins()]


def _accelerators() -> list[object]:
    """What decides the device JAX will find: the device nodes present and JAX's installed
    PJRT plugins (a GPU appearing, or its plugin, changes the plan of GPU-shaped kernels)."""
    nodes = [node for node in _DEVICE_NODES if Path(node).exists()]
    eps = importlib.metadata.entry_points(group="jax_plugins")
    return [nodes, sorted((ep.name, ep.dist.version if ep.dist else None) for ep in eps)]


def _module_files(name: str, search: Sequence[str]) -> list[Path] | None:
    """The files of the top-level package of `name`, found without importing anything."""
    top = name.strip().partition(".")[0]
    if not top.isidentifier():
        return None
    spec = importlib.machinery.PathFinder.find_spec(top, list(search))
    if spec is None:
        return None
    if spec.submodule_search_locations:
        folders = [Path(folder) for folder in spec.submodule_search_locations]
        return [p for folder in folders for p in _walk(folder, all_files=True)]
    return [Path(spec.origin)] if spec.origin and Path(spec.origin).is_file() else None


def _walk(folder: Path, *, all_files: bool = False) -> Iterator[Path]:
    """The Python files under `folder` (every file with `all_files`: a package's compiled
    parts too), leaving out hidden folders, caches, virtual environments and installed
    packages."""
    count = 0
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(
            d for d in dirs
            if not d.startswith(".") and d not in _PRUNED
            and not (Path(here, d) / "pyvenv.cfg").exists()
        )  # fmt: skip
        for name in sorted(files):
            if name.endswith(".py") or (all_files and not name.endswith((".pyc", ".pyo"))):
                count += 1
                if count > _MAX_FILES:
                    raise _TooMany
                yield Path(here, name)
