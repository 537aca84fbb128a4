"""`tile bench -v` shows where each multi-kernel case's time went, slowest kernel first; a case
with one kernel, or without a breakdown (any timer but cupti), adds nothing."""

from __future__ import annotations

from rich.console import Console

import tile_protocol as tp
from tile_cli.terminal._render import _print_breakdowns


def _stats(median: float) -> tp.Stats:
    return tp.Stats(n=9, min=median, max=median, mean=median, median=median, stdev=0.0, mad=0.0,
                    q1=median, q3=median, p5=median, p95=median, ci_low=median * 0.99,
                    ci_high=median * 1.01)  # fmt: skip


def _result(case_id: str, kernels: list[tp.KernelTime] | None) -> tp.BenchResult:
    return tp.BenchResult(case_id=case_id, kernel="std/attention", timer="cupti",
                          stats=_stats(1e-3), kernels=kernels)  # fmt: skip


def test_verbose_bench_lists_each_kernel_of_a_multi_kernel_case() -> None:
    split = [
        tp.KernelTime(name="loop_convert_fusion", short="loop_convert_fusion",
                      origin="loop_convert_fusion (kLoop)", stats=_stats(1e-4), share=0.1),
        tp.KernelTime(name="attention_kernel", short="attention_kernel", launches=2,
                      stats=_stats(9e-4), share=0.9),
    ]  # fmt: skip
    one = [tp.KernelTime(name="k", short="k", stats=_stats(1e-3), share=1.0)]
    console = Console(record=True, width=120, color_system=None)
    _print_breakdowns(
        console, [_result("a[n=1]", split), _result("a[n=2]", one), _result("a[n=3]", None)]
    )
    lines = console.export_text().splitlines()
    assert lines[0] == "a[n=1]: 2 kernels a call"
    assert lines[1].split() == [
        "90.0%",
        "900",
        "µs",
        "[891",
        "µs,",
        "909",
        "µs]",
        "attention_kernel",
        "×2",
    ]
    assert lines[2].endswith("loop_convert_fusion [loop_convert_fusion (kLoop)]")
    assert len(lines) == 3  # nothing for the one-kernel case or the case without a breakdown
