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
