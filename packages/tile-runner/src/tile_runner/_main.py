"""`python -m tile_runner [--request FILE]`: one RunRequest in, a protocol stream out."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tile_protocol import (
    PROTOCOL_MINOR,
    PROTOCOL_VERSION,
    DecodeError,
    DeviceInfo,
    Done,
    Failure,
    Hello,
    Log,
    Plan,
    RunRequest,
    StateChange,
    decode,
)
from tile_protocol import CaseInfo as ProtoCaseInfo
from tile_protocol import CaseStart as ProtoCaseStart
from tile_runner._stdout import ProtocolWriter, protect_stdout

if TYPE_CHECKING:  # the session imports these lazily: JAX comes with them
    from tile_runner._case import CaseContext
    from tile_runner._isolation import StateGuard
    from tile_runner._plan import Unit

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


def pin_to_one_core() -> int | None:
    """Run this process on one CPU core with XLA single-threaded; the core, or None if refused.

    The core: the last one this process may use, counting down by shard (`TILE_SHARD=i/n`) so
    that local shards do not share one. On a shared CPU a kernel and its reference, timed turn
    about, then see the same speed: with XLA's threads spread over cores that another process
    takes at random, their ratio moved by ±20% between runs (docs/measurement.md).
    """
    flags = os.environ.get("XLA_FLAGS", "").split()
    os.environ["XLA_FLAGS"] = " ".join([*flags, *SINGLE_THREAD_XLA_FLAGS])
    try:
        cores = sorted(os.sched_getaffinity(0))
        shard = int(os.environ.get("TILE_SHARD", "0/1").split("/")[0])
        core = cores[-1 - shard % len(cores)]
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError, ValueError):  # no affinity API (macOS) or refused
        return None
    return core


def _ruled_out(kernel: Any, case: Any, unit: dict[str, str] | None) -> str | None:
    """Why the kernel's constraint rules out the unit's configuration, or None."""
    if unit is None or kernel.tunables is None:
        return None
    from tile_runner._axes import format_value

    for config, reason in kernel.tunables.configs(case):
        if {k: format_value(v) for k, v in config.items()} == unit:
            return reason
    return None


def _is_default(kernel: Any, unit: dict[str, str] | None) -> bool:
    """Whether the unit's configuration is the kernel's default one."""
    if unit is None or kernel.tunables is None:
        return False
    from tile_runner._axes import format_value

    return {k: format_value(v) for k, v in kernel.tunables.default.items()} == unit


def _bare_hello() -> Hello:
    return Hello(
        protocol_version=PROTOCOL_VERSION,
        protocol_minor=PROTOCOL_MINOR,
        runner_version=runner_version(),
        python_version=platform.python_version(),
        pid=os.getpid(),
    )


def _hello(pinned_cpu: int | None = None) -> tuple[Hello, str, list[Any]]:
    """Hello with the JAX side filled in; importing jax initializes the devices here."""
    import jax
    import jaxlib

    from tile_runner._peaks import known_device
    from tile_runner._timers import available_timers

    backend = jax.default_backend()
    devices: list[DeviceInfo] = []
    local = jax.local_devices()
    for device in local:
        memory = None
        try:
            stats = device.memory_stats()
            if stats:
                memory = int(stats.get("bytes_limit") or 0) or None
        except Exception:
            memory = None
        spec = known_device(device.device_kind) if device.platform != "cpu" else None
        devices.append(
            DeviceInfo(
                id=int(device.id),
                platform=device.platform,
                device_kind=device.device_kind,
                memory_bytes=memory,
                l2_bytes=spec.l2_bytes if spec else None,
            )
        )
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

    # Before JAX starts: its CPU client reads XLA_FLAGS once, and its threads inherit the mask.
    pinned = pin_to_one_core() if request.pin_cpu else None
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
    session = _Session(writer, request, backend, devices)
    ok = session.run()
    counts = session.counts
    writer.send(
        Done(ok=ok, counts=counts, elapsed_s=time.perf_counter() - start, restart=session.restart)
    )
    return EXIT_OK if ok else EXIT_FAILED


class _Session:
    """The body of one run after Hello: discovery, plan, cases."""

    def __init__(
        self, writer: ProtocolWriter, request: RunRequest, backend: str, devices: list[Any]
    ) -> None:
        self.writer = writer
        self.request = request
        self.backend = backend
        self.devices = devices
        self.counts = {"cases": 0, "passed": 0, "failed": 0, "skipped": 0}
        self.current: str | None = None
        self.restart: str | None = None
        """Why this runner stopped before the rest of its plan (see `_isolation`)."""

    def log(self, level: Any, message: str, case_id: str | None = None) -> None:
        self.writer.send(Log(level=level, message=message, case_id=case_id))

    def run(self) -> bool:
        from tile_runner._cache_log import explain_requested, watch_cache_log
        from tile_runner._case import CaseContext
        from tile_runner._compile import enable_persistent_cache
        from tile_runner._discover import discover
        from tile_runner._inputs import data_context
        from tile_runner._measure import resolve_timer
        from tile_runner._peaks import builtin_peaks
        from tile_runner._plan import make_plan
        from tile_runner._tuning import TuningIndex

        request = self.request
        ok = True
        if request.jax_cache_dir:
            refused = enable_persistent_cache(request.jax_cache_dir)
            if refused:
                self.log("warning", refused)
            elif explain_requested():
                watch_cache_log(request.jax_cache_dir, lambda t: self.log("debug", t, self.current))
        context = data_context()
        context.downloads = dict(request.downloads)
        context.on_use = lambda name, path: self.log(
            "info", f"input_file {name} {path}", self.current
        )

        failures = discover(request.modules, request.paths, request.plugins, request.project_root)
        for failure in failures:
            self.writer.send(failure)
            ok = False

        suite = "test" if request.command == "test" else "bench"
        plan = make_plan(
            suite,
            self.backend,
            kernels=request.kernels,
            filters=request.filters,
            case_ids=request.case_ids,
            axes=request.axes,
            units=request.command == "tune" or request.units,
        )
        for warning in plan.warnings:
            self.log("warning", warning)
        self.writer.send(
            Plan(
                command=request.command,
                cases=[
                    ProtoCaseInfo(
                        case_id=rid,
                        kernel=c.kernel,
                        params=c.str_params,
                        skip=_ruled_out(k, c, u),
                        default=_is_default(k, u),
                    )
                    for k, c, u, rid in plan.units
                ],
            )
        )
        for failure in plan.failures:
            self.writer.send(failure)
            ok = False
        if request.command == "list":
            self.counts["cases"] = len(plan.units)
            return ok

        device = self.devices[0] if self.devices else None
        peaks = request.peaks
        if peaks is None and device is not None:
            from tile_runner._device import calibrated_peaks

            builtin = builtin_peaks(device.device_kind) if device.platform != "cpu" else None
            peaks = calibrated_peaks(device.device_kind, builtin) or builtin
        timer = resolve_timer(request.bench.timer, self.backend, lambda m: self.log("warning", m))
        ctx = CaseContext(
            command=request.command,
            seed=request.test.seed,
            bench=request.bench,
            tolerances=dict(request.test.tolerances),
            timer=timer,
            peaks=peaks,
            send=self.writer.send,
            warn=lambda message, case_id: self.log("warning", message, case_id),
            inspect_kind=request.inspect_kind,
            output_dir=request.output_dir if request.command == "build" else None,
            tuning=TuningIndex.load(
                request.tuning_files,
                device_kind=device.device_kind if device is not None else "unknown",
                jax_version=self._jax_version(),
                warn=lambda message: self.log("warning", message),
            ),
            tunables=dict(request.tunables),
        )
        self.counts["cases"] = len(plan.units)
        rounds = request.bench.rounds if request.command == "bench" else 1
        self._run_cases(ctx, plan.units, rounds)
        if self.counts["failed"]:
            ok = False
        return ok

    @staticmethod
    def _jax_version() -> str | None:
        import jax

        return jax.__version__

    def _run_cases(self, ctx: CaseContext, cases: list[Unit], rounds: int) -> None:
        """Every case once; a bench in rounds goes over all cases `rounds` times, in order.

        A case's result is sent after its last round, so a runner that dies in round k loses
        only the rounds of cases not yet finished; the CLI blames the case in flight and
        restarts the others from their first round.
        """
        from tile_runner._case import BenchRounds, finish_rounds, next_round, run_case
        from tile_runner._isolation import StateGuard

        total = len(cases)
        pending: dict[str, BenchRounds] = {}
        guard = StateGuard()
        for round_ in range(1, rounds + 1):
            for index, (kernel, case, unit, rid) in enumerate(cases):
                if round_ > 1 and rid not in pending:
                    continue  # failed or skipped in an earlier round
                self.current = rid
                start = ProtoCaseStart(
                    case_id=rid, index=index, total=total, round=round_ if rounds > 1 else None
                )
                self.writer.send(start)
                if round_ == 1:
                    outcome = run_case(ctx, kernel, case, unit)
                else:
                    outcome = next_round(ctx, pending.pop(rid), last=round_ == rounds)
                self.current = None
                if self._changed_state(guard, rid) and isinstance(outcome, BenchRounds):
                    # The fresh runner will not time this case again: report the rounds it had.
                    outcome = finish_rounds(ctx, outcome)
                if isinstance(outcome, BenchRounds):
                    pending[rid] = outcome
                else:
                    self.counts[outcome] += 1
                if self.restart is not None:
                    return

    def _changed_state(self, guard: StateGuard, rid: str) -> bool:
        """Compare the process with its state before the first case; True to stop here.

        What the case changed is restored where safe and reported against it; what cannot be
        restored ends this runner after the case (`Done.restart`), so no later case runs in
        a process it changed.
        """
        try:
            diffs, restart = guard.check()
        except Exception as exc:  # the guard must never cost a case its result
            self.log("warning", f"could not compare the process state after a case: {exc!r}", rid)
            return False
        if not diffs:
            return False
        self.writer.send(StateChange(case_id=rid, changes=diffs, restart=restart))
        if restart:
            kept = [d for d in diffs if not d.restored]
            what = ", ".join(f"{d.kind} {d.name}".strip() for d in kept)
            self.restart = f"case `{rid}` changed what cannot be put back ({what})"
        return restart
