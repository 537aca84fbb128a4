"""Why a persistent-cache key missed, judged against real cache directories on disk."""

from __future__ import annotations

from pathlib import Path

from tile_runner._cache_log import explain_miss

PARTS = {
    "computation": "a" * 64,
    "jax_lib version": "b" * 64,
    "XLA flags": "c" * 64,
    "compile_options": "d" * 64,
}


def _key(digit: str) -> str:
    return "jit_k-" + digit * 64


def _cache(tmp_path: Path, *keys: str) -> Path:
    for key in keys:
        (tmp_path / f"{key}-cache").write_bytes(b"x")
    (tmp_path / f"jit_kk-{'9' * 64}-cache").write_bytes(b"x")  # another module, same prefix
    return tmp_path


def test_nothing_of_the_module_cached_is_a_new_program(tmp_path: Path) -> None:
    why = explain_miss(_cache(tmp_path), "jit_k", _key("1"), PARTS, {})
    assert why.code == "new_program" and "first compile" in str(why.reason)


def test_a_key_tile_saw_written_but_gone_was_evicted(tmp_path: Path) -> None:
    why = explain_miss(_cache(tmp_path), "jit_k", _key("1"), PARTS, {_key("1"): PARTS})
    assert why.code == "evicted"


def test_the_entry_present_but_missed_is_unreadable(tmp_path: Path) -> None:
    why = explain_miss(_cache(tmp_path, _key("1")), "jit_k", _key("1"), PARTS, {})
    assert why.code == "unreadable"


def test_changed_parts_are_named_against_the_nearest_key(tmp_path: Path) -> None:
    flags = {**PARTS, "XLA flags": "e" * 64}
    shape = {**PARTS, "computation": "f" * 64}
    both = {**PARTS, "computation": "f" * 64, "jax_lib version": "0" * 64}
    index = {_key("2"): shape, _key("3"): flags, _key("4"): both}
    why = explain_miss(_cache(tmp_path, *index), "jit_k", _key("1"), PARTS, index)
    # One part away each: the same program under other flags explains more than a new shape.
    assert why.code == "key_changed" and why.differs == ["XLA flags"]
    assert "3 other key(s)" in str(why.reason)
    why = explain_miss(_cache(tmp_path), "jit_k", _key("1"), PARTS, {_key("4"): both})
    assert why.differs == ["computation", "jax_lib version"]


def test_cached_keys_without_recorded_parts_are_changed_somewhere(tmp_path: Path) -> None:
    why = explain_miss(_cache(tmp_path, _key("2")), "jit_k", _key("1"), PARTS, {})
    assert why.code == "key_changed" and why.differs == []
    assert "no parts" in str(why.reason)


def test_keys_logged_by_threads_at_once_keep_their_own_parts(tmp_path: Path) -> None:
    """The kernel and its reference compile on two threads; their log lines interleave."""
    import json
    import logging

    from tile_protocol import CacheEvent
    from tile_runner._cache_log import INDEX_NAME, CacheLogWatcher

    sent: list[CacheEvent] = []
    watcher = CacheLogWatcher(tmp_path, sent.append)
    other = {**PARTS, "XLA flags": "e" * 64}

    def log(message: str, thread: int) -> None:
        record = logging.LogRecord("jax", logging.DEBUG, __file__, 1, message, None, None)
        record.thread = thread
        watcher.emit(record)

    for (part, mine), theirs in zip(PARTS.items(), other.values(), strict=True):
        log(f"get_cache_key hash of serialized {part}: {mine}", 1)
        log(f"get_cache_key hash of serialized {part}: {theirs}", 2)
    log(f"PERSISTENT COMPILATION CACHE MISS for 'jit_k' with key '{_key('1')}'", 2)
    log(f"PERSISTENT COMPILATION CACHE MISS for 'jit_r' with key '{_key('2')}'", 1)
    log(f"Writing jit_k to persistent compilation cache with key '{_key('1')}'", 2)
    log(f"Writing jit_r to persistent compilation cache with key '{_key('2')}'", 1)
    index = [json.loads(line) for line in (tmp_path / INDEX_NAME).read_text().splitlines()]
    assert {r["key"]: r["parts"] for r in index} == {_key("1"): other, _key("2"): PARTS}
    assert [(e.event, e.module, e.key) for e in sent] == [
        ("miss", "jit_k", _key("1")),
        ("miss", "jit_r", _key("2")),
    ]
    log("Persistent compilation cache hit for 'jit_k' with key '" + _key("1") + "'", 1)
    assert sent[-1] == CacheEvent(event="hit", module="jit_k", key=_key("1"))
