"""A real HTTP server on 127.0.0.1 that counts requests and can fail on purpose."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tile_downloads import ArchiveKind, DownloadEntry, Registry


@dataclass(frozen=True)
class Route:
    body: bytes
    status: int = 200
    cut: bool = False  # declare the full Content-Length, send half, close
    trickle: float | None = None  # seconds between single bytes (a server that never stalls)
    flaky: int = 0  # the first `flaky` requests are cut like `cut`, the later ones served


class Server:
    """Routes by path; `counts[path]` is how many GET requests that path got."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.base = ""

    def add(
        self,
        path: str,
        body: bytes,
        *,
        status: int = 200,
        cut: bool = False,
        trickle: float | None = None,
        flaky: int = 0,
    ) -> str:
        self.routes[path] = Route(body, status, cut, trickle, flaky)
        return self.base + path

    def entry(
        self,
        name: str,
        body: bytes,
        *,
        status: int = 200,
        cut: bool = False,
        flaky: int = 0,
        sha256: str | None = None,
        archive: ArchiveKind | None = None,
        members: tuple[str, ...] | None = None,
    ) -> Registry:
        """Serve `body` at `/NAME.bin` and return a registry of one entry, pinned to its sha256
        by default (`add` serves a body at any other path)."""
        url = self.add(f"/{name}.bin", body, status=status, cut=cut, flaky=flaky)
        sha = sha256 or hashlib.sha256(body).hexdigest()
        return {name: DownloadEntry(name, url, sha, archive=archive, members=members)}


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with server.lock:
                server.counts[self.path] += 1
                count = server.counts[self.path]
            route = server.routes.get(self.path, Route(b"not found", 404))
            if route.status != 200:
                self.send_response(route.status)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                self.wfile.write(route.body)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            if route.trickle is not None:
                self._trickle(route)
                return
            if route.cut or count <= route.flaky:
                self.wfile.write(route.body[: len(route.body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(route.body)

        def _trickle(self, route: Route) -> None:
            # The pace is the behaviour under test (bytes keep coming, never fast enough),
            # not a synchronization.
            assert route.trickle is not None
            for i in range(len(route.body)):
                try:
                    self.wfile.write(route.body[i : i + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up: the test is over
                    return
                time.sleep(route.trickle)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

    return Handler


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A threaded http.server on an ephemeral port of 127.0.0.1."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their own cache and offline mode."""
    monkeypatch.delenv("TILE_CACHE_DIR", raising=False)
    monkeypatch.delenv("TILE_OFFLINE", raising=False)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"
