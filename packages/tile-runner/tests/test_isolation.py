"""The runner's side of the trust boundary: stamped messages, a writer a forked child cannot
use, and the guard that puts process state back between cases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import jax

import tile_protocol as tp
from tile_runner._isolation import StateGuard

# Run in a fresh interpreter: forking the (threaded) test process itself would be unsafe.
FORK_SCRIPT = """
import os, sys
import tile_protocol as tp
from tile_runner._stdout import ProtocolWriter

read, write = os.pipe()
writer = ProtocolWriter(write)
writer.bind("tok")
writer.send(tp.Log(message="before the fork"))
pid = os.fork()
if pid == 0:
    writer.send(tp.Done(ok=True, elapsed_s=0.0))  # the child's writer lost the pipe
    os.write(2, f"child writer fd {writer.fd}".encode())
    os._exit(0)
os.waitpid(pid, 0)
writer.send(tp.Log(message="after the fork"))
os.close(write)
sys.stdout.buffer.write(os.read(read, 1 << 16))
"""


def test_messages_are_stamped_and_a_forked_childs_writer_is_silent() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT], capture_output=True, timeout=120, check=True
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [m["message"] for m in lines] == ["before the fork", "after the fork"]
    assert [(m["seq"], m["token"]) for m in lines] == [(1, "tok"), (2, "tok")]
    assert len({m["pid"] for m in lines}) == 1
    assert b"child writer fd -1" in done.stderr


def _ignore_signal(signum: int, frame: FrameType | None) -> None:
    pass


def _jax_flag(name: str) -> object:
    """A jax flag's value (jax declares its flags at run time, out of the type checker's sight)."""
    return getattr(jax.config, name)


def test_restorable_changes_are_put_back(tmp_path: Path) -> None:
    # Taken in the test itself (pytest changes PYTEST_CURRENT_TEST between phases); what the
    # test changes is put back by the guard.
    guard = StateGuard()
    cwd = Path.cwd()
    jax.config.update("jax_enable_x64", True)  # pyright: ignore[reportUnknownMemberType]
    os.chdir(tmp_path)
    os.environ["TILE_GUARD_TEST_SECRET_TOKEN"] = "hunter2"
    sys.path.insert(0, "/guard/test")
    signal.signal(signal.SIGUSR2, _ignore_signal)
    diffs, restart = guard.check()
    assert not restart
    by_kind = {d.kind: d for d in diffs}
    assert set(by_kind) == {"jax_config", "cwd", "environment", "sys_path", "signal_handlers"}
    assert all(d.restored for d in diffs)
    assert (by_kind["jax_config"].name, by_kind["jax_config"].after) == ("jax_enable_x64", "True")
    assert by_kind["cwd"].after == str(tmp_path)
    assert by_kind["environment"].after == "<redacted>"  # a secret-looking name keeps its value
    assert by_kind["sys_path"].after == "/guard/test"
    assert by_kind["signal_handlers"].name == "SIGUSR2"
    # ...and the process is as it was.
    assert _jax_flag("jax_enable_x64") is False
    assert Path.cwd() == cwd
    assert "TILE_GUARD_TEST_SECRET_TOKEN" not in os.environ
    assert "/guard/test" not in sys.path
    assert signal.getsignal(signal.SIGUSR2) is signal.SIG_DFL
    assert guard.check() == ([], False)


def test_a_running_thread_asks_for_a_fresh_runner() -> None:
    guard = StateGuard()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="guard-test-worker")
    thread.start()
    try:
        diffs, restart = guard.check()
    finally:
        stop.set()
        thread.join()
    assert restart
    assert [(d.kind, d.name, d.after, d.restored) for d in diffs] == [
        ("threads", "guard-test-worker", "thread running", False)
    ]
    assert guard.check() == ([], False)  # a thread that ended is no change


def test_a_state_change_reaches_the_stream_and_ends_the_runner(tmp_path: Path, runner: Any) -> None:
    kernels = tmp_path / "leaks.py"
    kernels.write_text(
        "import os, threading\n"
        "import tile_runner as tile\n"
        "AX = tile.axes(n=[4])\n"
        "def inputs(case, key):\n"
        "    return (tile.normal(key, (case.n,), 'float32'),)\n"
        "def env_inputs(case, key):\n"
        "    os.environ['TILE_LEAK_ENV'] = '1'\n"
        "    return inputs(case, key)\n"
        "def thread_inputs(case, key):\n"
        "    threading.Thread(target=threading.Event().wait, name='stuck').start()\n"
        "    return inputs(case, key)\n"
        "tile.kernel('l/a_env', inputs=env_inputs, reference=lambda x: x, test=AX)(lambda x: x)\n"
        "tile.kernel('l/b_thread', inputs=thread_inputs, test=AX)(lambda x: x)\n"
        "tile.kernel('l/c_after', inputs=inputs, test=AX)(lambda x: x)\n"
    )
    run = runner({"command": "test", "paths": [str(kernels)], "plugins": [], "token": "t0"})
    assert run.returncode == 0, run.stderr[-2000:]
    changes = run.of(tp.StateChange)
    assert [(c.case_id, c.restart) for c in changes] == [
        ("l/a_env[n=4]", False),
        ("l/b_thread[n=4]", True),
    ]
    assert changes[0].changes[0].name == "TILE_LEAK_ENV" and changes[0].changes[0].restored
    done = run.messages[-1]
    assert isinstance(done, tp.Done) and done.restart is not None and "stuck" in done.restart
    assert "l/c_after[n=4]" not in {r.case_id for r in run.of(tp.TestResult)}
    validator = tp.StreamValidator(token="t0")
    assert [v for v in map(validator.check, run.messages) if v is not None] == []
    assert validator.undone == ["l/c_after[n=4]"]


def test_a_daemon_thread_is_named_once_and_lived_with() -> None:
    guard = StateGuard()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="guard-test-daemon", daemon=True)
    thread.start()
    try:
        first = guard.check()
        second = guard.check()
    finally:
        stop.set()
        thread.join()
    diffs, restart = first
    assert not restart
    assert [(d.kind, d.name, d.after) for d in diffs] == [
        ("threads", "guard-test-daemon", "daemon thread running")
    ]
    assert second == ([], False)
