"""`tile profile --ncu`'s table: case ids and kernel names are text, never rich markup."""

from __future__ import annotations

from rich.console import Console

import tile_harness as th
from tile_cli.runs._profile import ncu_table


def test_a_case_id_and_a_kernel_name_in_brackets_are_printed_as_they_are() -> None:
    kernel = th.NcuKernel(
        name="triton_[red]_fusion",
        block="(128, 1, 1)",
        grid="(64, 1, 1)",
        metrics={"time": 31392.0, "dram_sol_pct": 91.5, "registers_per_thread": 16.0},
        units={"time": "ns"},
        stalls=[("long_scoreboard", 18.5)],
    )
    console = Console(width=200, record=True, color_system=None)
    console.print(ncu_table("std/copy[shape=131072,dtype=float32]", [kernel], plain=True))
    text = console.export_text()
    assert "ncu: std/copy[shape=131072,dtype=float32]" in text
    assert "triton_[red]_fusion" in text
    assert "31.39" in text and "91.5" in text and "long_scoreboard 18.50" in text
