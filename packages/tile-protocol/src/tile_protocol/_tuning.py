"""Tuning files: which tunable values won `tile tune`, per device kind, kernel and case; and the
units `tile tune` times, one configuration of one case each.

`tile tune` writes the files (the CLI) and every runner reads them (bench, test, library use),
so the format lives here, beside the wire protocol, as the one contract both sides share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from tile_protocol._errors import DecodeError
from tile_protocol.format import format_values

__all__ = [
    "TUNING_SCHEMA",
    "OpChoice",
    "TuneUnit",
    "TuningEntry",
    "TuningFile",
    "decode_tuning",
    "encode_tuning",
    "op_point",
    "overrides_for",
]

TUNING_SCHEMA = "tile.tuning"


class TuningEntry(msgspec.Struct, frozen=True, kw_only=True):
    """The winning tunable values of one case on one device kind and JAX version.

    An entry applies only while the kernel's tunables are the ones it was tuned over
    (`signature`) and JAX is the same version: a new tunable value or another compiler can
    make another configuration the fastest.
    """

    kernel: str
    case_id: str
    signature: str
    device_kind: str
    device_model: str | None = None
    """The CPU's model and core count it was tuned on (`DeviceInfo.model`); an entry without
    one (tuned on an accelerator, or by an older tile) holds on any model of its kind."""
    jax_version: str | None = None
    jaxlib_version: str | None = None
    values: dict[str, str]
    median_s: float | None = None
    runner_up: dict[str, str] | None = None
    margin: float | None = None
    """Runner-up median / winner median (1.0 when they tied and the tie-break chose)."""
    decided_by: Literal["faster", "tie_default", "tie_simplest", "only"] = "faster"
    tuned_at: str | None = None
    run_id: str | None = None
    held: dict[str, str] | None = None
    """The values the tune held fixed (`tile tune --tunable`): `values` is the fastest of the
    configurations that have them, not of all (None: every configuration was tried)."""


def overrides_for(kernel: str, overrides: Mapping[str, str]) -> dict[str, str]:
    """The `--tunable` values of a request that reach `kernel`: each plain `NAME`, and each
    `KERNEL:NAME` that names this kernel (it wins over the plain one: two kernels can share a
    tunable name, as tile-std's matmul and attention share `block`)."""
    plain = {name: value for name, value in overrides.items() if ":" not in name}
    own = {
        name.rpartition(":")[2]: value
        for name, value in overrides.items()
        if name.rpartition(":")[0] == kernel
    }
    return {**plain, **own}


def op_point(params: dict[str, str]) -> str:
    """The point of an op a case stands for: its axis values (its mode included), sorted by
    name, as text (`dtype=float32,shape=4096x1024`). An op's implementations share the points
    they both run, whatever order each declares its axes in."""
    return ",".join(f"{name}={value}" for name, value in sorted(params.items()))


class OpChoice(msgspec.Struct, frozen=True, kw_only=True):
    """Which implementation of an op won `tile tune` at one point, on one device and JAX
    version: the implementation is the op's tunable, chosen by the same rule as a kernel's
    configuration (the fastest unless it cannot be told from the others; a tie goes to the
    op's baseline implementation)."""

    op: str
    point: str
    """`op_point` of the cases compared: the axis values every implementation ran."""
    impl: str
    kernel: str
    case_id: str
    """The winning implementation's case at this point."""
    device_kind: str
    device_model: str | None = None
    jax_version: str | None = None
    median_s: float | None = None
    runner_up: str | None = None
    """The runner-up implementation's label."""
    margin: float | None = None
    """Runner-up median / winner median."""
    decided_by: Literal["faster", "tie_default", "tie_simplest", "only"] = "faster"
    tuned_at: str | None = None
    run_id: str | None = None


class TuningFile(msgspec.Struct, frozen=True, kw_only=True):
    """`tuning/<device>.json`: every tuned case of one device kind, sorted, reviewable."""

    schema_name: Literal["tile.tuning"] = "tile.tuning"
    schema_version: Literal[1] = 1
    device_kind: str
    entries: list[TuningEntry] = []
    ops: list[OpChoice] = []
    """The implementation each tuned op runs at each point (older files have none)."""


_decoder = msgspec.json.Decoder(TuningFile)
_encoder = msgspec.json.Encoder(order="deterministic")


def decode_tuning(data: bytes | str) -> TuningFile:
    """Parse a tuning file; DecodeError names what is wrong with it."""
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"not a tile tuning file: {exc}") from None


def encode_tuning(doc: TuningFile) -> bytes:
    """A tuning file as indented JSON with entries in a stable order (diffs stay small)."""
    ordered = msgspec.structs.replace(
        doc,
        entries=sorted(doc.entries, key=lambda e: (e.kernel, e.case_id, e.device_model or "")),
        ops=sorted(doc.ops, key=lambda c: (c.op, c.point, c.device_model or "")),
    )
    return msgspec.json.format(_encoder.encode(ordered), indent=2) + b"\n"


class TuneUnit(msgspec.Struct, frozen=True, kw_only=True):
    """One configuration of one case: what `tile tune` times, `case{a=1,b=2}` on the wire.

    The wire carries the id (`RunRequest.case_ids`, and `case_id` in the plan and results of a
    tune), so that a unit goes wherever a case id goes. Each side parses an id once, where it
    comes in (`parse`), and keeps the unit; `unit_id` names it again.
    """

    case_id: str
    values: dict[str, str]
    """Tunable name -> value as text, in the kernel's declared order."""

    @property
    def unit_id(self) -> str:
        """`case{block_rows=4,num_warps=8}`: the unit's id on the wire and in reports."""
        return self.case_id + self.configuration

    @property
    def configuration(self) -> str:
        """`{block_rows=4,num_warps=8}`: the values alone, as a table of one case shows them."""
        return f"{{{format_values(self.values)}}}"

    @classmethod
    def parse(cls, text: str) -> TuneUnit | None:
        """The unit `text` names; None for a plain case id (no `{name=value,...}` after it)."""
        if not text.endswith("}") or "{" not in text:
            return None
        case_id, _, inner = text[:-1].rpartition("{")
        values: dict[str, str] = {}
        for item in inner.split(",") if inner else []:
            name, sep, value = item.partition("=")
            if not sep:
                return None
            values[name] = value
        return cls(case_id=case_id, values=values)
