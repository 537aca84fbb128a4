"""A real headless Chromium, driven over the DevTools protocol on a pipe.

Why no driver package: Chromium speaks the DevTools protocol on file descriptors 3 (commands
in) and 4 (replies and events out) when started with `--remote-debugging-pipe`: JSON messages
ended by a NUL byte. That is all these tests need (open a file, collect console errors,
evaluate a check, take a screenshot), in a hundred lines of the standard library, without a
websocket client, a chromedriver or a browser download. Debian's `chromium` package is used.

Used by the browser tests (tests/test_report_browser.py) and `just report-screens`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CI_VARIABLE = "TILE_BROWSER_TESTS"
"""Set to 1 (as .ci/run does) to make a missing Chromium fail the browser tests, not skip them."""


def browser_required() -> bool:
    """Whether a missing Chromium is a failure: in CI (TILE_BROWSER_TESTS=1, or CI set)."""
    ci = os.environ.get("CI", "").strip().lower()
    return os.environ.get(CI_VARIABLE) == "1" or ci not in ("", "0", "false", "no")


# Runs in the child: the two inherited pipe ends become fds 3 and 4, then Chromium replaces it.
_TRAMPOLINE = (
    "import os, sys\n"
    "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
    "high = [os.dup(fd) if fd in (3, 4) else fd for fd in (r, w)]\n"
    "os.dup2(high[0], 3)\n"
    "os.dup2(high[1], 4)\n"
    "for fd in {r, w, *high} - {3, 4}:\n"
    "    os.close(fd)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)

# Console problems, from the three places the protocol reports them.
_CONSOLE_ERRORS = {"error", "assert"}


def find_chromium() -> str | None:
    """The Chromium executable on PATH (or in TILE_CHROMIUM), or None."""
    given = os.environ.get("TILE_CHROMIUM")
    if given:
        return shutil.which(given)
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    """Chromium died, answered with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, executable: str, *, width: int = 1280, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.errors: list[str] = []
        self._profile = tempfile.TemporaryDirectory(prefix="tile-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        args = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            f"--user-data-dir={self._profile.name}",
            "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run its sandbox as root
        # The pipe ends must be fds 3 and 4 in Chromium. A preexec_fn would do it but forces a
        # plain fork() of this (JAX-threaded) test process, so a tiny Python trampoline moves
        # them and execs Chromium instead.
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(cmd_r), str(res_w), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(cmd_r, res_w),
        )
        os.close(cmd_r)
        os.close(res_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop Chromium (it was started by this object, so only it is stopped)."""
        with contextlib.suppress(BrowserError, OSError):
            self._call("Browser.close")
        with contextlib.suppress(OSError):
            os.close(self._cmd_w)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._res_r)
        self._profile.cleanup()

    # ---------------------------------------------------------------- protocol

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page's session; returns its result."""
        return self._call(method, params, session=self._session)

    def _call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == self._next_id, f"a reply to {method}")
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def _wait(self, wanted: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if wanted(event):
                    return self._events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium sent no {what} within {self.timeout:g} s")
            ready, _, _ = select.select([self._res_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._res_r, 1 << 16)
            if not chunk:
                raise BrowserError(f"Chromium exited (code {self._proc.poll()}) before {what}")
            self._buffer += chunk
            *complete, self._buffer = self._buffer.split(b"\0")
            for raw in complete:
                self._note(json.loads(raw))

    def _note(self, message: dict[str, Any]) -> None:
        """Keep every message; record console errors, exceptions and error log entries."""
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in _CONSOLE_ERRORS:
            texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            self.errors.append("console: " + " ".join(texts))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append("exception: " + str(details.get("text", details)))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log ({entry.get('source')}): {entry.get('text')}")
        self._events.append(message)

    # ---------------------------------------------------------------- page

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event."""
        self.call("Page.navigate", {"url": path.absolute().as_uri()})
        self._wait(lambda m: m.get("method") == "Page.loadEventFired", "load event")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (returned by value)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"evaluating failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, target: Path, *selectors: str, pad: int = 8) -> Path:
        """A PNG of the box around every element the selectors match (scrolled or not)."""
        box = self.evaluate(
            "(() => { const rs = " + json.dumps(list(selectors)) + ".flatMap(s => "
            "Array.from(document.querySelectorAll(s))).map(e => e.getBoundingClientRect());"
            "const x = Math.min(...rs.map(r => r.left)), y = Math.min(...rs.map(r => r.top));"
            "return {x: x + scrollX, y: y + scrollY, width: Math.max(...rs.map(r => r.right)) - x,"
            " height: Math.max(...rs.map(r => r.bottom)) - y}; })()"
        )
        clip = {
            "x": max(box["x"] - pad, 0),
            "y": max(box["y"] - pad, 0),
            "width": box["width"] + 2 * pad,
            "height": box["height"] + 2 * pad,
            "scale": 1,
        }
        shot = self.call(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        target.write_bytes(base64.b64decode(shot["data"]))
        return target


PLOTS_JS = """
Array.from(document.querySelectorAll('svg.plot')).map(svg => {
  const r = svg.getBoundingClientRect();
  const marks = Array.from(svg.querySelectorAll('.mark'));
  const inside = marks.filter(m => {
    const b = m.getBoundingClientRect();
    return (b.width > 0 || b.height > 0) && b.right >= r.left - 1 && b.left <= r.right + 1
      && b.bottom >= r.top - 1 && b.top <= r.bottom + 1;
  });
  return {id: svg.id, kind: svg.dataset.plot, width: r.width, height: r.height,
          declared: Number(svg.dataset.marks), marks: marks.length, drawn: inside.length};
})
"""
"""Every plot in the page: its size, and how many of its marks the browser laid out inside it."""


def rendered_plots(browser: Browser, page: Path) -> dict[str, list[dict[str, Any]]]:
    """Open `page`; fail on any console error or any plot not drawn as declared; return the
    plots by kind."""
    browser.errors.clear()
    browser.open(page)
    plots: list[dict[str, Any]] = browser.evaluate(PLOTS_JS)
    assert browser.errors == [], f"{page.name}: console errors {browser.errors}"
    for p in plots:
        assert p["width"] > 0 and p["height"] > 0, f"{page.name}: plot {p} has no size"
        assert p["declared"] > 0, f"{page.name}: plot {p} drew nothing"
        assert p["marks"] == p["declared"] == p["drawn"], f"{page.name}: plot {p} not all drawn"
    kinds: dict[str, list[dict[str, Any]]] = {}
    for p in plots:
        kinds.setdefault(p["kind"], []).append(p)
    return kinds
