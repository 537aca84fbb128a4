"""A CPU is told apart by its model and core count: JAX calls every CPU `cpu`, so a tuning
entry made on one CPU model must not hold silently on another (issue 40)."""

from __future__ import annotations

import os
from pathlib import Path

import tile_protocol as proto
import tile_runner as tile
from tile_runner._tuning_index import TuningIndex

CASE = "fxt/rows[n=32]"
EPYC = "AMD EPYC 7B13, 2 cores"
XEON = "Intel(R) Xeon(R) CPU @ 2.20GHz, 8 cores"


def _entry(model: str | None) -> proto.TuningEntry:
    return proto.TuningEntry(kernel="fxt/rows", case_id=CASE, signature="sig", device_kind="cpu",
                             device_model=model, values={"block": "2"})  # fmt: skip


def test_cpu_model_is_the_first_model_name_and_the_core_count(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\n"
        "model name\t: AMD  EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
    )
    cores = os.cpu_count() or 1
    assert tile.cpu_model(cpuinfo) == f"AMD EPYC 7B13, {cores} core{'s' if cores != 1 else ''}"
    # No /proc/cpuinfo (macOS, Windows): platform.processor() or the machine type names it.
    fallback = tile.cpu_model(tmp_path / "missing")
    assert fallback.endswith(f", {cores} core{'s' if cores != 1 else ''}")
    assert fallback.split(",")[0].strip()


def test_a_tuning_entry_of_another_cpu_model_is_not_used_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    path.write_bytes(proto.encode_tuning(proto.TuningFile(device_kind="cpu",
                                                          entries=[_entry(EPYC)])))  # fmt: skip
    here = TuningIndex.load([path], device_kind="cpu", jax_version="0", device_model=XEON)
    found = here.find(CASE, "sig")
    assert found.entry is None and found.source == "default"
    assert found.note is not None and f"tuned it on {EPYC}, not {XEON}" in found.note
    same = TuningIndex.load([path], device_kind="cpu", jax_version="0", device_model=EPYC)
    assert same.lookup(CASE, "sig") == _entry(EPYC)


def test_one_file_holds_several_cpu_models_and_an_old_entry_holds_on_any(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    both = proto.TuningFile(device_kind="cpu", entries=[_entry(XEON), _entry(EPYC)])
    path.write_bytes(proto.encode_tuning(both))
    for model in (EPYC, XEON):
        index = TuningIndex.load([path], device_kind="cpu", jax_version="0", device_model=model)
        found = index.lookup(CASE, "sig")
        assert found is not None and found.device_model == model
    # A file written before tile recorded the model: its entries hold on any CPU, as before.
    path.write_bytes(proto.encode_tuning(proto.TuningFile(device_kind="cpu",
                                                          entries=[_entry(None)])))  # fmt: skip
    index = TuningIndex.load([path], device_kind="cpu", jax_version="0", device_model=XEON)
    assert index.lookup(CASE, "sig") == _entry(None)
