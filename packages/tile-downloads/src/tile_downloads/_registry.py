"""Download entries (url + pinned sha256) and the registry that maps names to them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast, get_args
from urllib.parse import urlsplit

from ._errors import RegistryError

__all__ = ["ArchiveKind", "DownloadEntry", "Registry", "lookup", "registry_from_mapping"]

ArchiveKind: TypeAlias = Literal["zip", "tar", "tar.gz"]
"""Archive formats `fetch` can unpack."""

_ARCHIVE_KINDS: tuple[str, ...] = get_args(ArchiveKind)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_KEYS = ("url", "sha256", "archive", "members", "description")
_HINT = "fix the entry in the registry (e.g. `[downloads.{name}]` in tile.toml)"


def _bad(name: str, key: str, what: str, value: object) -> RegistryError:
    return RegistryError(
        f"download entry `{name}`: `{key}` {what}, got {value!r}",
        entry=name,
        hint=_HINT.format(name=name),
    )


def _check_member_path(name: str, member: object) -> str:
    """Return `member` as a normalized relative archive path, or raise RegistryError."""
    if not isinstance(member, str) or not member.strip("/"):
        raise _bad(name, "members", "must hold non-empty strings", member)
    parts = member.replace("\\", "/").split("/")
    if member.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", member) or ".." in parts:
        raise _bad(name, "members", "must hold relative paths without `..`", member)
    return "/".join(p for p in parts if p not in ("", "."))


def _items(value: object) -> Sequence[object]:
    """The items of a list or tuple; none for anything else (a string included)."""
    return cast("Sequence[object]", value) if isinstance(value, (tuple, list)) else ()


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False


def _as_object(value: object) -> object:
    """Widen a declared field type so its runtime value can be checked."""
    return value


@dataclass(frozen=True, slots=True)
class DownloadEntry:
    """One pinned download: where it lives, its sha256, and how to unpack it."""

    name: str
    url: str
    sha256: str
    archive: ArchiveKind | None = None
    members: tuple[str, ...] | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        name = _as_object(self.name)
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise RegistryError(
                f"download name {name!r} is not valid: use letters, digits, `.`, `_`, `-` "
                "(at most 128, starting with a letter or digit)",
                entry=str(name),
                hint="rename the entry in the registry",
            )
        url = _as_object(self.url)
        if not isinstance(url, str) or not _is_http_url(url):
            raise _bad(name, "url", "must be an http:// or https:// URL", url)
        sha = _as_object(self.sha256)
        if isinstance(sha, str):
            sha = sha.strip().lower().removeprefix("sha256:")
        if not isinstance(sha, str) or not _SHA256_RE.fullmatch(sha):
            raise _bad(name, "sha256", "must be 64 hexadecimal characters", self.sha256)
        object.__setattr__(self, "sha256", sha)
        archive = _as_object(self.archive)
        if archive is not None and archive not in _ARCHIVE_KINDS:
            raise _bad(name, "archive", f"must be one of {', '.join(_ARCHIVE_KINDS)}", archive)
        members = _as_object(self.members)
        if members is not None:
            if archive is None:
                raise _bad(name, "members", "needs `archive` to be set", members)
            paths = _items(members)
            if not paths:
                raise _bad(name, "members", "must be a non-empty list of paths", members)
            checked = tuple(_check_member_path(name, m) for m in paths)
            object.__setattr__(self, "members", checked)
        description = _as_object(self.description)
        if description is not None and not isinstance(description, str):
            raise _bad(name, "description", "must be a string", description)


Registry: TypeAlias = Mapping[str, DownloadEntry]
"""Names to entries; build one with `registry_from_mapping` or `{e.name: e for e in entries}`."""


def registry_from_mapping(data: Mapping[str, object]) -> Registry:
    """Build a validated registry from plain data such as the `[downloads]` table of tile.toml."""
    if not isinstance(data, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise RegistryError(
            f"downloads must be a table of entries, got {type(data).__name__}",
            hint="write each entry as `[downloads.NAME]` with `url` and `sha256`",
        )
    registry: dict[str, DownloadEntry] = {}
    for name, raw in data.items():
        if not isinstance(raw, Mapping):
            raise RegistryError(
                f"download entry `{name}` must be a table with `url` and `sha256`, "
                f"got {type(raw).__name__}",
                entry=str(name),
                hint=_HINT.format(name=name),
            )
        fields = cast("Mapping[str, Any]", raw)  # values are checked by DownloadEntry
        for key in fields:
            if key not in _KEYS:
                raise RegistryError(
                    f"download entry `{name}`: unknown key `{key}` "
                    f"(known keys: {', '.join(_KEYS)})",
                    entry=str(name),
                    hint=_HINT.format(name=name),
                )
        for key in ("url", "sha256"):
            if key not in fields:
                raise RegistryError(
                    f"download entry `{name}`: missing required key `{key}`",
                    entry=str(name),
                    hint=_HINT.format(name=name),
                )
        members = fields.get("members")
        registry[name] = DownloadEntry(
            name=name,
            url=fields["url"],
            sha256=fields["sha256"],
            archive=fields.get("archive"),
            members=tuple(cast("list[Any]", members)) if isinstance(members, list) else members,
            description=fields.get("description"),
        )
    return registry


def lookup(name: str, registry: Registry) -> DownloadEntry:
    """Return the entry called `name`, or raise RegistryError listing the known names."""
    entry = registry.get(name)
    if entry is None:
        known = ", ".join(f"`{n}`" for n in sorted(registry)) or "none"
        raise RegistryError(
            f"no download called `{name}` (known: {known})",
            entry=name,
            hint=f"add `[downloads.{name}]` with `url` and `sha256` to tile.toml",
        )
    if entry.name != name:
        raise RegistryError(
            f"registry key `{name}` holds the entry named `{entry.name}`",
            entry=name,
            hint="build the registry as `{entry.name: entry}`",
        )
    return entry
