"""Why the Hopper matmul misses JAX's persistent cache in a warm run. For a GPU machine.

Runs `tile bench --kernel std/matmul` twice with one compile cache (cold, then warm), each
with XLA's HLO dumps on, and compares the `mosaic_gpu_v2` custom calls of the two runs: their
`kernel_hash` (a SHA-256 of the serialized Mosaic GPU module, which JAX's cache key includes
because its debug-info strip does not reach into the payload), and where the first payload
that changed differs, with the readable text around it (file paths and line numbers of the
module's locations are plain strings in MLIR bytecode).

Usage: python benchmarks/gpu/mosaic_key_probe.py WORKDIR
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_HASH = re.compile(rb'kernel_hash\s*=\s*"((?:[^"\\]|\\.)*)"')
_MODULE = re.compile(rb'module\s*=\s*"((?:[^"\\]|\\.)*)"')


def _bench(work: Path, name: str) -> Path:
    dump = work / f"dump-{name}"
    env = dict(
        os.environ,
        TILE_CACHE_DIR=str(work / "cache"),
        XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text",
    )
    cmd = [
        sys.executable,
        "-m",
        "tile_cli",
        "bench",
        "--kernel",
        "std/matmul",
        "--max-time",
        "0.1",
        "--cache-report",
        "-v",
        "-o",
        str(work / f"run-{name}"),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if "miss" in ln or "hit" in ln]
    print(f"{name}: exit {out.returncode}; " + (" | ".join(lines[:6]) or "no cache lines"))
    return dump


def _calls(dump: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """(kernel_hash, module payload) of each mosaic_gpu_v2 call, by dump file stem."""
    found: dict[str, list[tuple[bytes, bytes]]] = {}
    for path in sorted(dump.glob("*before_optimizations.txt")):
        text = path.read_bytes()
        if b"mosaic_gpu" not in text:
            continue
        stem = re.sub(r"^module_\d+\.", "", path.name)
        hashes = [m.group(1) for m in _HASH.finditer(text)]
        modules = [m.group(1) for m in _MODULE.finditer(text)]
        found[stem] = list(zip(hashes, modules, strict=False))
        if not hashes:  # a dump format these patterns do not know: show it
            at = text.find(b"kernel_hash")
            print(
                f"{path.name}: no kernel_hash parsed; near it: {_readable(text[at - 200 : at + 400])}"
            )
    return found


def _readable(raw: bytes) -> str:
    return re.sub(r"[^ -~]+", ".", raw.decode("latin-1"))


def main(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    cold, warm = _calls(_bench(work, "cold")), _calls(_bench(work, "warm"))
    print(f"programs with a Mosaic GPU call: cold {len(cold)}, warm {len(warm)}")
    for stem in sorted(set(cold) & set(warm)):
        for i, ((ha, ma), (hb, mb)) in enumerate(zip(cold[stem], warm[stem], strict=False)):
            same = "same" if ha == hb else "DIFFERENT"
            print(f"{stem} call {i}: kernel_hash {same}; payload {len(ma)} / {len(mb)} bytes")
            if ma == mb:
                continue
            at = next(
                (j for j, (x, y) in enumerate(zip(ma, mb, strict=False)) if x != y),
                min(len(ma), len(mb)),
            )
            print(f"  first difference at byte {at}")
            print("  cold: " + _readable(ma[max(0, at - 300) : at + 300]))
            print("  warm: " + _readable(mb[max(0, at - 300) : at + 300]))
            # Every distinct path:line string of each side, for locations that moved.
            locs = re.compile(rb"[\w./-]+\.py")
            a, b = set(locs.findall(ma)), set(locs.findall(mb))
            print(f"  files only cold: {sorted(a - b)[:8]}; only warm: {sorted(b - a)[:8]}")
    if set(cold) != set(warm):
        print(f"programs in one run only: {sorted(set(cold) ^ set(warm))}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
