"""Which tuning entry a case may use: the project's file, the user cache's, the package's own.

Three layers, first match wins: the project's tuning files (`tuned`), the user cache's when
the user asked for them (`user_cache`), and the files the kernel's package ships in its
`tuning/` folder (`shipped`, read the first time a kernel of that package asks). An entry
holds only on its device kind (on a CPU, its model and core count too, where the entry
records them) and JAX version and while the kernel's tunables are the ones it was tuned over; when none holds, `Found.note` says what was there and why it was not used, so
that a case falling back to its default says so on its row.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from tile_protocol import ConfigSource, DecodeError, OpChoice, TuningEntry, decode_tuning

__all__ = ["Found", "TuningIndex", "shipped_dir"]

_Layer = dict[str, tuple[TuningEntry, str]]
"""Entries by case id, each with the file it came from."""
_OpLayer = dict[tuple[str, str], tuple[OpChoice, str]]
"""Implementation choices by (op, point), each with the file it came from."""


@dataclass(frozen=True)
class Found:
    """The entry a case may use and its layer, or (entry None) why none could be used."""

    entry: TuningEntry | None
    source: ConfigSource
    path: str | None = None
    note: str | None = None


def _warn(message: str) -> None:
    import warnings

    warnings.warn(message, RuntimeWarning, stacklevel=3)


def shipped_dir(module: str) -> Path | None:
    """The `tuning/` folder of the package that defines `module`, where it has one."""
    top = sys.modules.get(module.partition(".")[0])
    for root in getattr(top, "__path__", None) or ():  # a package, not a plain module
        folder = Path(str(root)) / "tuning"
        if folder.is_dir():
            return folder
    return None


class TuningIndex:
    """The tuning entries of one device kind and JAX version, by case id, in three layers."""

    def __init__(
        self,
        entries: Sequence[TuningEntry] = (),
        *,
        user: Sequence[TuningEntry] = (),
        device_kind: str | None = None,
        jax_version: str | None = None,
        warn: Callable[[str], None] | None = None,
        device_model: str | None = None,
    ) -> None:
        self._layers: list[tuple[ConfigSource, _Layer]] = [
            ("tuned", {e.case_id: (e, "") for e in entries}),
            ("user_cache", {e.case_id: (e, "") for e in user}),
        ]
        self._elsewhere: dict[str, list[str]] = {}
        self._device_kind, self._jax_version = device_kind, jax_version
        self._device_model = device_model
        self._warn = warn or _warn
        self._shipped: dict[str, tuple[_Layer, list[str], _OpLayer]] = {}
        self._ops: list[tuple[ConfigSource, _OpLayer]] = [("tuned", {}), ("user_cache", {})]

    @classmethod
    def load(
        cls,
        paths: Sequence[str | PathLike[str]],
        *,
        user_paths: Sequence[str | PathLike[str]] = (),
        device_kind: str | None = None,
        jax_version: str | None = None,
        warn: Callable[[str], None] | None = None,
        device_model: str | None = None,
    ) -> TuningIndex:
        """Entries of `paths` (the project's; later files win) and `user_paths` (the user
        cache's, below them) for `device_kind` and `jax_version`.

        Both default to this process's: JAX's default device and version (and, with the
        device, `device_model`: on a CPU its model and core count). A file that cannot
        be read or parsed is warned about (`warn`, else a RuntimeWarning) and skipped: tuning
        only chooses among correct configurations, so a run without it is slower at worst,
        never wrong.
        """
        if device_kind is None or jax_version is None:
            import jax

            from tile_runner._jaxapi import devices

            if device_kind is None:
                from tile_runner._cpu import cpu_model

                first = devices()[0]
                device_kind = first.device_kind
                device_model = cpu_model() if first.platform == "cpu" else None
            jax_version = jax_version or jax.__version__
        index = cls(
            device_kind=device_kind, jax_version=jax_version, warn=warn, device_model=device_model
        )
        tuned_ops: _OpLayer = {}
        user_ops: _OpLayer = {}
        index._layers = [
            ("tuned", index._read(paths, "", ops=tuned_ops)),
            ("user_cache", index._read(user_paths, "the user cache's ", ops=user_ops)),
        ]
        index._ops = [("tuned", tuned_ops), ("user_cache", user_ops)]
        return index

    def _read(
        self,
        paths: Sequence[str | PathLike[str]],
        whose: str,
        *,
        shipped: bool = False,
        ops: _OpLayer | None = None,
    ) -> _Layer:
        """The entries of `paths` that hold here; the others are remembered for notes (a
        package's, `shipped`, hold on any JAX version: they are only its author's guess).
        The implementation choices that hold here go to `ops`, when given."""
        layer: _Layer = {}
        for path in paths:
            try:
                doc = decode_tuning(Path(path).read_bytes())
            except FileNotFoundError:
                continue
            except (OSError, DecodeError) as exc:
                self._warn(f"{whose}tuning file `{path}` not used: {exc}")
                continue
            held: dict[str, int] = {}
            for entry in doc.entries:
                why = self._elsewhere_reason(entry, any_jax=shipped)
                if why is None:
                    layer[entry.case_id] = (entry, str(path))
                    held[entry.case_id] = held.get(entry.case_id, 0) + 1
                elif not shipped:
                    self._elsewhere.setdefault(entry.case_id, []).append(f"`{path}` {why}")
            self._drop_twice_tuned(layer, held, f"{whose}tuning file `{path}`")
            held_ops = ops if ops is not None else {}
            for choice in doc.ops:
                if self._elsewhere_reason(choice, any_jax=shipped) is None:
                    held_ops[(choice.op, choice.point)] = (choice, str(path))
        return layer

    def _drop_twice_tuned(self, layer: _Layer, held: dict[str, int], where: str) -> None:
        """A case with two entries that hold here (a hand edit, a merge gone wrong) uses
        neither: which one was meant cannot be told, and the last must not win unsaid."""
        for case_id, count in held.items():
            if count < 2:
                continue
            del layer[case_id]
            said = f"{where} has {count} entries for case `{case_id}` on this device"
            self._warn(f"{said}: none is used; keep one of them")
            self._elsewhere.setdefault(case_id, []).append(f"{said}: not used")

    def _elsewhere_reason(
        self, entry: TuningEntry | OpChoice, *, any_jax: bool = False
    ) -> str | None:
        """Why `entry` does not hold on this device and JAX version (None: it does)."""
        if self._device_kind is not None and entry.device_kind != self._device_kind:
            return f"tuned it on {entry.device_kind}, not {self._device_kind}"
        if self._device_model and entry.device_model and entry.device_model != self._device_model:
            return f"tuned it on {entry.device_model}, not {self._device_model}"
        if (
            not any_jax
            and self._jax_version is not None
            and entry.jax_version is not None
            and entry.jax_version != self._jax_version
        ):
            return f"tuned it with jax {entry.jax_version}, not {self._jax_version}"
        return None

    def impl_for(
        self, op: str, point: str, modules: Sequence[str] = ()
    ) -> tuple[OpChoice, ConfigSource, str] | None:
        """The implementation `tile tune` chose for `op` at `point` (`tile_protocol.op_point`),
        with its layer and file: the project's files first, then the user cache's, then what
        the packages of `modules` (the op's implementations') ship."""
        # The packages' files are read only when the project's and the user cache's say nothing.
        shipped: Iterator[tuple[ConfigSource, _OpLayer]] = (
            ("shipped", self._shipped_of(m)[2]) for m in modules
        )
        for source, layer in itertools.chain(self._ops, shipped):
            held = layer.get((op, point))
            if held is not None:
                return held[0], source, held[1]
        return None

    def lookup(self, case_id: str, signature: str) -> TuningEntry | None:
        """The project's or user cache's entry of `case_id`, if tuned over these tunables."""
        return self.find(case_id, signature).entry

    def find(self, case_id: str, signature: str, module: str | None = None) -> Found:
        """The first entry of `case_id` tuned over these tunables: the project's, the user
        cache's, then the one the package of `module` (the kernel's) ships."""
        layers = list(self._layers)
        shipped, shipped_for, _ = self._shipped_of(module) if module else ({}, [], {})
        layers.append(("shipped", shipped))
        stale: list[str] = []
        for source, layer in layers:
            held = layer.get(case_id)
            if held is None:
                continue
            entry, path = held
            if entry.signature == signature:
                return Found(entry, source, path or None, self._version_note(entry, source))
            stale.append(f"`{path or source}` tuned it over other tunable values")
        notes = stale + self._elsewhere.get(case_id, [])
        if not notes and self._device_kind in shipped_for:
            notes.append(f"its package's tuning for {self._device_kind} has no entry for it")
        elif not notes and shipped_for:
            notes.append(
                f"its package ships tuning for {', '.join(shipped_for)}, "
                f"none for {self._device_kind}"
            )
        note = "; ".join(notes) + ": the default runs (`tile tune` it here)" if notes else None
        return Found(None, "default", note=note)

    def _version_note(self, entry: TuningEntry, source: ConfigSource) -> str | None:
        """A shipped entry's note when it was tuned with another JAX version."""
        if source != "shipped" or entry.jax_version in (None, self._jax_version):
            return None
        return f"shipped tuning made with jax {entry.jax_version}, not {self._jax_version}"

    def _shipped_of(self, module: str) -> tuple[_Layer, list[str], _OpLayer]:
        """The entries `module`'s package ships for this device, the device kinds it ships
        tuning for, and its implementation choices here (read once per package)."""
        package = module.partition(".")[0]
        if package not in self._shipped:
            # Without a known device kind (an index built from entries) nothing shipped holds.
            folder = shipped_dir(module) if self._device_kind is not None else None
            files = sorted(folder.glob("*.json")) if folder is not None else []
            kinds: list[str] = []
            for path in files:
                try:
                    kinds.append(decode_tuning(path.read_bytes()).device_kind)
                except (OSError, DecodeError):
                    continue  # `_read` warns about it
            ops: _OpLayer = {}
            layer = self._read(files, f"{package}'s ", shipped=True, ops=ops)
            self._shipped[package] = (layer, kinds, ops)
        return self._shipped[package]
