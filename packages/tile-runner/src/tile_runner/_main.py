"""`python -m tile_runner [--request FILE]`: one RunRequest in, a protocol stream out."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tile_protocol import (
    PROTOCOL_MINOR,
    PROTOCOL_VERSION,
    DecodeError,
    Done,
    Failure,
    Hello,
    Log,
    RunRequest,
    decode,
)
from tile_runner._stdout import ProtocolWriter, protect_stdout

if TYPE_CHECKING:
    from tile_runner._jaxapi import Device

__all__ = ["main", "runner_version"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_REQUEST = 2


def runner_version() -> str:
    """The installed version of tile-runner."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tile-runner")
    except PackageNotFoundError:
        return "0+unknown"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tile_runner",
        description="Run tile kernels for one RunRequest; the protocol stream goes to stdout.",
    )
    parser.add_argument(
        "--request", metavar="FILE", help="read the RunRequest (JSON) from FILE, not stdin"
    )
    return parser.parse_args(argv)


def _read_request(path: str | None) -> RunRequest:
    raw = Path(path).read_bytes() if path else sys.stdin.buffer.read()
    message = decode(raw)
    if not isinstance(message, RunRequest):
        raise DecodeError(f"expected a run_request message, got {type(message).__name__}")
    return message


# XLA's CPU backend on one thread: Eigen's pool and the intra-op pool both off.
SINGLE_THREAD_XLA_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")


def pin_to_one_core(shard: int = 0) -> int | None:
    """Run this process on one CPU core with XLA single-threaded; the core, or None if refused.

    The core: the last one this process may use, counting down by shard (`RunRequest.shard`)
    so that local shards do not share one. On a shared CPU a kernel and its reference, timed turn
    about, then see the same speed: with XLA's threads spread over cores that another process
    takes at random, their ratio moved by ±20% between runs (docs/measurement.md).
    """
    flags = os.environ.get("XLA_FLAGS", "").split()
    os.environ["XLA_FLAGS"] = " ".join([*flags, *SINGLE_THREAD_XLA_FLAGS])
    try:
        cores = sorted(os.sched_getaffinity(0))
        core = cores[-1 - shard % len(cores)]
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError):  # no affinity API (macOS) or refused
        return None
    return core


def allocate_on_demand() -> None:
    """Let JAX's GPU allocator grow as cases need memory, unless the environment says otherwise.

    By default JAX reserves 75% of the GPU at its first allocation: 0.8-0.9 s of every GPU
    runner's first case on an H100 (benchmarks/gpu/first_op_probe.py: the first device put
    at 2.15 s from the process's start preallocating, 1.18 s not). A runner allocates its
    cases' inputs and outputs as it goes and frees them after each case; the pool it grows
    is reused for the rest of the run. `XLA_PYTHON_CLIENT_PREALLOCATE` set in the environment
    (or `[runner] env`) wins. Only the runner process does this: `tile_runner` imported into
    a user's own process leaves its allocator alone.
    """
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _bare_hello() -> Hello:
    return Hello(
        protocol_version=PROTOCOL_VERSION,
        protocol_minor=PROTOCOL_MINOR,
        runner_version=runner_version(),
        python_version=platform.python_version(),
        pid=os.getpid(),
    )


def _hello(pinned_cpu: int | None = None) -> tuple[Hello, str, list[Device]]:
    """Hello with the JAX side filled in; importing jax initializes the devices here."""
    import jax
    import jaxlib

    from tile_runner._device import device_infos
    from tile_runner._jaxapi import local_devices
    from tile_runner._measure import available_timers

    backend = jax.default_backend()
    local = local_devices()
    devices = device_infos(local)
    hello = Hello(
        protocol_version=PROTOCOL_VERSION,
        protocol_minor=PROTOCOL_MINOR,
        runner_version=runner_version(),
        python_version=platform.python_version(),
        jax_version=jax.__version__,
        jaxlib_version=getattr(jaxlib, "__version__", None),
        backend=backend,
        devices=devices,
        timers=list(available_timers(backend)),
        pid=os.getpid(),
        pinned_cpu=pinned_cpu,
    )
    return hello, backend, local


def main(argv: list[str] | None = None) -> int:
    """Entry point of the runner process; returns its exit status."""
    writer = protect_stdout()
    start = time.perf_counter()
    args = _parse_args(argv)
    try:
        request = _read_request(args.request)
    except (OSError, DecodeError) as exc:
        writer.send(_bare_hello())
        writer.send(
            Failure(
                phase="request",
                error_type=type(exc).__name__,
                message=f"cannot read the RunRequest: {exc}",
            )
        )
        writer.send(Done(ok=False, elapsed_s=time.perf_counter() - start))
        return EXIT_BAD_REQUEST
    writer.bind(request.token)
    if request.protocol_version > PROTOCOL_VERSION:
        writer.send(_bare_hello())
        writer.send(
            Failure(
                phase="request",
                error_type="VersionError",
                message=f"the CLI speaks protocol {request.protocol_version}, this runner "
                f"only {PROTOCOL_VERSION}; upgrade tile-runner in the kernels' environment",
            )
        )
        writer.send(Done(ok=False, elapsed_s=time.perf_counter() - start))
        return EXIT_BAD_REQUEST
    return _run(writer, request, start)


def _run(writer: ProtocolWriter, request: RunRequest, start: float) -> int:
    from tile_runner._discover import USER_ERRORS, failure_from

    allocate_on_demand()
    # Before JAX starts: its CPU client reads XLA_FLAGS once, and its threads inherit the mask.
    shard = request.shard.index if request.shard is not None else 0
    pinned = pin_to_one_core(shard) if request.pin_cpu else None
    try:
        hello, backend, devices = _hello(pinned)
    except USER_ERRORS as exc:
        writer.send(_bare_hello())
        writer.send(failure_from(exc, "setup", context="initializing JAX: "))
        writer.send(Done(ok=False, elapsed_s=time.perf_counter() - start))
        return EXIT_FAILED
    writer.send(hello)
    if request.pin_cpu and pinned is None:
        writer.send(
            Log(
                level="warning",
                message="pin_cpu: this system refused to pin the runner to one core; XLA runs "
                "single-threaded but unpinned, and comparisons treat the run as unpinned",
            )
        )
    if request.command == "device":
        from tile_runner._device import device_report

        try:
            report = device_report(
                backend,
                hello.devices,
                devices,
                run_calibration=request.calibrate,
                warn=lambda message: writer.send(Log(level="warning", message=message)),
            )
            writer.send(report)
        except USER_ERRORS as exc:
            writer.send(failure_from(exc, "calibrate"))
            writer.send(Done(ok=False, elapsed_s=time.perf_counter() - start))
            return EXIT_FAILED
        writer.send(Done(ok=True, elapsed_s=time.perf_counter() - start))
        return EXIT_OK
    from tile_runner._session import Session

    session = Session(writer, request, backend, devices)
    ok = session.run()
    counts = session.counts
    writer.send(
        Done(ok=ok, counts=counts, elapsed_s=time.perf_counter() - start, restart=session.restart)
    )
    return EXIT_OK if ok else EXIT_FAILED
