"""Does a reference timed turn about with its kernel take longer after a long kernel? (CPU)

`tile bench` times a case's reference interleaved with the kernel (`InterleavedSampler`):
turns of about 2 ms each, so a kernel of a millisecond or more gets turns of one or two calls,
and so does its reference. This script benches one tiny reference (x * 2 on 16x64 floats)
beside kernels that busy-loop for 0 to 1600 steps, through `tile bench` in a fresh project,
and prints each case's kernel and reference medians: the reference's own work never changes,
so whatever its median gains comes from following the kernel. Then, in this process, the
reference's 1st to 8th calls after one kernel call (medians over 200 repeats), which says how
many calls the effect lasts.

    python benchmarks/interleave_wake.py [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STEPS = [0, 25, 50, 100, 200, 400, 800, 1600]

KERNELS = f"""
import jax.numpy as jnp
from jax import lax
import tile_runner as tile


def _ref(x, steps):
    return x * 2.0


def _inputs(case, key):
    return (tile.normal(key, (16, 64), "float32"), case.steps)


@tile.kernel("wake/busy", inputs=_inputs, reference=_ref, bench=tile.axes(steps={STEPS}))
def busy(x, steps):
    spun = lax.fori_loop(0, steps, lambda i, a: jnp.sin(a), x)
    return x * 2.0 + 0.0 * jnp.sum(spun)
"""


def through_tile(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "wake.py").write_text(KERNELS)
        (root / "tile.toml").write_text(
            '[project]\npaths = ["wake.py"]\nplugins = []\n[bench]\nmax_time = 1.0\nmin_runs = 300\n'
        )
        for run in range(runs):
            out = root / f"run{run}"
            argv = [sys.executable, "-m", "tile_cli", "bench", "-o", str(out)]
            subprocess.run(argv, cwd=root, capture_output=True, check=True)
            print(f"tile bench, run {run + 1}: kernel and reference medians (us)")
            for case in json.loads((out / "report.json").read_text())["cases"]:
                kernel = statistics.median(case["samples"]) * 1e6
                reference = statistics.median(case["reference"]["samples"]) * 1e6
                print(f"  steps {case['params']['steps']:5}  kernel {kernel:8.1f}  "
                      f"reference {reference:6.1f}  ({len(case['samples'])} samples)")  # fmt: skip


CALL_BY_CALL = """
import statistics, time
import jax, jax.numpy as jnp
from jax import lax

x = jnp.ones((16, 64), jnp.float32)
ref = jax.jit(lambda v: v * 2.0)


def timed(fn, arg):
    t0 = time.perf_counter()
    fn(arg).block_until_ready()
    return time.perf_counter() - t0


def busy(steps):
    return jax.jit(lambda v: v * 2.0 + 0.0 * jnp.sum(lax.fori_loop(0, steps, lambda i, a: jnp.sin(a), v)))


ref(x).block_until_ready()
print("the reference's calls 1..8 after one kernel call (medians of 200 repeats, us)")
for steps in (0, 200, 1600):
    kernel = busy(steps)
    kernel(x).block_until_ready()
    rows = []
    for _ in range(200):
        timed(kernel, x)
        rows.append([timed(ref, x) for _ in range(8)])
    medians = [statistics.median(r[j] for r in rows) * 1e6 for j in range(8)]
    print(f"  steps {steps:5}  " + " ".join(f"{m:6.1f}" for m in medians))
"""


def call_by_call() -> None:
    """The reference's first calls after one kernel call, in a fresh process."""
    subprocess.run([sys.executable, "-c", CALL_BY_CALL], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    opts = parser.parse_args()
    through_tile(opts.runs)
    call_by_call()


if __name__ == "__main__":
    main()
