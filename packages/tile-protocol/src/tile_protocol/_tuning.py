"""Tuning files: which tunable values won `tile tune`, per device kind, kernel and case.

`tile tune` writes them (the CLI) and every runner reads them (bench, test, library use), so
the format lives here, beside the wire protocol, as the one contract both sides share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from tile_protocol._errors import DecodeError

__all__ = [
    "TUNING_SCHEMA",
    "TuningEntry",
    "TuningFile",
    "decode_tuning",
    "encode_tuning",
    "split_unit",
    "unit_id",
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


class TuningFile(msgspec.Struct, frozen=True, kw_only=True):
    """`tuning/<device>.json`: every tuned case of one device kind, sorted, reviewable."""

    schema_name: Literal["tile.tuning"] = "tile.tuning"
    schema_version: Literal[1] = 1
    device_kind: str
    entries: list[TuningEntry] = []


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
        doc, entries=sorted(doc.entries, key=lambda e: (e.kernel, e.case_id))
    )
    return msgspec.json.format(_encoder.encode(ordered), indent=2) + b"\n"


def unit_id(case_id: str, values: Mapping[str, str]) -> str:
    """`case{block_rows=4,num_warps=8}`: one configuration of one case, as `tile tune` names it."""
    return case_id + "{" + ",".join(f"{k}={v}" for k, v in values.items()) + "}"


def split_unit(text: str) -> tuple[str, dict[str, str] | None]:
    """`case{a=1,b=2}` -> (`case`, {a: 1, b: 2}); a plain case id -> (it, None)."""
    if not text.endswith("}") or "{" not in text:
        return text, None
    case, _, inner = text[:-1].rpartition("{")
    values: dict[str, str] = {}
    for item in inner.split(",") if inner else []:
        name, sep, value = item.partition("=")
        if not sep:
            return text, None
        values[name] = value
    return case, values
