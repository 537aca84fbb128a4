"""Confined archive extraction: every member is checked before anything is written.

The check is ours; the writing of a tar is tarfile's, with `filter="data"` as a second line
of defence. pooch's own `Untar`/`Unzip` processors are not used: pooch 1.9 passes
`filter="data"` only on Python 3.12+, so on 3.11 its `Untar` wrote `../`, absolute and
through-a-symlink members outside the cache (3 of the 13 unsafe tars of the tests); it
extracts in place (a kill leaves a half directory that later counts as done); `Unzip`
silently renames `..` and absolute members; and `members` matches by string prefix
(`sub` also selects `subway/`). tarfile's data filter alone still extracts absolute names
(stripped), duplicates, link loops and writes through an archive's own links, and on
Python before 3.11.13 has known bypasses; the check below refuses all of those first.
"""

from __future__ import annotations

import gzip
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from ._errors import ArchiveError, DownloadError, UnsafeArchiveError
from ._registry import DownloadEntry

__all__ = ["extract"]

_MemberKind = Literal["file", "dir", "symlink", "hardlink"]
# Errors of the archive libraries that mean "this archive is broken", never "the disk is full".
_READ_ERRORS = (
    zipfile.BadZipFile,
    tarfile.TarError,
    gzip.BadGzipFile,
    zlib.error,
    EOFError,
    RuntimeError,  # zipfile: encrypted member
    NotImplementedError,  # zipfile: unsupported compression
)
_MAX_LINK_DEPTH = 32
# A zip bomb (a sha-pinned 4 MB zip that unpacks to 4 GiB) is refused before anything is
# written: more than 1 GiB unpacked at more than 200 times the archive's size. Real data
# compresses 2-20x; the cap leaves large honest archives alone.
_BOMB_BYTES = 1 << 30
_BOMB_RATIO = 200


@dataclass(frozen=True, slots=True)
class _Member:
    """One archive member after its name was checked."""

    name: str  # normalized relative posix path
    kind: _MemberKind
    link: str | None  # symlink target (as stored) or hardlink target (normalized)
    executable: bool
    open: Callable[[], IO[bytes]]
    tarinfo: tarfile.TarInfo | None = None  # what tarfile extracts, for a tar member
    size: int = 0  # bytes it unpacks to (a regular file's declared size)


def extract(archive: Path, entry: DownloadEntry, dest: Path) -> Path:
    """Extract `archive` into `dest` (created by an atomic rename), confined to `dest`."""
    assert entry.archive is not None
    unsafe = _unsafe(entry)
    try:
        with _open(archive, entry) as raw:
            members = _check(raw, entry, unsafe)
            selected = _select(members, entry)
            _check_size(archive, entry, selected)
            tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
            try:
                if isinstance(raw, tarfile.TarFile):
                    _write_tar(raw, tmp, selected, unsafe)
                else:
                    _write(tmp, selected, members, unsafe)
                _check_links_on_disk(tmp, unsafe)
                try:
                    tmp.rename(dest)
                except OSError:
                    if not dest.is_dir():
                        raise
                    # Another process finished the same extraction first; theirs is as good.
                    shutil.rmtree(tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    except DownloadError:
        raise
    except _READ_ERRORS as exc:
        raise ArchiveError(
            f"download `{entry.name}`: cannot read the {entry.archive} archive {archive}: {exc}",
            entry=entry.name,
            url=entry.url,
            hint=f"check that `archive = {entry.archive!r}` matches the file at {entry.url}",
        ) from exc
    except OSError as exc:
        raise DownloadError(
            f"download `{entry.name}`: cannot extract into {dest.parent}: {exc}",
            entry=entry.name,
            url=entry.url,
            hint="free disk space or point TILE_CACHE_DIR at a writable directory",
        ) from exc
    return dest


def _check_size(archive: Path, entry: DownloadEntry, selected: list[_Member]) -> None:
    """Refuse an archive whose files would unpack to far more than it holds (a zip bomb).

    The declared sizes are what is written: zipfile stops a member at its declared size (and
    fails its CRC past it), and a tar member's data is its size.
    """
    unpacked = sum(m.size for m in selected if m.kind == "file")
    packed = max(1, archive.stat().st_size)
    if unpacked > _BOMB_BYTES and unpacked > _BOMB_RATIO * packed:
        raise _unsafe(entry)(
            archive.name,
            f"it would unpack to {unpacked / (1 << 30):.1f} GiB from {packed / (1 << 20):.1f} "
            f"MiB ({unpacked / packed:.0f} times its size; tile refuses more than 1 GiB at "
            f"over {_BOMB_RATIO} times)",
        )


def _unsafe(entry: DownloadEntry) -> Callable[[str, str], UnsafeArchiveError]:
    def make(member: str, why: str) -> UnsafeArchiveError:
        return UnsafeArchiveError(
            f"download `{entry.name}`: refusing archive member {member!r}: {why}; "
            "nothing was extracted",
            entry=entry.name,
            url=entry.url,
            hint=f"the archive at {entry.url} is unsafe to unpack; "
            "ask its publisher for a clean one or pin another URL",
        )

    return make


@contextmanager
def _open(archive: Path, entry: DownloadEntry) -> Generator[zipfile.ZipFile | tarfile.TarFile]:
    if entry.archive == "zip":
        with zipfile.ZipFile(archive) as zf:
            yield zf
    else:
        with tarfile.open(archive, mode="r:gz" if entry.archive == "tar.gz" else "r:") as tf:
            yield tf


def _normalize(raw: str, unsafe: Callable[[str, str], UnsafeArchiveError]) -> str:
    if "\0" in raw or "\\" in raw:
        raise unsafe(raw, "the name holds a NUL or backslash")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise unsafe(raw, "absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise unsafe(raw, "`..` component")
    return "/".join(parts)


def _members(
    raw: zipfile.ZipFile | tarfile.TarFile, unsafe: Callable[[str, str], UnsafeArchiveError]
) -> Iterator[_Member]:
    if isinstance(raw, zipfile.ZipFile):
        return _zip_members(raw, unsafe)
    return _tar_members(raw, unsafe)


def _zip_members(
    zf: zipfile.ZipFile, unsafe: Callable[[str, str], UnsafeArchiveError]
) -> Iterator[_Member]:
    """A zip's members; a zip keeps a member's Unix type in the high bits of external_attr."""
    for info in zf.infolist():
        name = _normalize(info.filename, unsafe)
        mode = info.external_attr >> 16
        fmt = stat.S_IFMT(mode)
        opener = _zip_opener(zf, info)
        if info.is_dir() or fmt == stat.S_IFDIR:
            yield _Member(name, "dir", None, False, opener)
        elif fmt == stat.S_IFLNK:
            with zf.open(info) as f:
                target = f.read(4096).decode("utf-8", "surrogateescape")
            yield _Member(name, "symlink", target, False, opener)
        elif fmt in (0, stat.S_IFREG):
            yield _Member(name, "file", None, bool(mode & 0o111), opener, size=info.file_size)
        else:
            raise unsafe(info.filename, "device file or other special file")


def _tar_members(
    raw: tarfile.TarFile, unsafe: Callable[[str, str], UnsafeArchiveError]
) -> Iterator[_Member]:
    """A tar's members; a hard link's target is a member name, checked like one."""
    for info in raw.getmembers():
        name = _normalize(info.name, unsafe)
        opener = _tar_opener(raw, info)
        if info.isreg():
            yield _Member(name, "file", None, bool(info.mode & 0o111), opener, info, info.size)
        elif info.isdir():
            yield _Member(name, "dir", None, False, opener, info)
        elif info.issym():
            yield _Member(name, "symlink", info.linkname, False, opener, info)
        elif info.islnk():
            try:
                target = _normalize(info.linkname, unsafe)
            except UnsafeArchiveError:
                raise unsafe(
                    info.name, f"hard link to {info.linkname!r} leaves the directory"
                ) from None
            yield _Member(name, "hardlink", target, False, opener, info)
        else:
            raise unsafe(info.name, "device file, FIFO or other special file")


def _zip_opener(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    return lambda: zf.open(info)


def _tar_opener(tf: tarfile.TarFile, info: tarfile.TarInfo) -> Callable[[], IO[bytes]]:
    def open_member() -> IO[bytes]:
        f = tf.extractfile(info)
        if f is None:
            raise ArchiveError(f"archive member {info.name!r} has no data")
        return f

    return open_member


def _check(
    raw: zipfile.ZipFile | tarfile.TarFile,
    entry: DownloadEntry,
    unsafe: Callable[[str, str], UnsafeArchiveError],
) -> dict[str, _Member]:
    """Check every member (names, types, links) and index them by normalized name."""
    members: dict[str, _Member] = {}
    for m in _members(raw, unsafe):
        if not m.name:
            continue  # "./" itself
        old = members.get(m.name)
        if old is not None and not (old.kind == m.kind == "dir"):
            raise unsafe(m.name, "the archive holds this path twice")
        members[m.name] = m
    links = {n: m.link for n, m in members.items() if m.kind == "symlink" and m.link is not None}
    for name, m in members.items():
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in links:
                raise unsafe(name, "its path passes through a symbolic link")
        if m.kind == "symlink":
            target = m.link or ""
            if not target or target.startswith("/") or "\0" in target:
                raise unsafe(name, f"symbolic link to absolute or empty path {target!r}")
            if _resolve([*parts[:-1], *target.split("/")], links, 0) is None:
                raise unsafe(name, f"symbolic link {target!r} points outside the directory")
        elif m.kind == "hardlink":
            target_member = members.get(m.link or "")
            if target_member is None or target_member.kind != "file":
                raise unsafe(name, f"hard link to {m.link!r}, not a regular file of the archive")
    if not members:
        raise ArchiveError(
            f"download `{entry.name}`: the archive is empty",
            entry=entry.name,
            url=entry.url,
            hint=f"check the URL {entry.url}",
        )
    return members


def _resolve(parts: list[str], links: dict[str, str], depth: int) -> list[str] | None:
    """Follow `parts` through the archive's own symlinks; None when it leaves the root."""
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                return None
            out.pop()
            continue
        out.append(part)
        target = links.get("/".join(out))
        if target is not None:
            if depth >= _MAX_LINK_DEPTH or target.startswith("/"):
                return None  # a loop or an absolute hop counts as an escape
            resolved = _resolve([*out[:-1], *target.split("/")], links, depth + 1)
            if resolved is None:
                return None
            out = resolved
    return out


def _select(members: dict[str, _Member], entry: DownloadEntry) -> list[_Member]:
    if entry.members is None:
        return list(members.values())
    chosen: dict[str, _Member] = {}
    for wanted in entry.members:
        hits = [m for n, m in members.items() if n == wanted or n.startswith(wanted + "/")]
        if not hits:
            raise ArchiveError(
                f"download `{entry.name}`: member {wanted!r} is not in the archive "
                f"({len(members)} members)",
                entry=entry.name,
                url=entry.url,
                hint=f"fix `members` of the entry `{entry.name}`",
            )
        chosen.update((m.name, m) for m in hits)
    return list(chosen.values())


def _write_tar(
    tf: tarfile.TarFile,
    root: Path,
    selected: list[_Member],
    unsafe: Callable[[str, str], UnsafeArchiveError],
) -> None:
    """Write checked tar members with tarfile itself, its `data` filter on (PEP 706)."""
    if not hasattr(tarfile, "data_filter"):  # Python 3.11.0-3.11.3
        raise DownloadError(
            "extracting a tar archive needs Python 3.11.4 or newer (tarfile's data filter)",
            hint="install a newer Python 3.11, or 3.12+",
        )
    # A hard link whose target `members` left out gets the target's data (tarfile's fallback).
    infos = [m.tarinfo for m in selected if m.tarinfo is not None]
    try:
        tf.extractall(root, members=infos, filter="data")
    except tarfile.FilterError as exc:
        raise unsafe(exc.tarinfo.name, f"tarfile's data filter refused it ({exc})") from exc


def _write(
    root: Path,
    selected: list[_Member],
    members: dict[str, _Member],
    unsafe: Callable[[str, str], UnsafeArchiveError],
) -> None:
    real_root = os.path.realpath(root)
    # Links last, so no file is ever written through a link the archive made.
    for m in sorted(selected, key=lambda m: m.kind == "symlink"):
        path = root / m.name
        if m.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(os.path.realpath(path.parent), real_root):
            raise unsafe(m.name, "its directory resolves outside the target")
        if m.kind == "symlink":
            path.symlink_to(m.link or "")
            continue
        source = members[m.link or ""] if m.kind == "hardlink" else m
        # "xb" never follows or replaces an existing path.
        with source.open() as src, path.open("xb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        if source.executable:
            path.chmod(0o755)


def _check_links_on_disk(root: Path, unsafe: Callable[[str, str], UnsafeArchiveError]) -> None:
    """Second line of defence: every link on disk must resolve inside `root`."""
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in (*dirnames, *filenames):
            p = Path(dirpath, n)
            if p.is_symlink() and not _inside(os.path.realpath(p), real_root):
                raise unsafe(p.relative_to(root).as_posix(), "symbolic link resolves outside")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)
