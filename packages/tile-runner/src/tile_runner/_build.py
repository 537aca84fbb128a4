"""What the compiler made of one case: the views `tile inspect` prints and `tile build` stores."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tile_protocol import INSPECT_KINDS, Artifact, InspectKind, Message, case_dirname

__all__ = [
    "BUILD_FILES",
    "Stages",
    "cost_dict",
    "lower_only",
    "memory_dict",
    "view_text",
    "write_build_outputs",
]

BUILD_FILES = {
    "jaxpr": "jaxpr.txt",
    "stablehlo": "stablehlo.mlir",
    "hlo": "hlo.txt",
    "cost": "cost_analysis.json",
    "memory": "memory_analysis.json",
}
"""File name of each view under `outputs/<case-dir>/`; the export adds `export.bin`."""

EXPORT_FILE = "export.bin"
_KIND_OF_FILE = {"cost": "cost_analysis", "memory": "memory_analysis"}


@dataclass(frozen=True)
class Stages:
    """The stages of one case that the requested views need; `compiled` only when needed."""

    traced: Any
    lowered: Any
    compiled: Any | None = None


_LOCATION_FRAMES = "jax_traceback_in_locations_limit"


@contextlib.contextmanager
def _without_source_locations() -> Generator[None]:
    """Lower with no Python frames in MLIR locations.

    Pallas kernels on GPUs are embedded in the StableHLO as serialized Triton or Mosaic
    modules whose locations carry absolute file paths and line numbers; without them the
    text is the same in every checkout, so `tile snap` compares lowering, not paths.
    """
    from tile_runner._jaxapi import config

    try:
        before = getattr(config, _LOCATION_FRAMES)
        config.update(_LOCATION_FRAMES, 0)
    except (AttributeError, KeyError, ValueError):  # a jax without the option
        yield
        return
    try:
        yield
    finally:
        config.update(_LOCATION_FRAMES, before)


def lower_only(fn: Callable[..., Any], args: Sequence[Any]) -> Stages:
    """Trace and lower without compiling or source locations (jaxpr and StableHLO views)."""
    from tile_runner._jaxapi import jit
    from tile_runner._mosaic_names import stable_mosaic_names

    if hasattr(fn, "lower") and hasattr(fn, "trace"):
        jitted: Any = fn
    else:
        # jax caches lowerings by function, and the location setting is not part of the key:
        # a fresh function makes sure this lowering is done here, without locations.
        def fresh(*dyn: Any) -> Any:
            return fn(*dyn)

        fresh.__name__ = getattr(fn, "__name__", "kernel")
        fresh.__qualname__ = getattr(fn, "__qualname__", fresh.__name__)
        jitted = jit(fresh)
    with _without_source_locations():
        traced = jitted.trace(*args)
        stable_mosaic_names()  # no process counter in a Mosaic GPU kernel's text
        return Stages(traced=traced, lowered=traced.lower())


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: those become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in cast("Mapping[object, object]", value).items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in cast("Sequence[object]", value)]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def cost_dict(compiled: Any) -> dict[str, Any] | None:
    """XLA's cost analysis of one call as plain JSON data; None where XLA has none."""
    try:
        analysis: object = compiled.cost_analysis()
    except Exception:
        return None
    # Older jax versions return a list with one dict per computation.
    if isinstance(analysis, list | tuple):
        analysis = cast("Sequence[object]", analysis)[0] if analysis else None
    if not isinstance(analysis, Mapping):
        return None
    fields = cast("Mapping[str, object]", analysis)
    return {str(k): _finite(v) for k, v in sorted(fields.items())}


def memory_dict(compiled: Any) -> dict[str, Any] | None:
    """The fields of `compiled.memory_analysis()` (sizes in bytes); None where unavailable."""
    try:
        stats = compiled.memory_analysis()
    except Exception:
        return None
    if stats is None:
        return None
    fields: dict[str, Any] = {}
    for name in sorted(dir(stats)):
        if name.startswith("_"):
            continue
        try:
            value = getattr(stats, name)
        except Exception:
            continue
        # Skips methods and the serialized buffer-assignment proto (bytes).
        if isinstance(value, bool | int | float | str) or value is None:
            fields[name] = _finite(value)
    return fields or None


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def view_text(kind: InspectKind, stages: Stages) -> str:
    """One view of a case as text: what `tile inspect --kind KIND` prints."""
    if kind == "jaxpr":
        return str(stages.traced.jaxpr)
    if kind == "stablehlo":
        return stages.lowered.as_text()
    if kind in ("hlo", "cost", "memory"):
        if stages.compiled is None:
            raise ValueError(f"the `{kind}` view needs a compiled case")
        if kind == "hlo":
            return stages.compiled.as_text()
        data = cost_dict(stages.compiled) if kind == "cost" else memory_dict(stages.compiled)
        return _json(data)
    raise ValueError(f"unknown inspect kind {kind!r}; use one of {', '.join(INSPECT_KINDS)} or all")


def _write(path: Path, data: bytes) -> None:
    """Temp file and rename: a killed runner never leaves a half-written view behind."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _export(fn: Callable[..., Any], args: Sequence[Any]) -> bytes:
    """The serialized `jax.export` artifact of the jitted kernel."""
    from jax import export

    from tile_runner._jaxapi import jit

    jitted: Any = fn if hasattr(fn, "lower") and hasattr(fn, "trace") else jit(fn)
    return bytes(export.export(jitted)(*args).serialize())


def write_build_outputs(
    run_dir: str,
    case_id: str,
    stages: Stages,
    *,
    fn: Callable[..., Any],
    args: Sequence[Any],
    send: Callable[[Message], None],
) -> str | None:
    """Write `outputs/<case-dir>/` and announce each file with `send`; return why there is no
    export (of `fn` on `args`).

    A kernel that cannot be exported (Pallas custom calls, host callbacks, a missing
    `flatbuffers`) still builds: the reason is returned for the BuildResult instead.
    """
    rel_dir = f"outputs/{case_dirname(case_id)}"
    target = Path(run_dir) / rel_dir
    target.mkdir(parents=True, exist_ok=True)
    files: list[tuple[str, str, bytes]] = [
        (BUILD_FILES[kind], _KIND_OF_FILE.get(kind, kind), view_text(kind, stages).encode())
        for kind in INSPECT_KINDS
    ]
    problem: str | None = None
    try:
        files.append((EXPORT_FILE, "export", _export(fn, args)))
    except Exception as exc:
        first = (str(exc) or type(exc).__name__).strip().splitlines()[0][:300]
        problem = f"no jax.export artifact: {type(exc).__name__}: {first}"
    for name, kind, data in files:
        _write(target / name, data)
        send(
            Artifact(
                path=f"{rel_dir}/{name}",
                kind=kind,
                sha256=hashlib.sha256(data).hexdigest(),
                size_bytes=len(data),
                case_id=case_id,
            )
        )
    return problem
