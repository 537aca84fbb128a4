"""Discovery: import kernel modules by name, by file path, and from installed plugins."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from tile_protocol import Failure, Phase

__all__ = [
    "PLUGIN_GROUP",
    "TRACEBACK_CHARS",
    "USER_ERRORS",
    "discover",
    "failure_from",
    "format_traceback",
]

PLUGIN_GROUP = "tile.kernels"
"""Entry-point group under which installed packages register their kernel modules."""

TRACEBACK_CHARS = 4000
USER_ERRORS = (Exception, SystemExit, KeyboardInterrupt)
"""What user code (a kernel, its inputs, a module) may raise and the runner reports as its
failure: `sys.exit()` and a KeyboardInterrupt the code raised itself included. A Ctrl-C sent
to the runner is `Interrupted` (tile_runner._lifetime), which stops it instead."""


def format_traceback(exc: BaseException) -> str:
    """The traceback of `exc`, keeping its last TRACEBACK_CHARS characters."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) > TRACEBACK_CHARS:
        text = "...\n" + text[-TRACEBACK_CHARS:]
    return text


def failure_from(
    exc: BaseException, phase: Phase, case_id: str | None = None, *, context: str = ""
) -> Failure:
    """A Failure message for an exception caught during `phase`."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, SystemExit):
        message = f"SystemExit({exc.code!r})"
    elif isinstance(exc, KeyboardInterrupt):
        message = "KeyboardInterrupt raised by the code itself (no Ctrl-C reached the runner)"
    return Failure(
        case_id=case_id,
        phase=phase,
        error_type=type(exc).__name__,
        message=f"{context}{message}",
        traceback=format_traceback(exc),
    )


def _import_name(name: str) -> None:
    importlib.import_module(name)


def _module_name_for(path: Path) -> str:
    # Unique per file, stable across runs: two `kernels.py` in different folders do not clash.
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in path.stem)
    return f"tile_user_{stem}_{digest}"


def _import_path(path: Path) -> None:
    name = _module_name_for(path)
    if name in sys.modules:
        return
    # Sibling modules of the file import the way they would when run as a script.
    parent = str(path.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import `{path}` as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def _files(entry: str, root: Path | None) -> list[Path] | None:
    path = Path(entry).expanduser()
    if not path.is_absolute() and root is not None:
        path = root / path
    path = path.absolute()
    if path.is_dir():
        return sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
    if path.exists():
        return [path]  # a file, or something that is not one: `_not_a_file` says so
    return None


def _not_a_file(path: Path) -> Failure | None:
    """A Failure for a kernel path that is not a regular file (importing a FIFO would block
    the runner until the case timeout, naming nothing)."""
    if path.is_file():
        return None
    kind = "a FIFO" if path.is_fifo() else "a directory" if path.is_dir() else "a special file"
    return Failure(
        phase="import",
        error_type="NotARegularFile",
        message=f"kernel path `{path}` is {kind}, not a Python file: skipped",
    )


def discover(
    modules: Sequence[str] = (),
    paths: Sequence[str] = (),
    plugins: Sequence[str] | None = None,
    project_root: str | None = None,
) -> list[Failure]:
    """Import kernel modules; return one Failure (phase `import`) per module that failed.

    `modules` are importable names (`project_root` goes first on sys.path); `paths` are .py
    files or directories (each `*.py` not starting with `_`, relative to `project_root`);
    `plugins` None means every installed `tile.kernels` entry point, a list only those named.
    """
    failures: list[Failure] = []
    root = Path(project_root).expanduser().absolute() if project_root else None
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))

    for name in modules:
        try:
            _import_name(name)
        except USER_ERRORS as exc:
            failures.append(failure_from(exc, "import", context=f"importing module `{name}`: "))

    for entry in paths:
        files = _files(entry, root)
        if files is None:
            failures.append(
                Failure(
                    phase="import",
                    error_type="FileNotFoundError",
                    message=f"kernel path `{entry}` does not exist"
                    + (f" (relative to `{root}`)" if root else ""),
                )
            )
            continue
        for file in files:
            if (problem := _not_a_file(file)) is not None:
                failures.append(problem)
                continue
            try:
                _import_path(file)
            except USER_ERRORS as exc:
                failures.append(failure_from(exc, "import", context=f"importing `{file}`: "))

    failures.extend(_load_plugins(plugins))
    return failures


def _load_plugins(wanted: Sequence[str] | None) -> list[Failure]:
    failures: list[Failure] = []
    installed = {ep.name: ep for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)}
    names = sorted(installed) if wanted is None else list(wanted)
    for name in names:
        ep = installed.get(name)
        if ep is None:
            known = ", ".join(sorted(installed)) or "none"
            failures.append(
                Failure(
                    phase="import",
                    error_type="PluginNotFound",
                    message=f"no kernel plugin named `{name}` is installed (installed: {known})",
                )
            )
            continue
        try:
            loaded = ep.load()
            # An entry point may name a module (imported, done) or a function that registers.
            if callable(loaded):
                loaded()
        except USER_ERRORS as exc:
            failures.append(
                failure_from(exc, "import", context=f"loading plugin `{name}` ({ep.value}): ")
            )
    return failures
