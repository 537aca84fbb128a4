"""Repository-wide pytest hooks: GPU tests run only where a GPU is present."""

from __future__ import annotations

import shutil

import pytest


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    """Keep every test's caches (JAX's compilation cache among them) out of the user's home,
    and time benches in one runner process (`[bench] processes`: two on a CPU otherwise),
    which tests/test_processes.py undoes where the processes are the point."""
    import os
    import tempfile

    os.environ.setdefault("TILE_BENCH_PROCESSES", "1")
    if "TILE_CACHE_DIR" not in os.environ:
        os.environ["TILE_CACHE_DIR"] = tempfile.mkdtemp(prefix="tile-test-cache-")
        config.stash[_OWN_CACHE] = os.environ["TILE_CACHE_DIR"]


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_CACHE, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


_OWN_CACHE = pytest.StashKey[str]()
