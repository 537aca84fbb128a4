"""The manifest's list of files: path, kind, media type, size and sha256 of each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tile_artifacts._documents import ArtifactEntry
from tile_artifacts._paths import (
    MANIFEST_JSON,
    default_description,
    kind_for,
    media_type_for,
    sha256_file,
)

__all__ = ["Digests", "artifact_entries"]

Digests = dict[str, tuple[int, int, str]]
"""Run-relative path -> (size, mtime_ns, sha256) of the last time it was hashed."""


def _digest(path: Path, relpath: str, digests: Digests | None) -> tuple[int, str]:
    """Size and sha256 of a file; with `digests`, an unchanged size and mtime reuse the last."""
    if digests is None:
        return sha256_file(path)
    stat = path.stat()
    known = digests.get(relpath)
    if known is not None and known[:2] == (stat.st_size, stat.st_mtime_ns):
        return stat.st_size, known[2]
    size, digest = sha256_file(path)
    digests[relpath] = (size, stat.st_mtime_ns, digest)
    return size, digest


def artifact_entries(
    run_dir: Path,
    files: Sequence[str],
    descriptions: Mapping[str, str],
    *,
    nested: Sequence[str] = (),
    digests: Digests | None = None,
) -> list[ArtifactEntry]:
    """An entry per file but the manifest and those under a `nested` top-level directory.

    The final manifest hashes every file afresh (`digests=None`); a checkpoint, written after
    every case, trusts size and mtime so that a long run does not rehash its logs each time.
    A file that vanished while listed (another process's temp file) is left out.
    """
    entries: list[ArtifactEntry] = []
    for relpath in files:
        if relpath == MANIFEST_JSON or relpath.split("/", 1)[0] in nested:
            continue
        try:
            size, digest = _digest(run_dir / relpath, relpath, digests)
        except FileNotFoundError:
            continue
        entries.append(
            ArtifactEntry(
                path=relpath,
                kind=kind_for(relpath),
                media_type=media_type_for(relpath),
                size_bytes=size,
                sha256=digest,
                description=descriptions.get(relpath) or default_description(relpath),
            )
        )
    return entries
