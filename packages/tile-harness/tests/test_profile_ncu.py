"""Reading Nsight Compute's raw CSV page back: the shape `ncu --import R --csv --page raw
--print-units base` printed on an H200 (ncu 2025.3), cut to a few of its columns."""

from __future__ import annotations

import tile_harness as th
from tile_harness._profile import NCU_STALLS, ncu_argv, stall_metric

_NAMES = [
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC", "device__attribute_clock_rate",
    *th.NCU_METRICS.values(), *map(stall_metric, NCU_STALLS),
]  # fmt: skip
_UNITS = ["", "", "", "", "", "", "", "", "", "", "", "", "ns", "%", "%", "%",
          "register/thread", "byte/block", "byte/block", "%"] + [""] * len(NCU_STALLS)  # fmt: skip


def _row(kernel: str, time_ns: str, stalls: dict[str, str]) -> list[str]:
    fixed = ["0", "604", "python3.12", "127.0.0.1", kernel, "1", "14", "(128, 1, 1)",
             "(32768, 1, 1)", "0", "9.0", "1,980,000"]  # fmt: skip
    metrics = [time_ns, "91.52", "12.30", "72.35", "16", "0", "1,024", "0.01"]
    return fixed + metrics + [stalls.get(r, "0") for r in NCU_STALLS]


def _csv(rows: list[list[str]]) -> str:
    lines = ["==PROF== a line of ncu's own before the table"]
    for row in rows:
        lines.append(",".join(f'"{cell}"' for cell in row))
    return "\n".join(lines) + "\n"


def test_each_kernel_row_becomes_its_named_metrics_and_top_three_stalls() -> None:
    text = _csv([
        _NAMES, _UNITS,
        _row("loop_add_fusion", "31,392", {"long_scoreboard": "18.5", "wait": "1.25",
                                             "lg_throttle": "3", "barrier": "0.5"}),
        _row("input_reduce_fusion", "1,204", {"barrier": "2"}),
    ])  # fmt: skip
    first, second = th.parse_ncu_csv(text)
    assert first.name == "loop_add_fusion" and first.block == "(128, 1, 1)"
    assert first.metrics["time"] == 31392.0  # thousands separators read
    assert first.metrics["dram_sol_pct"] == 91.52 and first.metrics["occupancy_pct"] == 72.35
    assert first.metrics["registers_per_thread"] == 16 and first.smem_per_block == 1024
    assert first.units["time"] == "ns"
    assert first.stalls == [("long_scoreboard", 18.5), ("lg_throttle", 3.0), ("wait", 1.25)]
    assert second.metrics["time"] == 1204.0 and second.stalls == [("barrier", 2.0)]  # no zeros
    assert first.as_json()["top_stalls"] == [
        {"reason": "long_scoreboard", "ratio": 18.5},
        {"reason": "lg_throttle", "ratio": 3.0},
        {"reason": "wait", "ratio": 1.25},
    ]


def test_a_report_without_kernels_reads_as_none() -> None:
    assert th.parse_ncu_csv("==PROF== No kernels were profiled.\n") == []
    assert th.parse_ncu_csv(_csv([_NAMES, _UNITS])) == []


def test_the_runner_is_profiled_only_in_its_range_with_the_named_metrics() -> None:
    from pathlib import Path

    argv = ncu_argv("/opt/ncu", Path("r.ncu-rep"), Path("ncu.log"))
    assert argv[:3] == ["/opt/ncu", "--profile-from-start", "off"]
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert metrics == th.metric_names() and "gpu__time_duration.sum" in metrics
    assert argv[argv.index("--log-file") + 1] == "ncu.log"  # never the protocol's stdout
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert "--kernel-name" not in argv
    only = ncu_argv("/opt/ncu", Path("r.ncu-rep"), Path("ncu.log"), kernels="fusion|gemm")
    assert only[0] == "/opt/ncu" and only[only.index("--kernel-name") + 1] == "regex:fusion|gemm"


def test_counters_not_permitted_is_a_usage_error_with_a_hint() -> None:
    from tile_harness._profile import ncu_refusal

    said = (
        "==PROF== Connected to process 604 (/usr/bin/python3.12)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0.\n"
    )
    refused = ncu_refusal(said)
    assert refused is not None and refused.code == th.ExitCode.USAGE
    assert "ERR_NVGPUCTRPERM" in refused.message
    assert refused.hint is not None and "NVreg_RestrictProfilingToAdminUsers" in refused.hint
    assert ncu_refusal("==PROF== Report: /tmp/r.ncu-rep\n") is None
