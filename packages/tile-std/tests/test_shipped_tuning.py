"""The tuning files tile-std ships (`tile_std/tuning/`) still fit its kernels: a kernel whose
tunables change makes its shipped entries hold for nothing (the runner checks the tunables'
signature and quietly runs the default), so the change must fail here and be tuned again."""

from __future__ import annotations

from pathlib import Path

import pytest

import tile_protocol as tp
import tile_runner as tile
import tile_std

SHIPPED = sorted((Path(tile_std.__file__).parent / "tuning").glob("*.json"))


def test_tile_std_ships_tuning_files() -> None:
    assert SHIPPED, "tile_std/tuning/ holds no tuning file"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_entry_holds_for_its_kernel_as_declared_now(path: Path) -> None:
    doc = tp.decode_tuning(path.read_bytes())
    assert doc.entries, path
    for entry in doc.entries:
        assert entry.device_kind == doc.device_kind, entry.case_id
        assert entry.kernel in tile_std.KERNELS, entry.case_id
        assert entry.case_id.startswith(entry.kernel + "["), entry.case_id
        tunables = tile.get_kernel(entry.kernel).tunables
        assert tunables is not None, f"{entry.kernel} has no tunables now"
        assert entry.signature == tunables.signature, (
            f"{entry.case_id}: tuned over other tunables than {entry.kernel} declares now; "
            "tune it again and copy the file here"
        )
        for name, value in entry.values.items():
            allowed = [tile.format_value(v) for v in tunables.axes.values(name)]
            assert value in allowed, (entry.case_id, name, value, allowed)
