"""Tunable parameters of a kernel: the configurations to try, which one runs, and tuning files.

A kernel declares `tunables=tile.axes(block_rows=[1, 2, 4], num_warps=[4, 8])`, optionally a
`constraint(case, config)` that returns why a configuration cannot run (or None) and a
`default`. The kernel function receives the chosen values as keyword arguments. Which values
run: a request override, else a tuning file entry for this device, JAX version, case and
tunables, else the default.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tile_protocol import ConfigInfo, ConfigSource, TuneUnit
from tile_protocol.format import format_values
from tile_runner._axes import Axes, AxisValue, format_value, parse_value
from tile_runner._errors import DefinitionError, RunnerError, Skip
from tile_runner._tuning_index import TuningIndex

__all__ = [
    "Config",
    "Tunables",
    "bind_config",
    "choose",
    "config_text",
    "declare_tunables",
    "unit_id",
]

Config = dict[str, AxisValue]
Constraint = Callable[[Any, Mapping[str, AxisValue]], "str | None"]


@dataclass(frozen=True)
class Tunables:
    """A kernel's tunable parameters: their values, what rules some out, and the default."""

    axes: Axes
    constraint: Constraint | None
    default: Config
    modes: tuple[str, ...] | None = None
    """The modes whose timed program the values change (`tuned_modes`); None: every mode."""

    @classmethod
    def declare(
        cls,
        kernel: str,
        axes: object,
        constraint: Constraint | None,
        default: Mapping[str, Any] | None,
        modes: tuple[str, ...] | None = None,
    ) -> Tunables:
        """Check a kernel's declaration; the default is each tunable's first value if not given.
        `modes`: the kernel's `tuned_modes`, already checked against its modes."""
        if not isinstance(axes, Axes) or len(axes) == 0:
            raise DefinitionError(f"kernel `{kernel}`: `tunables` must be `tile.axes(...)`")
        if constraint is not None and not callable(constraint):
            raise DefinitionError(f"kernel `{kernel}`: `constraint` must be callable")
        chosen: Config = {name: axes.values(name)[0] for name in axes.names}
        for name, value in (default or {}).items():
            if name not in chosen:
                raise DefinitionError(
                    f"kernel `{kernel}`: default names `{name}`, which is not a tunable "
                    f"({', '.join(axes.names)})"
                )
            if value not in axes.values(name):
                raise DefinitionError(
                    f"kernel `{kernel}`: default {name}={value!r} is not among its values "
                    f"({', '.join(format_value(v) for v in axes.values(name))})"
                )
            chosen[name] = value
        return cls(axes, constraint, chosen, modes)

    def apply_to(self, case: Any) -> bool:
        """Whether the values change what `case` times: its mode is among `modes` (a direct
        call, `case` None, runs the forward)."""
        mode = "fwd" if case is None else getattr(case, "mode", "fwd")
        return self.modes is None or mode in self.modes

    @functools.cached_property
    def signature(self) -> str:
        """A short hash of the tunables' names and values: tuning entries hold only for it."""
        text = ";".join(
            f"{n}={','.join(format_value(v) for v in self.axes.values(n))}" for n in self.axes.names
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def configs(self, case: Any) -> list[tuple[Config, str | None]]:
        """Every configuration in declaration order, with why the constraint rules it out."""
        return [(dict(point), self.ruled_out(case, point)) for point in self.axes]

    def ruled_out(self, case: Any, config: Mapping[str, AxisValue]) -> str | None:
        """Why the constraint rules `config` out for `case`, or None.

        A constraint that raises rules the configuration out (its error is the reason). No
        case (`case` None: a direct call of the kernel) leaves nothing to ask it about.
        """
        if self.constraint is None or case is None:
            return None
        try:
            reason = self.constraint(case, dict(config))
        except Exception as exc:
            return f"the constraint raised {type(exc).__name__}: {exc}"
        return None if reason is None else str(reason) or "ruled out"

    def default_for(self, case: Any) -> Config:
        """The configuration a case runs when nothing was tuned or overridden (`default_note`
        says why when it is not the declared default)."""
        return self.default_note(case)[0]

    def default_note(self, case: Any) -> tuple[Config, str | None]:
        """The default a case runs, and a note when the constraint rules the declared one out.

        Then the nearest allowed configuration runs: the fewest steps from the default along
        each tunable's declared values, ties to the earliest in declaration order. Skip with
        the default's reason when the constraint allows none.
        """
        reason = self.ruled_out(case, self.default)
        if reason is None:
            return dict(self.default), None
        allowed = [c for c, r in self.configs(case) if r is None]
        if not allowed:
            raise Skip(
                f"tunables {config_text(self.default)} ruled out: {reason} "
                "(and so is every other configuration)"
            )
        nearest = min(allowed, key=self._steps_from_default)
        note = (
            f"default {config_text(self.default)} ruled out for this case ({reason}): "
            f"runs the nearest allowed, {config_text(nearest)}"
        )
        return nearest, note

    def _steps_from_default(self, config: Config) -> int:
        """How far `config` is from the default: the sum over tunables of index distances."""
        steps = 0
        for name in self.axes.names:
            values = list(self.axes.values(name))
            steps += abs(values.index(config[name]) - values.index(self.default[name]))
        return steps

    def parse(self, values: Mapping[str, str], *, strict: bool) -> Config:
        """Text values (a tuning entry, a unit id, an override) as typed tunable values.

        Every value must be one of the tunable's declared values. `strict`: every name must be
        a tunable (a unit to time); otherwise names this kernel does not have are left out (a
        request override meant for other kernels too).
        """
        config: Config = {}
        for name, text in values.items():
            declared = self.axes.values(name) if name in self.axes.names else ()
            if not declared:
                if strict:
                    raise RunnerError(f"`{name}` is not a tunable ({', '.join(self.axes.names)})")
                continue
            value = parse_value(text, declared)
            if value not in declared:
                raise RunnerError(
                    f"{name}={text} is not among its values "
                    f"({', '.join(format_value(v) for v in declared)})"
                )
            config[name] = value
        return config


def config_text(config: Mapping[str, AxisValue]) -> str:
    """`{block_rows=4,num_warps=8}`: a configuration as it follows a case id in a unit id."""
    return "{" + ",".join(f"{k}={format_value(v)}" for k, v in config.items()) + "}"


def unit_id(case_id: str, config: Mapping[str, AxisValue]) -> str:
    """The id of one configuration of one case: what `tile tune` times and reports."""
    return TuneUnit(case_id=case_id, values={k: format_value(v) for k, v in config.items()}).unit_id


def bind_config(fn: Callable[..., Any], config: Mapping[str, AxisValue]) -> Callable[..., Any]:
    """`fn` with the tunable values as keyword arguments; its name kept (HLO and profiles)."""
    if not config:
        return fn
    values = dict(config)

    def configured(*args: Any) -> Any:
        return fn(*args, **values)

    named = getattr(fn, "func", fn)  # a functools.partial: its function's name
    configured.__name__ = getattr(named, "__name__", "kernel")
    configured.__qualname__ = getattr(named, "__qualname__", configured.__name__)
    return configured


def declare_tunables(
    name: str,
    tunables: object,
    options: tuple[Constraint | None, Mapping[str, Any] | None, Sequence[str] | None],
    declared: Sequence[str],
) -> Tunables | None:
    """The kernel's `Tunables`, from `tunables` and its `(constraint, default, tuned_modes)`;
    `tuned_modes` must name modes among those `declared`."""
    constraint, default, tuned_modes = options
    if tunables is None:
        if any(option is not None for option in options):
            raise DefinitionError(
                f"kernel `{name}`: `constraint`, `default` and `tuned_modes` need `tunables`"
            )
        return None
    modes = None
    if tuned_modes is not None:
        modes = () if isinstance(tuned_modes, str) else tuple(tuned_modes)
        if not modes or any(m not in declared for m in modes):
            raise DefinitionError(
                f"kernel `{name}`: `tuned_modes` must list modes the kernel has "
                f"({', '.join(declared)}), got {tuned_modes!r}"
            )
    return Tunables.declare(name, tunables, constraint, default, modes)


def choose(
    tunables: Tunables | None,
    case: Any,
    *,
    overrides: Mapping[str, str],
    tuning: TuningIndex,
    unit: Mapping[str, str] | None = None,
    module: str | None = None,
) -> tuple[Config, ConfigInfo | None]:
    """Which tunable values a case runs with, and the record of where they came from.

    `unit` (`tile tune`): exactly those values. Otherwise the case's tuning entry (the
    project's, the user cache's, or the one `module`'s package ships; while it parses and the
    constraint allows it), else the default (`Tunables.default_note`); request overrides then
    replace the values they name. Skip when the constraint rules out a unit or an overridden
    configuration. `case` None (a direct call, no case id): the default.
    """
    if tunables is None:
        if unit:
            raise RunnerError("this kernel declares no tunables")
        return {}, None
    if not tunables.apply_to(case):
        # A mode the values do not reach (a backward that keeps its own tiling): the function
        # still takes them, for the residuals made outside the timed region; the case has none.
        if unit:
            raise RunnerError(f"this kernel's tunables do not apply to mode `{case.mode}`")
        return tunables.default_for(case), None
    note: str | None = None
    if unit is not None:
        config: Config = {**tunables.default, **tunables.parse(unit, strict=True)}
        source: ConfigSource = "tune"
        reason = tunables.ruled_out(case, config)
        if reason is not None:
            raise Skip(reason)
    else:
        config, source, note = _tuned(tunables, case, tuning, module)
        override = tunables.parse(overrides, strict=False)
        if override:
            config, source, note = {**config, **override}, "override", None
            reason = tunables.ruled_out(case, config)
            if reason is not None:
                raise Skip(f"tunables {config_text(config)} ruled out: {reason}")
    info = ConfigInfo(
        values={k: format_value(v) for k, v in config.items()},
        source=source,
        signature=tunables.signature,
        note=note,
    )
    return config, info


def _tuned(
    tunables: Tunables, case: Any, tuning: TuningIndex, module: str | None
) -> tuple[Config, ConfigSource, str | None]:
    """The case's tuning entry, else its default, with a note when either is not plain: an
    entry that no longer parses or that the constraint rules out is as good as none, and says
    so."""
    if case is None:
        return dict(tunables.default), "default", None
    found = tuning.find(case.id, tunables.signature, module)
    note = found.note
    if found.entry is not None:
        where = f"`{found.path}`" if found.path else f"the {found.source} entry"
        try:
            config = {**tunables.default, **tunables.parse(found.entry.values, strict=True)}
        except RunnerError as exc:
            note = f"{where} not used: {exc}; the default runs (tune again, or fix the file)"
        else:
            reason = tunables.ruled_out(case, config)
            if reason is None:
                held = found.entry.held
                if held:  # the fastest with these values, not of every configuration
                    said = f"tuned with {format_values(held)} held"
                    note = "; ".join(n for n in (note, said) if n)
                return config, found.source, note
            note = f"{where} not used: {config_text(config)} is ruled out ({reason})"
    default, ruled = tunables.default_note(case)
    return default, "default", "; ".join(n for n in (note, ruled) if n) or None
