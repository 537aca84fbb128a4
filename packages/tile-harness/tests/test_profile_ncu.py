"""Reading Nsight Compute's raw CSV page back: the shape `ncu --import R --csv --page raw
--print-units base` printed on an H200 (ncu 2025.3), cut to a few of its columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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


# ---------------------------------------------------------------- behind a stand-in for ncu

# Nsight Compute needs an NVIDIA GPU; this stand-in keeps its command line and files: it runs
# the program after its options (a real runner, whose stdout stays the protocol), then writes
# the report and the log where it was told, and prints a raw page for `--import`.
_FAKE_NCU = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
if "--import" in args:
    sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
    sys.exit(0)
valued = {{"--profile-from-start", "--target-processes", "--clock-control", "--metrics",
          "--export", "--log-file", "--kernel-name"}}
opts, i = {{}}, 0
while args[i].startswith("--"):
    if args[i] in valued:
        opts[args[i]] = args[i + 1]
        i += 2
    else:
        opts[args[i]] = True
        i += 1
log = open(opts["--log-file"], "w")
json.dump(opts, open(os.environ["FAKE_NCU_SEEN"], "w"))
if os.environ.get("FAKE_NCU_DENY"):
    log.write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\\n")
    sys.exit(1)
code = subprocess.call(args[i:])
log.write("==PROF== Disconnected\\n")
open(opts["--export"], "wb").write(b"a report")
sys.exit(code)
"""


def _fake_ncu(tmp_path: Path, monkeypatch: Any, *, deny: bool = False) -> tuple[str, Path]:
    import sys

    fake = tmp_path / "ncu"
    fake.write_text(_FAKE_NCU.format(python=sys.executable))
    fake.chmod(0o755)
    csv_text = _csv([_NAMES, _UNITS, _row("loop_add_fusion", "31,392", {"wait": "2"})])
    (tmp_path / "page.csv").write_text(csv_text)
    seen = tmp_path / "seen.json"
    monkeypatch.setenv("FAKE_NCU_CSV", str(tmp_path / "page.csv"))
    monkeypatch.setenv("FAKE_NCU_SEEN", str(seen))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    if deny:
        monkeypatch.setenv("FAKE_NCU_DENY", "1")
    return str(fake), seen


def _request(tmp_path: Path) -> tuple[Any, Any, str]:
    from tile_config import load_config

    project = tmp_path / "proj"
    (project / "kernels").mkdir(parents=True)
    (project / "kernels" / "scale.py").write_text(
        "import tile_runner as tile\n\n"
        "def _inputs(case, key):\n    return (tile.normal(key, (16,), 'float32'),)\n\n"
        "@tile.kernel('nc/scale', inputs=_inputs)\n"
        "def scale(x):\n    return x * 2.0 + 1.0\n"
    )
    (project / "tile.toml").write_text('[project]\npaths = ["kernels"]\n')
    resolved = load_config(cwd=project, environ={})
    request = th.build_request("build", resolved, th.Selection(), project / "run")
    return request, resolved, "nc/scale"


def test_a_case_runs_behind_ncu_and_its_report_is_read_back(
    tmp_path: Path, monkeypatch: Any
) -> None:
    ncu, seen = _fake_ncu(tmp_path, monkeypatch)
    request, resolved, case = _request(tmp_path)
    where = tmp_path / "profile"
    [kernel] = th.ncu_case(request, resolved, case, ncu=ncu, where=where, kernels="loop_.*")
    assert kernel.name == "loop_add_fusion" and kernel.stalls == [("wait", 2.0)]
    assert (where / "ncu.ncu-rep").read_bytes() == b"a report"  # written after the runner's done
    assert (where / "ncu.csv").read_text().count("loop_add_fusion") == 1
    opts = json.loads(seen.read_text())
    assert opts["--profile-from-start"] == "off" and opts["--kernel-name"] == "regex:loop_.*"
    assert opts["--export"] == str(where / "ncu.ncu-rep")
    # The runner behind ncu ran the case with no run directory of its own: it wrote nothing.
    assert not (tmp_path / "proj" / "run").exists()
    assert sorted(p.name for p in (where / "runner").iterdir())  # its stderr log is kept


def test_counters_not_permitted_behind_ncu_is_exit_2(tmp_path: Path, monkeypatch: Any) -> None:
    ncu, _ = _fake_ncu(tmp_path, monkeypatch, deny=True)
    request, resolved, case = _request(tmp_path)
    with pytest.raises(th.CliError) as caught:
        th.ncu_case(request, resolved, case, ncu=ncu, where=tmp_path / "profile")
    assert caught.value.code == th.ExitCode.USAGE and "ERR_NVGPUCTRPERM" in caught.value.message
