"""What the runner is asked: config keys that must reach it do (none is accepted and dropped)."""

from __future__ import annotations

from pathlib import Path

from tile_config import load_config
from tile_harness._requests import build_request
from tile_harness._settings import Selection


def test_machine_l2_bytes_sizes_the_cold_flush(tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text("[machine]\nl2_bytes = 50331648\n")
    resolved = load_config(cwd=tmp_path, environ={})
    request = build_request("bench", resolved, Selection(), None)
    assert request.bench.cache_bytes == 50331648
    (tmp_path / "tile.toml").write_text("[bench]\ncold = true\n")
    unset = build_request("bench", load_config(cwd=tmp_path, environ={}), Selection(), None)
    assert unset.bench.cache_bytes is None  # the runner's table decides
