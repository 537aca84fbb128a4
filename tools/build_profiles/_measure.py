"""One Cargo profile measured: clean, no-op and incremental builds, size, import, engine speed.

Each profile builds into its own `--target-dir` so that no profile reuses another's
artifacts and a clean build is really clean. The built library is then dropped into a copy
of the Python package that shadows the installed one (`PYTHONPATH`), so `import` and the
engine benchmark run on exactly this build; the probe checks that they did.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from dataclasses import dataclass, field
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Final, cast

from tools.build_profiles._commands import CommandResult, Commands
from tools.build_profiles._target import Target

__all__ = ["STEPS", "ProfileResult", "measure_profile"]

STEPS: Final = ("clean_build", "noop_rebuild", "incremental_rebuild", "import", "speed")
_STDERR_TAIL = 2000
# Measures the import alone (not the interpreter's start) and says which file was imported.
_IMPORT_PROBE = """\
import importlib, json, sys, time
start = time.perf_counter()
module = importlib.import_module(sys.argv[1])
elapsed = time.perf_counter() - start
print(json.dumps({"import_s": elapsed, "file": module.__file__}))
"""


@dataclass
class ProfileResult:
    """What one profile cost and bought; None where a step failed or could not run."""

    label: str
    target_dir: Path
    clean_build_s: float | None = None
    noop_rebuild_s: float | None = None
    incremental_rebuild_s: float | None = None
    extension_bytes: int | None = None
    extension_stripped_bytes: int | None = None
    import_s: float | None = None
    import_samples: list[float] = field(default_factory=list[float])
    engine_s: float | None = None
    failure: str | None = None
    failed_step: str | None = None
    failed_command: str | None = None
    failed_log: str | None = None
    stderr_tail: str | None = None

    @property
    def ok(self) -> bool:
        """True when every step succeeded."""
        return self.failure is None


class _StepFailed(Exception):
    """Internal: a step of one profile failed; the profile stops, the others go on."""

    def __init__(self, step: str, message: str, result: CommandResult | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.result = result


def _check(step: str, result: CommandResult) -> CommandResult:
    if result.timed_out:
        raise _StepFailed(step, f"{step}: timed out after {result.wall_s:.0f} s", result)
    if result.return_code != 0:
        raise _StepFailed(step, f"{step}: exit status {result.return_code}", result)
    return result


def _build_argv(target: Target, label: str, target_dir: Path) -> list[str]:
    argv = ["cargo", "build", "--locked", "--manifest-path", str(target.manifest)]
    argv += ["-p", target.package, "--profile", label, "--target-dir", str(target_dir)]
    if target.features:
        argv += ["--features", ",".join(target.features)]
    return argv


def _cargo_env() -> dict[str, str]:
    # pyo3's build script asks this interpreter for its version and ABI, as maturin does.
    return {"CARGO_TERM_COLOR": "never", "PYO3_PYTHON": sys.executable}


def _builds(commands: Commands, target: Target, label: str, out: ProfileResult) -> None:
    """Clean build, no-op rebuild, and a rebuild after touching one source file."""
    cwd = target.root
    env = _cargo_env()
    argv = _build_argv(target, label, out.target_dir)
    clean = ["cargo", "clean", "--manifest-path", str(target.manifest)]
    _check("clean", commands.run("clean", [*clean, "--target-dir", str(out.target_dir)], cwd=cwd))
    out.clean_build_s = _check("clean_build", commands.run("build", argv, cwd=cwd, env=env)).wall_s
    out.noop_rebuild_s = _check("noop_rebuild", commands.run("noop", argv, cwd=cwd, env=env)).wall_s
    before = target.touch.stat()
    try:
        os.utime(target.touch)  # a save without a change: what an editor does
        step = commands.run("incremental", argv, cwd=cwd, env=env)
    finally:
        # Put the old time back: a newer source file would make `uv sync` rebuild tile-stats.
        os.utime(target.touch, ns=(before.st_atime_ns, before.st_mtime_ns))
    out.incremental_rebuild_s = _check("incremental_rebuild", step).wall_s


def _sizes(commands: Commands, target: Target, label: str, out: ProfileResult) -> Path:
    library = target.built_library(out.target_dir, label)
    if not library.is_file():
        raise _StepFailed("size", f"cargo left no `{library}`")
    out.extension_bytes = library.stat().st_size
    strip = shutil.which("strip")
    if strip is not None:  # maturin strips what it ships (`strip = true`): size that too
        stripped = out.target_dir / f"{library.name}.stripped"
        shutil.copyfile(library, stripped)
        done = commands.run("strip", [strip, "--strip-all", str(stripped)], cwd=target.root)
        if done.ok:
            out.extension_stripped_bytes = stripped.stat().st_size
        stripped.unlink(missing_ok=True)
    return library


def _overlay(target: Target, library: Path, target_dir: Path) -> Path:
    """A copy of the Python package with this build's library in it; returns its parent."""
    root = target_dir / "python"
    package = root / target.python_source.name
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(
        target.python_source,
        package,
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.dylib", "__pycache__"),
    )
    suffix = ".abi3.so" if ".abi3.so" in EXTENSION_SUFFIXES else EXTENSION_SUFFIXES[0]
    shutil.copyfile(library, package / f"{target.native_module}{suffix}")
    return root


def _last_json(step: str, result: CommandResult) -> dict[str, object]:
    lines = [line for line in result.stdout().splitlines() if line.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise _StepFailed(step, f"{step}: the last line of stdout is not a JSON object", result)
    return cast("dict[str, object]", data)  # a JSON object's keys are strings


def _probes(
    commands: Commands, target: Target, overlay: Path, out: ProfileResult, import_runs: int
) -> None:
    """`import` timed in fresh interpreters, then the engine benchmark, both on this build."""
    env = {"PYTHONPATH": str(overlay), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-c", _IMPORT_PROBE, target.import_name]
    for _ in range(import_runs):
        data = _last_json(
            "import", _check("import", commands.run("import", argv, cwd=target.root, env=env))
        )
        where = str(data.get("file"))
        if not where.startswith(str(overlay)):
            raise _StepFailed(
                "import", f"import: `{target.import_name}` came from {where}, not this build"
            )
        out.import_samples.append(float(data["import_s"]))  # type: ignore[arg-type]
    out.import_s = statistics.median(out.import_samples)
    speed = [sys.executable, str(target.speed_script), *target.speed_args]
    data = _last_json(
        "speed", _check("speed", commands.run("speed", speed, cwd=target.root, env=env))
    )
    value = data.get(target.speed_key)
    if not isinstance(value, int | float):
        raise _StepFailed("speed", f"speed: no number under `{target.speed_key}` in {data}")
    out.engine_s = float(value)


def measure_profile(
    commands: Commands, target: Target, label: str, target_root: Path, *, import_runs: int
) -> ProfileResult:
    """Every step for one profile; a failed step ends this profile and is recorded in it."""
    out = ProfileResult(label=label, target_dir=target_root / label)
    try:
        _builds(commands, target, label, out)
        library = _sizes(commands, target, label, out)
        overlay = _overlay(target, library, out.target_dir)
        _probes(commands, target, overlay, out, import_runs)
    except _StepFailed as failed:
        out.failure = str(failed)
        out.failed_step = failed.step
        if failed.result is not None:
            out.failed_command = failed.result.command_id
            out.failed_log = failed.result.stderr_relpath
            out.stderr_tail = failed.result.stderr()[-_STDERR_TAIL:] or None
    return out
