"""Archive entries: zip/tar/tar.gz extraction, member selection, refusal of unsafe archives."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

import tile_downloads as td

from .conftest import Server

# Levels from tmp_path down to the temporary extraction directory:
# cache/downloads/<name>/<sha16>/.extracted-XXXX
_DEPTH = 5
UP = "../" * _DEPTH


def files_under(path: Path) -> list[Path]:
    """Every file and link under `path`."""
    if not path.exists():
        return []
    return sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())


def make_zip(*members: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


def zip_symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # unix, so the mode bits count
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def tar_member(
    name: str,
    data: bytes = b"",
    *,
    kind: bytes = tarfile.REGTYPE,
    link: str = "",
    mode: int = 0o644,
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = mode
    if kind == tarfile.REGTYPE:
        info.size = len(data)
        return info, data
    return info, None


def make_tar(*members: tuple[tarfile.TarInfo, bytes | None], gz: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_zip_is_extracted_and_reused_without_requests(server: Server, cache: Path) -> None:
    body = make_zip(("data/a.txt", b"alpha"), ("data/sub/b.bin", b"\x00\x01"), ("data/empty/", b""))
    reg = server.entry("ds", body, archive="zip")
    out = td.fetch("ds", reg, cache_dir=cache)
    assert out.is_dir()
    assert (out / "data" / "a.txt").read_bytes() == b"alpha"
    assert (out / "data" / "sub" / "b.bin").read_bytes() == b"\x00\x01"
    assert (out / "data" / "empty").is_dir()
    assert td.fetch("ds", reg, cache_dir=cache) == out
    assert td.fetch("ds", reg, cache_dir=cache, offline=True) == out
    assert server.counts["/ds.bin"] == 1
    # No temporary extraction directory is left beside the result.
    assert sorted(p.name for p in out.parent.iterdir()) == ["download", "extracted"]


def test_tar_gz_with_exec_bit_and_inner_links(server: Server, cache: Path) -> None:
    body = make_tar(
        tar_member("pkg", kind=tarfile.DIRTYPE, mode=0o755),
        tar_member("pkg/run.sh", b"#!/bin/sh\n", mode=0o755),
        tar_member("pkg/data.txt", b"payload"),
        tar_member("pkg/alias.txt", kind=tarfile.SYMTYPE, link="data.txt"),
        tar_member("pkg/copy.txt", kind=tarfile.LNKTYPE, link="pkg/data.txt"),
        tar_member("top", kind=tarfile.SYMTYPE, link="pkg"),
    )
    out = td.fetch("ds", server.entry("ds", body, archive="tar.gz"), cache_dir=cache)
    assert (out / "pkg" / "alias.txt").read_bytes() == b"payload"
    assert (out / "pkg" / "alias.txt").is_symlink()
    assert (out / "pkg" / "copy.txt").read_bytes() == b"payload"
    assert (out / "top" / "data.txt").read_bytes() == b"payload"
    assert (out / "pkg" / "run.sh").stat().st_mode & 0o100
    assert not (out / "pkg" / "data.txt").stat().st_mode & 0o100


def test_tar_members_are_written_by_tarfiles_data_filter(server: Server, cache: Path) -> None:
    body = make_tar(
        tar_member("setuid", b"s", mode=0o4777),
        tar_member("left_out", b"p"),
        tar_member("sub", kind=tarfile.DIRTYPE, mode=0o755),
        tar_member("sub/private", b"q", mode=0o700),
        tar_member("sub/copy", kind=tarfile.LNKTYPE, link="left_out"),
    )
    reg = server.entry("ds", body, archive="tar.gz", members=("setuid", "sub"))
    out = td.fetch("ds", reg, cache_dir=cache)
    # The filter clears setuid and group/other write, and keeps the rest of the archive's mode
    # (0o700 stays 0o700: nothing of ours widens it).
    assert stat.S_IMODE((out / "setuid").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "sub" / "private").stat().st_mode) == 0o700
    # A hard link whose target was not selected gets the target's data, not the target.
    assert (out / "sub" / "copy").read_bytes() == b"p"
    assert not (out / "left_out").exists()


def test_plain_tar(server: Server, cache: Path) -> None:
    body = make_tar(tar_member("./x.txt", b"x"), gz=False)
    out = td.fetch("ds", server.entry("ds", body, archive="tar"), cache_dir=cache)
    assert (out / "x.txt").read_bytes() == b"x"


def test_members_restrict_what_is_extracted(server: Server, cache: Path) -> None:
    body = make_zip(("a.txt", b"a"), ("sub/b.txt", b"b"), ("sub/c.txt", b"c"), ("z.txt", b"z"))
    reg = server.entry("ds", body, archive="zip", members=("sub", "z.txt"))
    out = td.fetch("ds", reg, cache_dir=cache)
    got = sorted(p.relative_to(out).as_posix() for p in files_under(out))
    assert got == ["sub/b.txt", "sub/c.txt", "z.txt"]
    # The whole archive is a different extraction of the same download.
    full = td.fetch("ds", server.entry("ds", body, archive="zip"), cache_dir=cache)
    assert full != out and (full / "a.txt").exists()
    assert server.counts["/ds.bin"] == 1


def test_missing_member_is_named(server: Server, cache: Path) -> None:
    body = make_zip(("a.txt", b"a"))
    reg = server.entry("ds", body, archive="zip", members=("a.txt", "nope/b.txt"))
    with pytest.raises(td.ArchiveError, match=r"member 'nope/b.txt' is not in the archive") as info:
        td.fetch("ds", reg, cache_dir=cache)
    assert info.value.entry == "ds" and info.value.hint
    assert files_under(cache) == []


def test_archive_of_the_wrong_kind_is_an_archive_error(server: Server, cache: Path) -> None:
    body = make_tar(tar_member("x.txt", b"x"))
    with pytest.raises(td.ArchiveError) as info:
        td.fetch("ds", server.entry("ds", body, archive="zip"), cache_dir=cache)
    assert not isinstance(info.value, td.UnsafeArchiveError)
    assert type(info.value).__module__.startswith("tile_downloads")
    assert "`ds`" in str(info.value) and info.value.hint and "archive" in info.value.hint
    assert files_under(cache) == []


def test_cached_archive_is_extracted_offline(server: Server, cache: Path) -> None:
    reg = server.entry("ds", make_zip(("a.txt", b"a")), archive="zip")
    out = td.fetch("ds", reg, cache_dir=cache)
    for p in files_under(out):
        p.unlink()
    out.rmdir()
    assert td.cached_info("ds", reg, cache_dir=cache).cached
    assert (td.fetch("ds", reg, cache_dir=cache, offline=True) / "a.txt").read_bytes() == b"a"
    assert server.counts["/ds.bin"] == 1


Builder = Callable[[Path], tuple[td.ArchiveKind, bytes]]


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> Builder:
    return lambda _: ("tar.gz", make_tar(*members))


def _symlink(name: str, target: str) -> tuple[tarfile.TarInfo, bytes | None]:
    return tar_member(name, kind=tarfile.SYMTYPE, link=target)


# case -> (the reason the pre-extraction check must give, archive builder)
UNSAFE: dict[str, tuple[str, Builder]] = {
    "tar ..": ("`..` component", _tar(tar_member(UP + "evil", b"!"))),
    "tar absolute": (
        "absolute path",
        lambda tmp: ("tar.gz", make_tar(tar_member(str(tmp / "evil"), b"!"))),
    ),
    "zip ..": ("`..` component", lambda _: ("zip", make_zip((UP + "evil", b"!")))),
    "zip absolute": (
        "absolute path",
        lambda tmp: ("zip", make_zip((str(tmp / "evil"), b"!"))),
    ),
    "tar symlink out": ("points outside", _tar(_symlink("link", UP + "outside"))),
    "tar symlink absolute": (
        "link to absolute",
        lambda tmp: ("tar.gz", make_tar(_symlink("link", str(tmp)))),
    ),
    "zip symlink out": (
        "points outside",
        lambda _: ("zip", make_zip(zip_symlink("link", UP + "outside"))),
    ),
    "tar write through link": (
        "points outside",
        _tar(_symlink("up", UP.rstrip("/")), tar_member("up/evil", b"!")),
    ),
    "tar write through inner link": (
        "passes through a symbolic link",
        _tar(
            tar_member("sub", kind=tarfile.DIRTYPE), _symlink("l", "sub"), tar_member("l/x", b"!")
        ),
    ),
    "tar link chain": (
        "points outside",
        _tar(_symlink("b", "."), _symlink("a", "b/" + UP + "evil")),
    ),
    # Each link looks inside on its own; following `b` first makes `a` climb out.
    "tar link via link": ("points outside", _tar(_symlink("b", "."), _symlink("a", "b/../evil"))),
    "tar link loop": ("points outside", _tar(_symlink("a", "b"), _symlink("b", "a/x"))),
    "tar hardlink out": (
        "hard link to",
        _tar(tar_member("h", kind=tarfile.LNKTYPE, link=UP + "etc/passwd")),
    ),
    "tar duplicate": ("holds this path twice", _tar(tar_member("x", b"1"), tar_member("x", b"2"))),
    "tar device": ("device file", _tar(tar_member("dev", kind=tarfile.CHRTYPE))),
    "tar fifo": (
        "FIFO",
        lambda _: ("tar", make_tar(tar_member("fifo", kind=tarfile.FIFOTYPE), gz=False)),
    ),
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_archives_are_refused_and_leave_nothing(
    server: Server, tmp_path: Path, cache: Path, case: str
) -> None:
    reason, build = UNSAFE[case]
    kind, body = build(tmp_path)
    # Safe members before the bad one must not be written either.
    if kind != "zip":
        body = _prepend_safe(kind, body)
    reg = server.entry("bad", body, archive=kind)
    with pytest.raises(td.UnsafeArchiveError) as info:
        td.fetch("bad", reg, cache_dir=cache)
    err = info.value
    assert isinstance(err, td.DownloadError)
    assert "`bad`" in str(err) and "refusing archive member" in str(err)
    assert reason in str(err)  # refused by the check before extraction
    assert err.url == reg["bad"].url and err.hint
    assert files_under(tmp_path) == []  # nothing outside, nothing in the cache


def _prepend_safe(kind: td.ArchiveKind, body: bytes) -> bytes:
    """Rebuild a tar with a harmless file first."""
    with tarfile.open(fileobj=io.BytesIO(body)) as tf:
        members = [(m, _data(tf, m)) for m in tf.getmembers()]
    return make_tar(tar_member("first.txt", b"first"), *members, gz=kind == "tar.gz")


def _data(tf: tarfile.TarFile, member: tarfile.TarInfo) -> bytes | None:
    """A regular member's bytes; None for every other kind."""
    if not member.isreg():
        return None
    data = tf.extractfile(member)
    assert data is not None  # extractfile gives a file object for every regular member
    return data.read()


def test_upward_names_would_have_landed_in_tmp_path(tmp_path: Path) -> None:
    """Guard the fixture: UP from the extraction directory reaches tmp_path exactly."""
    extraction = tmp_path / "cache" / "downloads" / "bad" / "0123456789abcdef" / ".extracted-x"
    assert (extraction / UP / "evil").resolve() == tmp_path / "evil"


def test_a_zip_bomb_is_refused_before_anything_is_written(
    server: Server, tmp_path: Path, cache: Path
) -> None:
    # 1.1 GiB of zeros deflates to about 1 MiB: over 1 GiB unpacked at ~1000x its size.
    buf = io.BytesIO()
    chunk = bytes(16 << 20)
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("readme.txt", b"small and honest")
        with zf.open("zeros.bin", "w", force_zip64=True) as member:
            for _ in range(70):
                member.write(chunk)
    reg = server.entry("bomb", buf.getvalue(), archive="zip")
    with pytest.raises(td.UnsafeArchiveError) as info:
        td.fetch("bomb", reg, cache_dir=cache)
    message = str(info.value)
    assert "would unpack to 1.1 GiB" in message and "times its size" in message, message
    assert [p for p in files_under(tmp_path) if p.suffix != ".zip"] == []  # nothing unpacked
