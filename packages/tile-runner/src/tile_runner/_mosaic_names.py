"""Mosaic GPU kernels whose compiled programs JAX's persistent cache can find again.

jax 0.11 names each Mosaic GPU module it lowers for dumps, `<module name>_<N>` with N a
process-wide counter, and stores that name in the module (`mosaic_gpu.dump_basename`), which
is serialized into the custom call that XLA compiles. JAX's cache key hashes that payload
(its debug-info strip reaches only into TPU Mosaic kernels), so a kernel's key depends on how
many Mosaic GPU modules the process lowered before it, and in which order threads lowered
them. On the H100 (2026-12-06) tile-std's two Hopper matmul cases, compiled ahead in one
batch, swapped `anonymous_0` and `anonymous_1` between a cold and a warm run and missed the
cache in the warm one (`benchmarks/gpu/mosaic_key_probe.py`).

The name is set only where the module has none, so the runner names each module first after
its content (a digest of its bytecode): the same kernel gets the same name in every process,
and two kernels still dump to different files. Nothing else reads the attribute.

This module imports jax: call it where jax is imported (the runner's compile paths).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["BASENAME", "name_by_content", "stable_mosaic_names"]

BASENAME = "mosaic_gpu.dump_basename"
_CORE = "jax.experimental.mosaic.gpu.core"
"""The module whose `dialect.get_or_set_dump_options(module)` call names the modules."""
_MARK = "_tile_names_by_content"
_LOCK = threading.Lock()


def name_by_content(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`get_or_set_dump_options` that first names an unnamed module `<sym_name>_<digest>`."""

    def named(module: Any) -> Any:
        ir: Any = importlib.import_module("jaxlib.mlir.ir")  # jax's own MLIR bindings
        attributes = module.operation.attributes
        if BASENAME not in attributes:
            name = (
                ir.StringAttr(attributes["sym_name"]).value
                if "sym_name" in attributes
                else "mosaic_gpu_module"
            )
            data = io.BytesIO()
            module.operation.write_bytecode(data)
            digest = hashlib.sha256(data.getvalue()).hexdigest()[:16]
            attributes[BASENAME] = ir.StringAttr.get(f"{name}_{digest}", module.context)
        return original(module)

    setattr(named, _MARK, True)
    return named


def stable_mosaic_names() -> bool:
    """Once jax's Mosaic GPU is loaded (a kernel traced it in), name its modules by content
    from here on; True when that is in place. Call it between tracing and lowering: cheap
    when Mosaic GPU is not loaded, or a jax without dump names (before 0.11) is."""
    core = sys.modules.get(_CORE)
    dialect = getattr(core, "dialect", None)
    if dialect is None:
        return False
    with _LOCK:
        original = getattr(dialect, "get_or_set_dump_options", None)
        if original is None:
            return False
        if not getattr(original, _MARK, False):
            dialect.get_or_set_dump_options = name_by_content(original)
    return True
