"""fetch against a real local HTTP server: cache reuse, checksums, failures, offline mode."""

from __future__ import annotations

import hashlib
import pickle
import socket
from pathlib import Path

import pytest

import tile_downloads as td

from .conftest import Server

BODY = b"tile test data\n" * 5000  # ~73 KB: a few chunks


def files_under(path: Path) -> list[Path]:
    """Every file and link under `path`."""
    if not path.exists():
        return []
    return sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())


def assert_ours(exc: BaseException) -> None:
    """Only tile_downloads exceptions may reach callers."""
    assert type(exc).__module__.startswith("tile_downloads"), type(exc)
    assert isinstance(exc, td.DownloadError)
    assert isinstance(exc, OSError)


def test_first_fetch_downloads_then_cache_hit_makes_no_request(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    first = td.fetch("weights", reg, cache_dir=cache)
    assert first.read_bytes() == BODY
    assert first.is_relative_to(cache)
    assert server.counts["/weights.bin"] == 1
    second = td.fetch("weights", reg, cache_dir=cache)
    assert second == first
    assert server.counts["/weights.bin"] == 1
    assert files_under(cache) == [first]  # no temp files left beside it


def test_progress_reports_start_chunks_and_exact_end(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    calls: list[tuple[str, int, int | None]] = []

    def record(name: str, downloaded: int, total: int | None, /) -> None:
        calls.append((name, downloaded, total))

    td.fetch("weights", reg, cache_dir=cache, progress=record)
    assert calls[0] == ("weights", 0, len(BODY))
    assert calls[-1] == ("weights", len(BODY), len(BODY))
    done = [c[1] for c in calls]
    assert done == sorted(done)
    assert all(c[2] == len(BODY) and c[1] <= len(BODY) for c in calls)
    calls.clear()
    td.fetch("weights", reg, cache_dir=cache, progress=record)
    assert calls == []  # cache hit


def test_sha256_mismatch_raises_and_leaves_no_file(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY, sha256="ab" * 32)
    with pytest.raises(td.ChecksumError) as info:
        td.fetch("weights", reg, cache_dir=cache)
    err = info.value
    assert_ours(err)
    assert "`weights`" in str(err)
    assert reg["weights"].url in str(err)
    assert err.expected == "ab" * 32
    assert err.actual == hashlib.sha256(BODY).hexdigest()
    assert err.hint and "sha256" in err.hint
    assert files_under(cache) == []


@pytest.mark.parametrize(
    ("status", "word", "tries"),
    [(404, "Not Found", 1), (500, "Internal Server Error", 2), (503, "Service Unavailable", 2)],
)
def test_http_errors_name_status_and_leave_nothing(
    server: Server, cache: Path, status: int, word: str, tries: int
) -> None:
    reg = server.entry("weights", b"nope", status=status)
    with pytest.raises(td.TransferError) as info:
        td.fetch("weights", reg, cache_dir=cache, retries=1)
    err = info.value
    assert_ours(err)
    assert err.status_code == status
    assert f"HTTP {status} {word}" in str(err)
    assert "`weights`" in str(err) and reg["weights"].url in str(err)
    assert err.entry == "weights" and err.url == reg["weights"].url
    assert err.hint
    # A server error may pass and is tried again; a refusal (404) will not and is not.
    assert server.counts["/weights.bin"] == tries
    assert ("(2 attempts)" in str(err)) == (tries == 2)
    assert files_under(cache) == []


def test_transfer_cut_mid_body_leaves_no_partial_file(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY, cut=True)
    with pytest.raises(td.TransferError) as info:
        td.fetch("weights", reg, cache_dir=cache, timeout=5, retries=0)
    assert_ours(info.value)
    assert "`weights`" in str(info.value)
    assert server.counts["/weights.bin"] == 1
    assert files_under(cache) == []


def test_a_dropped_transfer_is_retried_by_pooch(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY, flaky=1)
    seen: list[tuple[int, int | None]] = []
    path = td.fetch(
        "weights", reg, cache_dir=cache, timeout=5, progress=lambda _, d, t: seen.append((d, t))
    )
    assert path.read_bytes() == BODY
    assert server.counts["/weights.bin"] == 2
    assert seen[-1] == (len(BODY), len(BODY))
    # Nothing of the dropped attempt is left beside the file.
    assert files_under(cache) == [path]


def test_unreachable_server_is_a_transfer_error(cache: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reg = {"w": td.DownloadEntry("w", f"http://127.0.0.1:{port}/w.bin", "0" * 64)}
    with pytest.raises(td.TransferError) as info:
        td.fetch("w", reg, cache_dir=cache, timeout=5, retries=0)
    assert_ours(info.value)
    assert "could not connect" in str(info.value)
    assert files_under(cache) == []


def test_corrupted_cache_file_is_downloaded_again(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    path = td.fetch("weights", reg, cache_dir=cache)
    path.write_bytes(b"bit rot")
    assert td.fetch("weights", reg, cache_dir=cache).read_bytes() == BODY
    assert server.counts["/weights.bin"] == 2


def test_new_pin_gets_a_new_cache_path(server: Server, cache: Path) -> None:
    old = td.fetch("weights", server.entry("weights", b"v1"), cache_dir=cache)
    new = td.fetch("weights", server.entry("weights", b"v2"), cache_dir=cache)
    assert old != new
    assert (old.read_bytes(), new.read_bytes()) == (b"v1", b"v2")


def test_tile_cache_dir_env_is_read_at_call_time(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = server.entry("weights", BODY)
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "from-env"))
    path = td.fetch("weights", reg)
    assert path.is_relative_to(tmp_path / "from-env")
    assert td.resolve_cache_dir() == tmp_path / "from-env"
    # The argument wins over the environment.
    explicit = td.fetch("weights", reg, cache_dir=tmp_path / "explicit")
    assert explicit.is_relative_to(tmp_path / "explicit")


def test_default_cache_dir_is_the_user_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert td.resolve_cache_dir().is_relative_to(tmp_path / "xdg")


def test_offline_without_cached_file_fails_without_a_request(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    with pytest.raises(td.OfflineError) as info:
        td.fetch("weights", reg, cache_dir=cache, offline=True)
    err = info.value
    assert_ours(err)
    assert "`weights`" in str(err)
    assert err.hint and "`tile fetch weights`" in err.hint
    assert server.counts["/weights.bin"] == 0


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_offline_from_env_uses_the_cache(
    server: Server, cache: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    reg = server.entry("weights", BODY)
    path = td.fetch("weights", reg, cache_dir=cache)
    monkeypatch.setenv("TILE_OFFLINE", value)
    assert td.fetch("weights", reg, cache_dir=cache) == path
    assert server.counts["/weights.bin"] == 1
    # offline=False overrides the environment.
    path.unlink()
    assert td.fetch("weights", reg, cache_dir=cache, offline=False).read_bytes() == BODY
    assert server.counts["/weights.bin"] == 2


def test_offline_with_corrupted_cache_fails_without_a_request(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    td.fetch("weights", reg, cache_dir=cache).write_bytes(b"bit rot")
    with pytest.raises(td.ChecksumError) as info:
        td.fetch("weights", reg, cache_dir=cache, offline=True)
    assert info.value.hint and "`tile fetch weights`" in info.value.hint
    assert server.counts["/weights.bin"] == 1


def test_bad_tile_offline_value_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILE_OFFLINE", "maybe")
    with pytest.raises(td.DownloadError, match="TILE_OFFLINE='maybe'"):
        td.resolve_offline()
    monkeypatch.setenv("TILE_OFFLINE", "no")
    assert td.resolve_offline() is False


def test_unknown_name_lists_known_ones(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    with pytest.raises(td.RegistryError, match=r"no download called `other` \(known: `weights`\)"):
        td.fetch("other", reg, cache_dir=cache)


def test_unwritable_cache_is_a_download_error(server: Server, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    reg = server.entry("weights", BODY)
    with pytest.raises(td.DownloadError) as info:
        td.fetch("weights", reg, cache_dir=blocker)
    assert_ours(info.value)
    assert info.value.hint and "TILE_CACHE_DIR" in info.value.hint


def test_cached_info_before_and_after(server: Server, cache: Path) -> None:
    reg = server.entry("weights", BODY)
    before = td.cached_info("weights", reg, cache_dir=cache)
    assert (before.cached, before.size_bytes) == (False, None)
    assert before.url == reg["weights"].url and before.sha256 == reg["weights"].sha256
    path = td.fetch("weights", reg, cache_dir=cache)
    after = td.cached_info("weights", reg, cache_dir=cache)
    assert (after.cached, after.size_bytes, after.path) == (True, len(BODY), path)
    assert server.counts["/weights.bin"] == 1


def test_file_records_of_a_file_and_a_directory(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "b.txt").write_bytes(b"b")
    (tmp_path / "d" / "sub" / "a.txt").write_bytes(b"aa")
    (tmp_path / "d" / "link").symlink_to("b.txt")
    [one] = td.file_records(tmp_path / "d" / "b.txt")
    assert one.to_dict() == {
        "path": str(tmp_path / "d" / "b.txt"),
        "size_bytes": 1,
        "sha256": hashlib.sha256(b"b").hexdigest(),
    }
    records = td.file_records(tmp_path / "d")
    assert [r.path.name for r in records] == ["b.txt", "a.txt"]
    assert [r.size_bytes for r in records] == [1, 2]
    with pytest.raises(td.DownloadError, match="cannot fingerprint"):
        td.file_records(tmp_path / "missing")


def test_errors_pickle_with_their_fields() -> None:
    err = td.ChecksumError("m", entry="e", url="u", hint="h", expected="x", actual="y")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.entry, back.hint, back.actual) == (
        td.ChecksumError,
        "m",
        "e",
        "h",
        "y",
    )


def test_a_trickling_server_meets_the_deadline_of_the_whole_transfer(
    server: Server, cache: Path
) -> None:
    # One byte every 0.2 s: each read comes well within the 30 s timeout, forever.
    url = server.add("/slow.bin", BODY, trickle=0.2)
    reg = {"slow": td.DownloadEntry("slow", url, hashlib.sha256(BODY).hexdigest())}
    with pytest.raises(td.TransferError) as info:
        td.fetch("slow", reg, cache_dir=cache, deadline=1.0)
    err = info.value
    assert_ours(err)
    assert "did not finish within its deadline of 1 s" in str(err)
    assert f"of {len(BODY)} bytes arrived" in str(err)
    assert err.hint and "--deadline" in err.hint
    assert files_under(cache) == []  # the partial download is gone


def test_retries_stay_inside_the_deadline(server: Server, cache: Path) -> None:
    # pooch waits 1 s before a retry, past this 0.5 s deadline: the retry is not made, and the
    # error says the deadline ended it, not the server's 503.
    reg = server.entry("weights", b"busy", status=503)
    with pytest.raises(td.TransferError) as info:
        td.fetch("weights", reg, cache_dir=cache, retries=2, deadline=0.5)
    err = info.value
    assert_ours(err)
    assert "did not finish within its deadline of 0.5 s (before another attempt)" in str(err)
    assert server.counts["/weights.bin"] == 1
    assert files_under(cache) == []
