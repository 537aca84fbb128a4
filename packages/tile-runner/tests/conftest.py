"""Shared pieces: fixture paths, a real runner subprocess, a real local HTTP server."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest

from tile_protocol import BadLine, Event, Message, StreamDecoder, UnknownMessage

RUN_TIMEOUT_S = 600

T = TypeVar("T")


@dataclass
class RunOutput:
    """What one runner process produced."""

    returncode: int
    events: list[Event]
    stderr: str
    messages: list[Message] = field(init=False)

    def __post_init__(self) -> None:
        self.messages = [e for e in self.events if not isinstance(e, BadLine | UnknownMessage)]

    def of(self, kind: type[T]) -> list[T]:
        """Messages of one type, in stream order."""
        return [m for m in self.messages if isinstance(m, kind)]

    def by_case(self, kind: type[Any]) -> dict[str, Any]:
        """Messages of one type keyed by case id."""
        return {m.case_id: m for m in self.of(kind)}


def runner_env(**extra: str) -> dict[str, str]:
    """The environment for a runner: CPU only, plus `extra`."""
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    return env


def run_runner(
    request: dict[str, Any], *, env: dict[str, str] | None = None, raw: bytes | None = None
) -> RunOutput:
    """Run `python -m tile_runner` with the request on stdin and decode its stream."""
    payload = raw if raw is not None else json.dumps({"type": "run_request", **request}).encode()
    proc = subprocess.run(
        [sys.executable, "-m", "tile_runner"],
        input=payload,
        capture_output=True,
        env=env or runner_env(),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    decoder = StreamDecoder()
    events = decoder.feed(proc.stdout) + decoder.close()
    return RunOutput(proc.returncode, events, proc.stderr.decode("utf-8", "replace"))


class Runner:
    """`runner(request_dict, env=..., raw=...)` runs one runner; `runner.env(**extra)`."""

    env = staticmethod(runner_env)

    def __call__(
        self,
        request: dict[str, Any],
        *,
        env: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> RunOutput:
        return run_runner(request, env=env, raw=raw)


@pytest.fixture(scope="session")
def runner() -> Runner:
    """Runs `python -m tile_runner` as a real subprocess."""
    return Runner()


class Server:
    """Serves fixed bodies by path on 127.0.0.1."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.base = ""

    def entry(self, name: str, body: bytes) -> dict[str, str]:
        """Serve `body` and return a `[downloads.<name>]` table pinned to its sha256."""
        self.routes[f"/{name}.bin"] = body
        return {"url": f"{self.base}/{name}.bin", "sha256": hashlib.sha256(body).hexdigest()}


@pytest.fixture(scope="session")
def http_server() -> Iterator[Server]:
    """A real HTTP server in a thread."""
    server = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = server.routes.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
