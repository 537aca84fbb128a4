"""What the harness builds: a target file naming the crate, its Python face and its benchmark.

The target is data, not code, so that the same harness that measures tile-stats measures a
one-second fixture crate in the tests: `tile-stats.toml` beside this module is the default.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from tools.build_profiles._errors import BuildProfileError

__all__ = [
    "BUILTIN_PROFILES",
    "DEFAULT_LABELS",
    "DEFAULT_TARGET",
    "Target",
    "check_labels",
    "load_target",
    "profile_dir",
]

DEFAULT_TARGET: Final = Path(__file__).with_name("tile-stats.toml")
DEFAULT_LABELS: Final = ("dev", "release")
BUILTIN_PROFILES: Final = ("dev", "release", "test", "bench")
"""Cargo's own profiles: they exist without a `[profile.NAME]` table."""
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_REQUIRED: Final = (
    "name",
    "manifest",
    "package",
    "library",
    "touch",
    "python_source",
    "native_module",
    "import",
    "speed_script",
    "speed_key",
)
_OPTIONAL: Final = ("root", "features", "speed_args")


@dataclass(frozen=True)
class Target:
    """One crate to build per profile, and how to load and benchmark what it makes.

    All paths are absolute. `library` is the `[lib] name` (the build leaves
    `lib<library>.so`); that file is copied into a copy of `python_source` as
    `native_module` + the extension suffix, which then shadows the installed package for the
    import and speed probes.
    """

    name: str
    source: Path
    root: Path
    manifest: Path
    package: str
    library: str
    features: tuple[str, ...]
    touch: Path
    python_source: Path
    native_module: str
    import_name: str
    speed_script: Path
    speed_args: tuple[str, ...]
    speed_key: str

    def built_library(self, target_dir: Path, label: str) -> Path:
        """Where cargo leaves the library of profile `label` under `target_dir`."""
        suffix = ".dylib" if sys.platform == "darwin" else ".so"
        return target_dir / profile_dir(label) / f"lib{self.library}{suffix}"


def profile_dir(label: str) -> str:
    """Cargo's output directory name of a profile: `debug` for dev and test, else the name."""
    return {"dev": "debug", "test": "debug", "bench": "release"}.get(label, label)


def _problem(path: Path, message: str, hint: str) -> BuildProfileError:
    return BuildProfileError(f"{path}: {message}", hint=hint)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _problem(path, "no such file", "pass an existing file with `--target`") from None
    except OSError as exc:
        raise _problem(path, f"cannot read: {exc.strerror}", "check its permissions") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _problem(path, f"not valid TOML: {exc}", "fix the syntax") from None


def _text(path: Path, data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise _problem(
            path, f"`{key}` must be a non-empty string, got {value!r}", f'set `{key} = "..."`'
        )
    return value


def _texts(path: Path, data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    # TOML arrays hold any value: a list here is a list of objects until each is checked.
    items = cast("list[object]", value) if isinstance(value, list) else None
    strings = tuple(v for v in items or () if isinstance(v, str))
    if items is None or len(strings) != len(items):
        raise _problem(
            path, f"`{key}` must be a list of strings, got {value!r}", f'write `{key} = ["..."]`'
        )
    return strings


def _existing(path: Path, key: str, where: Path) -> Path:
    if not where.exists():
        raise _problem(path, f"`{key}`: `{where}` does not exist", "fix the path in the file")
    return where


def load_target(path: Path) -> Target:
    """Read a target file; every problem names the file and key, with a hint."""
    path = path.absolute()
    data = _read_toml(path)
    unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise _problem(
            path,
            f"unknown key(s) {', '.join(unknown)}",
            f"the keys are {', '.join((*_REQUIRED, *_OPTIONAL))}",
        )
    root = (path.parent / data.get("root", ".")).resolve()
    text = {key: _text(path, data, key) for key in _REQUIRED}
    for key in ("library", "native_module", "package"):
        if not re.fullmatch(r"[A-Za-z0-9_-]+", text[key]):
            raise _problem(path, f"`{key}` = {text[key]!r} is not a plain name", "drop the path")
    return Target(
        name=text["name"],
        source=path,
        root=root,
        manifest=_existing(path, "manifest", root / text["manifest"]),
        package=text["package"],
        library=text["library"],
        features=_texts(path, data, "features"),
        touch=_existing(path, "touch", root / text["touch"]),
        python_source=_existing(path, "python_source", root / text["python_source"]),
        native_module=text["native_module"],
        import_name=text["import"],
        speed_script=_existing(path, "speed_script", root / text["speed_script"]),
        speed_args=_texts(path, data, "speed_args"),
        speed_key=text["speed_key"],
    )


def check_labels(target: Target, labels: list[str]) -> list[str]:
    """The labels as given, once each, after checking each is a profile of the manifest."""
    manifest = _read_toml(target.manifest)
    profiles = manifest.get("profile", {})
    # The keys of a TOML table are strings.
    custom = sorted(cast("dict[str, object]", profiles)) if isinstance(profiles, dict) else []
    known = [*BUILTIN_PROFILES, *(p for p in custom if p not in BUILTIN_PROFILES)]
    seen: list[str] = []
    for label in labels:
        if not _LABEL.match(label) or label not in known:
            raise BuildProfileError(
                f"{target.manifest}: no Cargo profile `{label}`",
                hint=f"pick from {', '.join(known)}, or add `[profile.{label}]` "
                f'(with `inherits = "release"`) to {target.manifest.name}',
            )
        if label not in seen:
            seen.append(label)
    return seen
