"""Why the Hopper matmul misses JAX's persistent cache in a warm run. For a GPU machine.

Runs `tile bench --kernel std/matmul` (or the arguments given) three times with one compile
cache: cold and warm as a user runs them, then warm with `--cache-report`; each
with XLA's HLO dumps on, and compares the `mosaic_gpu_v2` custom calls of the two runs: their
`kernel_hash` (a SHA-256 of the serialized Mosaic GPU module, which JAX's cache key includes
because its debug-info strip does not reach into the payload), and where the first payload
that changed differs, with the readable text around it (file paths and line numbers of the
module's locations are plain strings in MLIR bytecode).

Usage: python benchmarks/gpu/mosaic_key_probe.py WORKDIR [tile bench arguments]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_HASH = re.compile(rb'kernel_hash\s*=\s*"((?:[^"\\]|\\.)*)"')
_MODULE = re.compile(rb'module\s*=\s*"((?:[^"\\]|\\.)*)"')


def _bench(work: Path, name: str, report: bool) -> Path:
    dump = work / f"dump-{name}"
    env = dict(
        os.environ,
        TILE_CACHE_DIR=str(work / "cache"),
        XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text "
        "--xla_dump_hlo_module_re=.*matmul.*",
    )
    extra = sys.argv[2:] if len(sys.argv) > 2 else ["--kernel", "std/matmul"]
    cmd = [sys.executable, "-m", "tile_cli", "bench", *extra, "--max-time", "0.1"]
    # `--cache-report` compiles each case in its turn (its events name the case in flight);
    # without it a run compiles cases ahead, in batches on a thread pool.
    cmd += [*(["--cache-report", "-v"] if report else []), "-o", str(work / f"run-{name}")]
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [ln for ln in out.stdout.splitlines() if "miss" in ln or "differs" in ln]
    lines += [ln for ln in out.stdout.splitlines() if " in " in ln and "tile bench:" in ln]
    print(f"{name}: exit {out.returncode}; " + ("\n  ".join(lines[:12]) or "no cache lines"))
    return dump


def _calls(dump: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """(kernel_hash, module payload) of each mosaic_gpu_v2 call, by dump file stem."""
    found: dict[str, list[tuple[bytes, bytes]]] = {}
    for path in sorted(dump.glob("*before_optimizations.txt")):
        text = path.read_bytes()
        if b"mosaic_gpu" not in text:
            continue
        stem = re.sub(r"^module_\d+\.", "", path.name)
        # By the first shape it names: batch mode compiles cases in any order.
        shape = re.search(rb"\w+\[[\d,]+\]", text)
        stem = f"{stem} {shape.group(0).decode() if shape else ''}"
        hashes = [m.group(1) for m in _HASH.finditer(text)]
        modules = [m.group(1) for m in _MODULE.finditer(text)]
        found[stem] = list(zip(hashes, modules, strict=False))
        # The whole program less its metadata, for a key that changed outside the payload.
        _TEXTS[stem] = re.sub(rb"metadata=\{[^}]*\}", b"", _MODULE.sub(b"module=...", text))
        if not hashes:  # a dump format these patterns do not know: show it
            at = text.find(b"kernel_hash")
            print(
                f"{path.name}: no kernel_hash parsed; near it: {_readable(text[at - 200 : at + 400])}"
            )
    return found


_TEXTS: dict[str, bytes] = {}


def _readable(raw: bytes) -> str:
    return re.sub(r"[^ -~]+", ".", raw.decode("latin-1"))


def main(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    cold = _calls(_bench(work, "cold", report=False))
    cold_texts = dict(_TEXTS)
    for name, report in (("warm", False), ("warm-report", True)):
        _TEXTS.clear()
        _compare(cold, _calls(_bench(work, name, report)), name)
        for stem in sorted(set(cold_texts) & set(_TEXTS)):
            a, b = cold_texts[stem], _TEXTS[stem]
            if a == b:
                print(f"{stem}: the program less payload and metadata is the same")
                continue
            at = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), 0)
            print(f"{stem}: the program differs at byte {at} (payload and metadata left out)")
            print("  cold: " + _readable(a[max(0, at - 300) : at + 300]))
            print(f"  {name}: " + _readable(b[max(0, at - 300) : at + 300]))


def _compare(
    cold: dict[str, list[tuple[bytes, bytes]]],
    warm: dict[str, list[tuple[bytes, bytes]]],
    name: str,
) -> None:
    """Each Mosaic GPU call compiled again in the warm run against the cold run's."""
    print(f"programs with a Mosaic GPU call compiled: cold {len(cold)}, {name} {len(warm)}")
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
            print(f"  {name}: " + _readable(mb[max(0, at - 300) : at + 300]))
            # The source files each side names, for locations that moved.
            files = re.compile(rb"[\w./-]+\.py")
            a, b = set(files.findall(ma)), set(files.findall(mb))
            print(f"  files only cold: {sorted(a - b)[:8]}; only {name}: {sorted(b - a)[:8]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
