"""Pinned data through the CLI: fetch, cache, offline, and input_files in the manifest."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun, assert_schema_valid

PAYLOAD = b"1.5 2.5 3.5 4.5\n"
FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n"


class _Server:
    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(PAYLOAD)))
                self.end_headers()
                if self.path.endswith("/slow.txt"):
                    self._trickle()
                    return
                self.wfile.write(PAYLOAD)

            def _trickle(self) -> None:
                # One byte every 0.5 s: each read comes well within any read timeout, the
                # whole never within the deadline. The pace is the behaviour under test.
                for i in range(len(PAYLOAD)):
                    try:
                        self.wfile.write(PAYLOAD[i : i + 1])
                        self.wfile.flush()
                    except OSError:  # tile gave up: the test is over
                        return
                    time.sleep(0.5)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/table.txt"


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def _toml(url: str) -> str:
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    return FAST + f'[downloads.table]\nurl = "{url}"\nsha256 = "{digest}"\n'


def test_fetch_list_offline_and_input_files(
    tile: TileRun, project: MakeProject, server: _Server, tmp_path: Path
) -> None:
    root = project(["with_data.py"], _toml(server.url))
    env = {"TILE_CACHE_DIR": str(tmp_path / "cache")}

    offline = tile("fetch", "--offline", cwd=root, env=env)
    assert offline.returncode == 3
    assert "tile fetch table" in offline.stderr and server.requests == 0

    listed = tile("fetch", "--list", cwd=root, env=env)
    assert listed.returncode == 0 and "table" in listed.stdout and "no" in listed.stdout

    fetched = tile("fetch", cwd=root, env=env)
    assert fetched.returncode == 0, fetched.stderr
    assert server.requests == 1
    again = tile("fetch", "table", cwd=root, env=env)
    assert again.returncode == 0 and server.requests == 1  # cache hit: no request

    bench = tile("bench", cwd=root, env={**env, "TILE_OFFLINE": "1"})
    assert bench.returncode == 0, bench.stderr
    run = root / ".tile" / "latest"
    manifest = json.loads((run / "artifact_manifest.json").read_text())
    downloads = [f for f in manifest["input_files"] if f["kind"] == "download"]
    assert len(downloads) == 1
    assert downloads[0]["sha256"] == hashlib.sha256(PAYLOAD).hexdigest()
    assert downloads[0]["size_bytes"] == len(PAYLOAD)
    assert_schema_valid(run)


def test_unknown_entry_is_a_usage_error(
    tile: TileRun, project: MakeProject, server: _Server
) -> None:
    root = project(["with_data.py"], _toml(server.url))
    proc = tile("fetch", "nope", cwd=root)
    assert proc.returncode == 2
    assert "nope" in proc.stderr and "hint:" in proc.stderr


def test_fetch_from_a_trickling_server_ends_at_its_deadline(
    tile: TileRun, project: MakeProject, server: _Server, tmp_path: Path
) -> None:
    root = project(["with_data.py"], _toml(server.url.replace("table.txt", "slow.txt")))
    cache = tmp_path / "cache"
    proc = tile("fetch", "--deadline", "1", cwd=root, env={"TILE_CACHE_DIR": str(cache)})
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "did not finish within its deadline of 1 s" in proc.stderr
    assert "hint: the server is too slow" in proc.stderr and "--deadline" in proc.stderr
    assert not any(p.is_file() for p in cache.rglob("*"))  # no partial file is left
    assert tile("fetch", "--deadline", "0", cwd=root).returncode == 2
