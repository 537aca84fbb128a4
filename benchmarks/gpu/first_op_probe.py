"""Where a fresh process's first second on the GPU goes (issue #38: one case's inputs ~1 s).

Each run is a fresh child process that imports jax, starts the backend, imports tile-std (as a
runner's discovery does), then puts one array on the device and draws a 4096x4096 normal
(the first case's inputs), then draws again. Modes:

  serial       the device's first use after the imports, as the runner does today
  overlap      a thread puts a one-element array on the device while tile-std imports
  noprealloc   serial, with XLA_PYTHON_CLIENT_PREALLOCATE=false

The persistent compile cache is on (its own directory, warmed by a first child), so the draw
is a cache hit as in a warm run. Prints each child's timeline (seconds from its start) and the
median per mode. Usage: python benchmarks/gpu/first_op_probe.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

STEPS = ("import_jax", "backend", "import_std", "first_put", "first_draw", "second_draw")


def child(mode: str, cache: str) -> None:
    """One fresh process's timeline, printed as a JSON line."""
    start = time.perf_counter()
    marks: dict[str, float] = {}
    import jax
    import numpy as np

    from tile_runner._jaxapi import block_until_ready, config, devices, jit

    config.update("jax_compilation_cache_dir", cache)
    config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    marks["import_jax"] = time.perf_counter() - start
    devices()
    marks["backend"] = time.perf_counter() - start

    def put() -> None:
        block_until_ready(jax.device_put(np.zeros(1, np.float32)))  # pyright: ignore[reportUnknownMemberType]

    warm = threading.Thread(target=put) if mode == "overlap" else None
    if warm is not None:
        warm.start()
    import tile_std

    assert tile_std.__name__  # imported for its cost, as a runner's discovery imports it
    marks["import_std"] = time.perf_counter() - start
    if warm is not None:
        warm.join()
    else:
        put()
    marks["first_put"] = time.perf_counter() - start
    draw = jit(_normal)
    keys: list[Any] = [jax.random.key(0), jax.random.key(1)]
    block_until_ready(draw(keys[0]))  # pyright: ignore[reportUnknownArgumentType]
    marks["first_draw"] = time.perf_counter() - start
    block_until_ready(draw(keys[1]))  # pyright: ignore[reportUnknownArgumentType]
    marks["second_draw"] = time.perf_counter() - start
    print(json.dumps({"mode": mode, **marks}))


def _normal(key: Any) -> Any:
    import jax

    return jax.random.normal(key, (4096, 4096))


def run(mode: str, cache: str) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
    if mode == "noprealloc":
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    argv = [sys.executable, __file__, "--child", mode, "--cache", cache]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    line = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if not line:
        print(done.stderr[-2000:])
        return {}
    return json.loads(line[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", default=None)
    parser.add_argument("--cache", default=None)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.cache)
        return
    with tempfile.TemporaryDirectory(prefix="first-op-") as cache:
        run("serial", cache)  # fills the compile cache
        timelines: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.runs):
            for mode in ("serial", "overlap", "noprealloc"):
                t = run(mode, cache)
                timelines.setdefault(mode, []).append(t)
                print(mode, " ".join(f"{k} {t.get(k, float('nan')):.3f}" for k in STEPS))
        print("\nmedian seconds from the child's start")
        print(f"{'':>12}" + "".join(f"{s:>13}" for s in STEPS))
        for mode, runs in timelines.items():
            cells = [statistics.median(r[s] for r in runs if s in r) for s in STEPS]
            print(f"{mode:>12}" + "".join(f"{c:13.3f}" for c in cells))


if __name__ == "__main__":
    main()
