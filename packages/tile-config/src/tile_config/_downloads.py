"""`[downloads.NAME]`: pinned assets, each its url, sha256 and how to unpack it."""

from __future__ import annotations

import re
from typing import Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, field_validator, model_validator

from tile_config._strict import STRICT

__all__ = ["ArchiveKind", "DownloadEntry", "check_download_names"]

ArchiveKind = Literal["zip", "tar", "tar.gz"]

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


class DownloadEntry(BaseModel):
    """`[downloads.NAME]`: one pinned asset: url, sha256 and how to unpack it."""

    model_config = STRICT

    url: str
    sha256: str
    archive: ArchiveKind | None = None
    members: list[str] | None = None
    description: str | None = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL")
        return url

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, sha256: str) -> str:
        digest = sha256.strip().lower().removeprefix("sha256:")
        if not _SHA256_RE.fullmatch(digest):
            raise ValueError("must be 64 hexadecimal characters")
        return digest

    @field_validator("members")
    @classmethod
    def _relative_members(cls, members: list[str] | None) -> list[str] | None:
        if members is None:
            return None
        if not members:
            raise ValueError("must list at least one member (or be left out)")
        for member in members:
            parts = member.replace("\\", "/").split("/")
            absolute = member.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", member)
            if not member.strip("/") or absolute or ".." in parts:
                raise ValueError(f"holds `{member}`: members are relative paths without `..`")
        return members

    @model_validator(mode="after")
    def _members_need_archive(self) -> Self:
        if self.members is not None and self.archive is None:
            raise ValueError("`members` needs `archive` to be set")
        return self


def check_download_names(entries: dict[str, DownloadEntry]) -> dict[str, DownloadEntry]:
    for name in entries:
        if not _NAME_RE.fullmatch(name):
            raise ValueError(
                f"has an entry named `{name}`: use letters, digits, `.`, `_`, `-` "
                "(at most 128, starting with a letter or digit)"
            )
    return entries
