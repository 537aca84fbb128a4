"""`tile profile` in the runner: a few calls of one built case, traced or in a profiler range.

The host asks through `RunRequest.profile` (protocol 1.12) on a `build` request: the case is
compiled and its views written as for `tile build`, then called here. A JAX profiler trace
names each call with a `TraceAnnotation`; a runner started under Nsight Compute with
`--profile-from-start off` profiles only the kernels launched between `cuProfilerStart` and
`cuProfilerStop`, which this module calls around the same few calls.
"""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Callable, Generator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

from tile_protocol import Artifact, Message, ProfileSettings, case_dirname

__all__ = ["PROFILE_DIR", "annotation_name", "profile_case"]

PROFILE_DIR = "profile"
"""Under `outputs/<case-dir>/`: the trace, and the files the host adds (ncu's report)."""


def annotation_name(case_id: str, call: int) -> str:
    """The name of one profiled call in the trace: `tile <case id> #<call>`."""
    return f"tile {case_id} #{call}"


def profile_case(
    settings: ProfileSettings,
    run_dir: str | None,
    case_id: str,
    *,
    call: Callable[[], Any],
    source_file: str | None,
    send: Callable[[Message], None],
) -> None:
    """Warm up once, then make the calls `settings` asks for; announce each file with `send`.

    Without a run directory (the runner under ncu, whose files the host writes) neither the
    source nor a trace is written.
    """
    from tile_runner._jaxapi import block_until_ready

    rel = f"outputs/{case_dirname(case_id)}"
    root = Path(run_dir) if run_dir is not None else None
    if root is not None and settings.source and source_file:
        _copy_source(root, f"{rel}/kernel_source.py", source_file, case_id, send)
    block_until_ready(call())  # the first call pays for what the compiler left lazy
    calls = max(1, settings.calls)
    if root is not None and settings.trace:
        trace_rel = f"{rel}/{PROFILE_DIR}/trace"
        _traced(root / trace_rel, case_id, call, calls)
        _announce(root, trace_rel, case_id, "trace", send)
    if settings.ncu_range:
        with profiler_range():
            for _ in range(calls):
                block_until_ready(call())


def _traced(where: Path, case_id: str, call: Callable[[], Any], calls: int) -> None:
    """`calls` calls inside a JAX profiler trace written to `where`, each one annotated."""
    import jax

    from tile_runner._jaxapi import block_until_ready

    where.mkdir(parents=True, exist_ok=True)
    trace = cast("Callable[..., AbstractContextManager[None]]", jax.profiler.trace)  # pyright: ignore[reportUnknownMemberType]
    with trace(str(where), create_perfetto_trace=True):
        for i in range(calls):
            with jax.profiler.TraceAnnotation(annotation_name(case_id, i)):
                block_until_ready(call())


def _copy_source(
    root: Path, rel: str, source_file: str, case_id: str, send: Callable[[Message], None]
) -> None:
    """The kernel's defining file beside its views: a Pallas kernel's body is in it."""
    try:
        data = Path(source_file).read_bytes()
    except OSError:
        return  # a kernel made at run time has no file; the views still say what it is
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    _send_file(target, rel, case_id, "kernel_source", send)


def _announce(
    root: Path, rel_dir: str, case_id: str, kind: str, send: Callable[[Message], None]
) -> None:
    """Announce every file the profiler wrote under `rel_dir`."""
    for path in sorted(p for p in (root / rel_dir).rglob("*") if p.is_file()):
        _send_file(path, path.relative_to(root).as_posix(), case_id, kind, send)


def _send_file(
    path: Path, rel: str, case_id: str, kind: str, send: Callable[[Message], None]
) -> None:
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    send(Artifact(path=rel, kind=kind, sha256=digest, size_bytes=len(data), case_id=case_id))


@contextmanager
def profiler_range() -> Generator[None]:
    """`cuProfilerStart` ... `cuProfilerStop` on the primary context of the first GPU.

    XLA runs on the device's primary context, which is not current on this thread: it is
    retained and pushed for the two calls. Without a CUDA driver (a CPU) nothing happens.
    """
    cuda = _driver()
    if cuda is None:
        yield
        return
    with _primary_context(cuda):
        _check(cuda.cuProfilerStart(), "cuProfilerStart")
    try:
        yield
    finally:
        with _primary_context(cuda):
            _check(cuda.cuProfilerStop(), "cuProfilerStop")


def _driver() -> Any | None:
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


@contextmanager
def _primary_context(cuda: Any) -> Generator[None]:
    device = ctypes.c_int()
    context = ctypes.c_void_p()
    # Ordinal 0 of the visible devices is JAX's first device, the one a case runs on.
    _check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    _check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    try:
        _check(cuda.cuCtxPushCurrent_v2(context), "cuCtxPushCurrent")
        try:
            yield
        finally:
            popped = ctypes.c_void_p()
            cuda.cuCtxPopCurrent_v2(ctypes.byref(popped))
    finally:
        cuda.cuDevicePrimaryCtxRelease_v2(device)


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with CUDA error {status}: no profiler range was set")
