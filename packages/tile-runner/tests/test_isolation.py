"""The runner's side of the trust boundary: stamped messages, a writer a forked child cannot
use, and the guard that puts process state back between cases."""

from __future__ import annotations

import importlib.util
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


def _no_profile(frame: FrameType, event: str, arg: object) -> None:
    pass


def test_process_wide_state_is_put_back_and_named() -> None:
    # Issue #39: what a kernel changes below Python's modules (the runner's side end to end is
    # tests/test_case_isolation.py, with a probe after each change).
    import resource
    import warnings

    guard = StateGuard()
    limit = sys.getrecursionlimit()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    mask = os.umask(0o077)
    try:
        signal.setitimer(signal.ITIMER_REAL, 600.0)
        sys.setrecursionlimit(limit + 5)
        sys.setprofile(_no_profile)
        warnings.filterwarnings("error", message="guard test", category=UserWarning)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
        diffs, restart = guard.check()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)  # never leave the test process an alarm
        sys.setprofile(None)
        os.umask(mask)
    assert not restart
    shown = {(d.kind, d.name): (d.before, d.after, d.restored) for d in diffs}
    assert set(shown) == {("timers", "ITIMER_REAL"), ("recursion_limit", ""),
                          ("trace_hooks", "sys.setprofile"), ("warnings", "filters"),
                          ("umask", ""), ("rlimits", "RLIMIT_NOFILE")}  # fmt: skip
    assert all(restored for _, _, restored in shown.values())
    assert str(shown["timers", "ITIMER_REAL"][1]).startswith("SIGALRM in ")
    assert shown["recursion_limit", ""][:2] == (str(limit), str(limit + 5))
    assert shown["trace_hooks", "sys.setprofile"][:2] == ("none", f"{__name__}._no_profile")
    assert shown["warnings", "filters"][:2] == (None, "error:guard test:UserWarning")
    assert shown["umask", ""][:2] == (f"{mask:04o}", "0077")
    assert str(shown["rlimits", "RLIMIT_NOFILE"][1]).startswith(f"soft {soft - 1}, ")
    # ...and the process is as it was.
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert sys.getrecursionlimit() == limit
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (soft, hard)
    assert guard.check() == ([], False)


# A process that is not root cannot raise a hard limit again: run as nobody when root.
HARD_LIMIT_SCRIPT = """
import json, os, resource, sys
from tile_runner._isolation import StateGuard
import tile_runner._jaxapi  # the guard reads JAX's flags: import JAX while files are readable

if os.geteuid() == 0:
    os.setgid(65534)
    os.setuid(65534)
guard = StateGuard()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, soft - 1))
diffs, restart = guard.check()
json.dump({"restart": restart, "diffs": [[d.kind, d.name, d.restored] for d in diffs]}, sys.stdout)
"""


def test_a_lowered_hard_limit_asks_for_a_fresh_runner() -> None:
    done = subprocess.run([sys.executable, "-c", HARD_LIMIT_SCRIPT], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "restart": True,
        "diffs": [["rlimits", "RLIMIT_NOFILE", False]],
    }


def test_what_a_module_sets_up_as_it_is_imported_is_kept(tmp_path: Path) -> None:
    # jax's Mosaic GPU sets its runtime's paths in os.environ at import; put back, every later
    # Mosaic GPU kernel failed to compile. The same variable set by the case itself is put back.
    guard = StateGuard()
    source = tmp_path / "tile_guard_setup_module.py"
    source.write_text('import os\nos.environ["TILE_GUARD_MODULE_SETUP"] = "ready"\n')
    spec = importlib.util.spec_from_file_location(source.stem, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[source.stem] = module
    try:
        spec.loader.exec_module(module)
        os.environ["TILE_GUARD_CASE_SET"] = "by the case"
        diffs, restart = guard.check()
        assert not restart
        by_name = {d.name: d for d in diffs}
        assert set(by_name) == {"TILE_GUARD_MODULE_SETUP", "TILE_GUARD_CASE_SET"}
        setup, own = by_name["TILE_GUARD_MODULE_SETUP"], by_name["TILE_GUARD_CASE_SET"]
        assert (setup.kept, setup.restored, setup.after) == (True, False, "ready")
        assert (own.kept, own.restored) == (False, True)
        assert os.environ.get("TILE_GUARD_MODULE_SETUP") == "ready"
        assert "TILE_GUARD_CASE_SET" not in os.environ
        assert guard.check() == ([], False)  # the setup is now the state cases start from
    finally:
        sys.modules.pop(source.stem, None)
        os.environ.pop("TILE_GUARD_MODULE_SETUP", None)
