"""Why the Hopper matmul misses JAX's persistent cache in a warm run: is its lowered program
the same in two fresh processes, and twice in one? For a GPU machine.

Usage: python benchmarks/gpu/mosaic_key_probe.py lower OUT_PREFIX   (one process's lowerings)
       python benchmarks/gpu/mosaic_key_probe.py compare A B         (first difference, if any)
"""

from __future__ import annotations

import re
import sys


def lower(prefix: str) -> None:
    import jax
    import jax.numpy as jnp

    import tile_std

    a = jnp.ones((4096, 4096), jnp.bfloat16)
    for i in (1, 2):
        text = jax.jit(tile_std.matmul).lower(a, a).as_text()  # pyright: ignore[reportUnknownMemberType]
        with open(f"{prefix}-{i}.txt", "w") as f:  # noqa: PTH123
            f.write(re.sub(r"#loc\S* = loc\(.*\)|loc\(#loc\d*\)", "", text))
        jax.clear_caches()


def compare(a_path: str, b_path: str) -> None:
    with open(a_path) as fa, open(b_path) as fb:  # noqa: PTH123
        a, b = fa.read(), fb.read()
    if a == b:
        print(f"{a_path} == {b_path} ({len(a)} chars)")
        return
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    print(f"{a_path} != {b_path}: {len(a)} and {len(b)} chars, first difference at {i}")
    print("  a: ..." + a[max(0, i - 160) : i + 160].replace("\n", " "))
    print("  b: ..." + b[max(0, i - 160) : i + 160].replace("\n", " "))


if __name__ == "__main__":
    if sys.argv[1] == "lower":
        lower(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
