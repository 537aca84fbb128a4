"""Why JAX's persistent compilation cache missed, read from JAX's own log as it is written.

JAX 0.10 and 0.11 report every persistent-cache lookup through `logging`, at DEBUG:

- `jax._src.cache_key`: `get_cache_key hash of serialized <part>: <sha256>` for each of the
  eight parts hashed into the key (computation, jax_lib version, backend version, XLA flags,
  compile_options, accelerator_config, compression, custom_hook);
- `jax._src.compiler`: `PERSISTENT COMPILATION CACHE MISS for '<module>' with key '<key>'`,
  `Persistent compilation cache hit for ...`, and `Not writing persistent cache entry for
  '<module>' because ...` (host callbacks, too quick to compile);
- `jax._src.compilation_cache`: `Writing <module> to persistent compilation cache with key
  '<key>'` and `Not writing persistent cache entry with key ... since ...`.

The flag `jax_explain_cache_misses` only raises the miss line to WARNING (and explains
misses of the in-memory tracing cache, which every ahead-of-time compile of a new function
has); it never says why a key is new. The parts do: tile keeps the parts of every key it saw
written in `tile-key-parts.jsonl` beside the entries, and a miss is explained against the
nearest cached key of the same module. Each lookup goes to the CLI as a `CacheEvent`.
Watching costs JAX a second hash of each part, so it runs only when the request asks
(`RunRequest.cache_explain`, set by `tile bench --cache-report`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from tile_protocol import CacheEvent

__all__ = [
    "INDEX_NAME",
    "CacheLogWatcher",
    "explain_miss",
    "watch_cache_log",
]

INDEX_NAME: Final = "tile-key-parts.jsonl"
# What each part of JAX's cache key stands for, in the reasons people read.
_PART_WORDS: Final = {
    "computation": "the program (shapes, dtypes or code)",
    "jax_lib version": "the jaxlib version",
    "backend version": "the backend version (driver or plugin)",
    "compile_options": "compile options",
    "accelerator_config": "the devices",
}
_LOGGERS: Final = ("jax._src.cache_key", "jax._src.compiler", "jax._src.compilation_cache")
_PART = re.compile(r"^get_cache_key hash of serialized (?P<part>.+): (?P<hash>[0-9a-f]{64})$")
_MISS = re.compile(
    r"^PERSISTENT COMPILATION CACHE MISS for '(?P<module>[^']+)' with key '(?P<key>[^']+)'"
)
_HIT = re.compile(
    r"^Persistent compilation cache hit for '(?P<module>[^']+)' with key '(?P<key>[^']+)'"
)
_WRITE = re.compile(
    r"^Writing (?P<module>\S+) to persistent compilation cache with key '(?P<key>[^']+)'"
)
_NOT_WRITTEN = re.compile(
    r"^Not writing persistent cache entry (?:for '(?P<module>[^']+)' )?(?P<why>.*)$"
)


def _entry_keys(cache_dir: Path, module: str) -> list[str]:
    """The keys of `module`'s executables in the cache: files `<module>-<sha256>-cache`."""
    pattern = re.compile(rf"^{re.escape(module)}-[0-9a-f]{{64}}-cache$")
    try:
        names = [p.name for p in cache_dir.iterdir() if pattern.match(p.name)]
    except OSError:
        return []
    return sorted(name.removesuffix("-cache") for name in names)


def explain_miss(
    cache_dir: Path,
    module: str,
    key: str,
    parts: Mapping[str, str],
    index: Mapping[str, dict[str, str]],
) -> CacheEvent:
    """The miss of `key`, with why: the reason code, a sentence, and the key parts that changed.

    `index` holds the parts of keys tile saw written; a cached key without parts there (it
    was written before tile watched) can only be said to differ somewhere.
    """
    keys = _entry_keys(cache_dir, module)
    miss = functools.partial(CacheEvent, event="miss", module=module, key=key)
    if key in keys:
        return miss(code="unreadable", reason="the entry is in the cache but JAX could not "
                    "use it (unreadable, or jax_compilation_cache_check_contents)")  # fmt: skip
    if not keys:
        if key in index:
            return miss(code="evicted", reason="this key was cached before and its entry is "
                        "gone: evicted (jax_compilation_cache_max_size) or cleared")  # fmt: skip
        return miss(code="new_program", reason=f"nothing of `{module}` is in the cache: the "
                    "first compile of this program with this cache directory")  # fmt: skip
    known = [index[k] for k in keys if k in index]
    if not known:
        return miss(code="key_changed", reason=f"`{module}` is cached under {len(keys)} other "
                    "key(s) that tile has no parts for: the program, jaxlib, XLA flags or "
                    "compile options changed")  # fmt: skip

    def distance(other: Mapping[str, str]) -> tuple[int, bool]:
        # Fewest changed parts; on a tie the same program under another setup (XLA flags,
        # jaxlib) explains more than another program (a new shape) under the same setup.
        changed = sum(other.get(p) != h for p, h in parts.items())
        return changed, other.get("computation") != parts.get("computation")

    nearest = min(known, key=distance)
    differs = [p for p, h in parts.items() if nearest.get(p) != h]
    words = ", ".join(_PART_WORDS.get(p, p) for p in differs) or "?"
    return miss(code="key_changed", differs=differs, reason=f"`{module}` is cached under "
                f"{len(keys)} other key(s); the nearest differs in: {words}")  # fmt: skip


def _read_index(path: Path) -> dict[str, dict[str, str]]:
    index: dict[str, dict[str, str]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return index
    for line in lines:
        try:
            record = json.loads(line)
            index[str(record["key"])] = {str(k): str(v) for k, v in record["parts"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a torn or foreign line: that key is merely unexplained
    return index


class CacheLogWatcher(logging.Handler):
    """Turns JAX's cache log records into `CacheEvent`s for `send` (without `case_id`)."""

    def __init__(self, cache_dir: Path, send: Callable[[CacheEvent], None]) -> None:
        super().__init__(logging.DEBUG)
        self._dir = cache_dir
        self._send = send
        self._index_path = cache_dir / INDEX_NAME
        self._index = _read_index(self._index_path)
        # By thread: a case compiles its kernel and references side by side, and each
        # compilation's log lines come from its own thread, interleaved with the others'.
        self._parts: dict[int | None, dict[str, str]] = {}
        self._pending: dict[str, dict[str, str]] = {}  # missed keys -> their parts, until written
        self._last_miss: dict[int | None, tuple[str, str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._handle(record.getMessage(), record.thread)
        except Exception:  # diagnostics must never break a compile
            self.handleError(record)

    def _handle(self, message: str, thread: int | None = None) -> None:
        if m := _PART.match(message):
            parts = self._parts.setdefault(thread, {})
            if m["part"] in parts:  # a new key begins
                parts = self._parts[thread] = {}
            parts[m["part"]] = m["hash"]
        elif m := _MISS.match(message):
            parts = self._parts.pop(thread, {})
            self._pending[m["key"]] = parts
            self._last_miss[thread] = (m["module"], m["key"])
            self._send(explain_miss(self._dir, m["module"], m["key"], parts, self._index))
        elif m := _HIT.match(message):
            self._parts.pop(thread, None)
            self._send(CacheEvent(event="hit", module=m["module"], key=m["key"]))
        elif m := _WRITE.match(message):
            self._remember(m["key"], self._pending.pop(m["key"], {}))
        elif (m := _NOT_WRITTEN.match(message)) and thread in self._last_miss:
            module, key = self._last_miss[thread]
            self._pending.pop(key, None)
            self._send(CacheEvent(event="not_stored", module=m["module"] or module, key=key,
                                  reason=m["why"].strip()))  # fmt: skip

    def _remember(self, key: str, parts: dict[str, str]) -> None:
        """Note the parts of a key JAX is writing, for explaining later misses."""
        if not parts:
            return
        self._index[key] = parts
        line = json.dumps({"key": key, "parts": parts}, sort_keys=True) + "\n"
        try:
            # One O_APPEND write per line: runners of a sharded run may append at once.
            fd = os.open(self._index_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            pass  # the cache works without it; later misses are explained less precisely


def watch_cache_log(cache_dir: str, send: Callable[[CacheEvent], None]) -> CacheLogWatcher:
    """Install a watcher on JAX's cache loggers (DEBUG) for the rest of this process."""
    watcher = CacheLogWatcher(Path(cache_dir).expanduser().absolute(), send)
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(watcher)
        if logger.getEffectiveLevel() > logging.DEBUG:
            logger.setLevel(logging.DEBUG)
    return watcher
