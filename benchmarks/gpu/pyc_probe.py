"""Which Python sources a tile runner compiles at import because no bytecode for them can be
read or written where they are installed (issue #38: a cProfile of a warm one-case runner
on the H100 spent 0.42 s in `compile` on 109 source files, in every runner process).

Run with the same PYTHONPATH as tile's runner; prints the count and seconds, then the
installed packages whose sources were compiled, most files first.
"""

from __future__ import annotations

import collections
import importlib
import importlib._bootstrap_external as external
import time
from typing import Any

compiled: list[tuple[str, float]] = []
_original = external.SourceLoader.source_to_code


def _timed(self: Any, data: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
    t0 = time.perf_counter()
    try:
        return _original(self, data, path, *args, **kwargs)
    finally:
        compiled.append((str(path), time.perf_counter() - t0))


external.SourceLoader.source_to_code = _timed

# What a runner imports before its first case: JAX and its GPU backend, Pallas, tile.
for name in ("jax", "tile_runner", "tile_std", "jax.experimental.pallas"):
    module = importlib.import_module(name)
    if name == "jax":
        module.devices()

seconds = sum(s for _, s in compiled)
print(f"{len(compiled)} source files compiled at import, {seconds:.2f} s")
by_package: collections.Counter[str] = collections.Counter()
for path, _ in compiled:
    root, _, rest = path.rpartition("/site-packages/")
    by_package[f"{root}/site-packages :: {rest.split('/')[0]}" if root else path] += 1
for package, n in by_package.most_common(25):
    print(f"{n:5d}  {package}")
