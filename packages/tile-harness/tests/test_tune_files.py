"""A tuning file of CPUs holds each CPU model's entries side by side (issue 40): a tune on one
machine replaces its own model's entries and an older tile's entries without a model, never
another model's."""

from __future__ import annotations

from pathlib import Path

import tile_protocol as tp
from tile_harness.tune._files import _merge_into  # pyright: ignore[reportPrivateUsage]

CASE = "k[n=1]"


def _entry(model: str | None, value: str, case_id: str = CASE) -> tp.TuningEntry:
    return tp.TuningEntry(kernel="k", case_id=case_id, signature="s", device_kind="cpu",
                          device_model=model, values={"b": value})  # fmt: skip


def test_a_tune_on_one_cpu_model_keeps_the_other_models_entries(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    _merge_into(path, "cpu", [_entry(None, "0"), _entry("A, 2 cores", "1")])
    _merge_into(path, "cpu", [_entry("B, 8 cores", "2"), _entry("B, 8 cores", "3", "k[n=2]")])
    entries = tp.decode_tuning(path.read_bytes()).entries
    got = {(e.case_id, e.device_model): e.values["b"] for e in entries}
    assert got == {
        (CASE, "A, 2 cores"): "1",
        (CASE, "B, 8 cores"): "2",
        ("k[n=2]", "B, 8 cores"): "3",
    }
    _merge_into(path, "cpu", [_entry("A, 2 cores", "4")])  # A tuned again: only A's entry moves
    got = {
        (e.case_id, e.device_model): e.values["b"]
        for e in tp.decode_tuning(path.read_bytes()).entries
    }
    assert got[(CASE, "A, 2 cores")] == "4" and got[(CASE, "B, 8 cores")] == "2"


def _choice(model: str, impl: str, point: str = "n=1") -> tp.OpChoice:
    return tp.OpChoice(op="norm", point=point, impl=impl, kernel=f"k/{impl}", case_id=CASE,
                       device_kind="cpu", device_model=model)  # fmt: skip


def test_implementation_choices_merge_by_op_point_and_cpu_model(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    _merge_into(path, "cpu", [_entry("A", "1")], [_choice("A", "jnp"), _choice("A", "jnp", "n=2")])
    _merge_into(path, "cpu", [_entry("B", "1")], [_choice("B", "pallas")])
    _merge_into(path, "cpu", [_entry("A", "2")], [_choice("A", "pallas")])  # A again, at n=1
    ops = tp.decode_tuning(path.read_bytes()).ops
    got = {(c.point, c.device_model): c.impl for c in ops}
    assert got == {("n=1", "A"): "pallas", ("n=2", "A"): "jnp", ("n=1", "B"): "pallas"}
    # A file written before choices existed reads as having none.
    old = (
        b'{"schema_name": "tile.tuning", "schema_version": 1, "device_kind": "cpu", "entries": []}'
    )
    assert tp.decode_tuning(old).ops == []
