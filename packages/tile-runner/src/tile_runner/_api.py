"""The authoring API: `@tile.kernel`, `Case`, and the process-global kernel registry."""

from __future__ import annotations

import dataclasses
import inspect
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NoReturn, TypeVar

import numpy as np

from tile_protocol import OpInfo
from tile_runner._axes import Axes, AxisValue, format_value
from tile_runner._declare import BACKENDS, check_specs
from tile_runner._errors import DefinitionError, Skip
from tile_runner._modes import Mode, ModesSpec, ModeWork, declare_modes, mode_label
from tile_runner._ops import OpDecl, check_op, declare_op, op_info
from tile_runner._record import recorded
from tile_runner._tuning import Constraint, Tunables, declare_tunables

__all__ = [
    "BACKENDS",
    "Case",
    "KernelDef",
    "Suite",
    "case_id",
    "cases",
    "get_kernel",
    "kernel",
    "op_of",
    "registry",
    "skip",
]


Suite = Literal["bench", "test"]
"""Which axes a case comes from."""

F = TypeVar("F", bound=Callable[..., Any])
AxesSpec = Axes | Mapping[str, Axes] | None
_BAD_NAME_CHARS = set(",=[]") | {" ", "\t", "\n"}

_REGISTRY: dict[str, KernelDef] = {}


def case_id(kernel: str, params: Mapping[str, AxisValue], mode: str = "fwd") -> str:
    """`kernel[axis=value,...]` in axis declaration order; just `kernel` without axes.

    A mode other than `fwd` ends the list (`kernel[shape=(8,),mode=bwd]`), so filters,
    baselines and histories keep modes apart while `fwd` ids stay what they always were.
    """
    params = {**params, **mode_label(mode)}
    if not params:
        return kernel
    return f"{kernel}[{','.join(f'{k}={format_value(v)}' for k, v in params.items())}]"


@dataclass(frozen=True, eq=False)
class Case:
    """One point of a kernel's axes: its values (`case.shape`, `case.causal`, ...) and stable id."""

    kernel: str
    params: Mapping[str, AxisValue]
    id: str = field(default="")
    mode: Mode = "fwd"
    """How the kernel runs: `fwd`, `bwd` (its VJP alone) or `fwd_bwd` (see `tile_runner._modes`)."""
    captured: str | None = None
    """`MODULE:FUNCTION` of the program whose call of the kernel this case is (`--from`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        if not self.id:
            object.__setattr__(self, "id", case_id(self.kernel, self.params, self.mode))

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: axis values read as attributes.
        if name.startswith("__"):
            raise AttributeError(name)
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(
            f"case {self.__dict__.get('id')!r} has no axis `{name}` "
            f"(axes: {', '.join(params) or 'none'}); use `case.get({name!r}, default)`"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Case) and (self.kernel, self.id) == (other.kernel, other.id)

    def __hash__(self) -> int:
        return hash((self.kernel, self.id))

    def __repr__(self) -> str:
        return f"Case({self.id!r})"

    @property
    def base_id(self) -> str:
        """The id of this point in `fwd` mode: each mode of a case gets the same inputs."""
        return case_id(self.kernel, self.params)

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only params view cannot be pickled; rebuild from a plain dict.
        return (Case, (self.kernel, dict(self.params), self.id, self.mode, self.captured))

    def get(self, name: str, default: Any = None) -> Any:
        """The value of axis `name`, or `default` when the kernel has no such axis."""
        return self.params.get(name, default)

    @property
    def shape(self) -> tuple[int, ...]:
        """The `shape` axis."""
        value = self._need("shape")
        if not isinstance(value, tuple):
            raise AttributeError(f"case {self.id!r}: axis `shape` is {value!r}, not a shape")
        return value

    @property
    def dtype(self) -> np.dtype[Any]:
        """The `dtype` axis as a numpy dtype (bfloat16 included, through ml_dtypes)."""
        import jax.numpy as jnp

        value: Any = self._need("dtype")
        return jnp.dtype(value)

    @property
    def size(self) -> int:
        """Number of elements of `shape`."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element of `dtype`."""
        return self.dtype.itemsize

    @property
    def str_params(self) -> dict[str, str]:
        """The values as they appear in the case id and in protocol messages (`mode` last)."""
        return {**{k: format_value(v) for k, v in self.params.items()}, **mode_label(self.mode)}

    def _need(self, name: str) -> AxisValue:
        if name not in self.params:
            raise AttributeError(
                f"case {self.id!r} has no `{name}` axis; declare it in the kernel's axes"
            )
        return self.params[name]


@dataclass(frozen=True, eq=False)
class KernelDef:
    """A registered kernel and everything declared with it."""

    name: str
    fn: Callable[..., Any]
    inputs: Callable[[Case, Any], Any]
    reference: Callable[..., Any] | None = None
    bench: AxesSpec = None
    test: AxesSpec = None
    bytes: Callable[[Case], float] | None = None
    flops: Callable[[Case], float] | None = None
    tol: float | Mapping[str, float] | None = None
    description: str | None = None
    module: str = ""
    file: str | None = None
    tunables: Tunables | None = None
    modes: Mapping[Mode, ModeWork] = field(default_factory=lambda: {"fwd": ModeWork()})
    """The modes it runs in, `fwd` first, each with its declared work (`tile.mode`)."""
    check_reference: Callable[..., Any] | None = None
    """What the check compares with when not `reference` (a `bwd` mode's: see `_vjp`)."""
    op: OpDecl | None = None
    """The op it implements, beside other kernels of that op (`tile_runner._ops`)."""

    def axes_for(self, suite: Suite, backend: str) -> Axes | None:
        """The axes of `suite` on `backend`; None when the kernel declares none for it."""
        first, second = (self.bench, self.test) if suite == "bench" else (self.test, self.bench)
        spec = first if first is not None else second
        if spec is None:
            return Axes([()])  # one case without parameters
        if isinstance(spec, Axes):
            return spec
        return spec.get(backend, spec.get("default"))

    def tolerance(self, dtype: str) -> float | None:
        """The kernel's own tolerance for outputs of `dtype`, if it declared one."""
        if self.tol is None or isinstance(self.tol, float | int):
            return None if self.tol is None else float(self.tol)
        value = self.tol.get(dtype, self.tol.get("default"))
        return None if value is None else float(value)


def kernel(  # noqa: PLR0913 (public call: the @tile.kernel options are documented)
    name: str,
    *,
    inputs: Callable[[Case, Any], Any],
    reference: Callable[..., Any] | None = None,
    bench: AxesSpec = None,
    test: AxesSpec = None,
    bytes: Callable[[Case], float] | None = None,
    flops: Callable[[Case], float] | None = None,
    tol: float | Mapping[str, float] | None = None,
    description: str | None = None,
    tunables: Axes | None = None,
    constraint: Constraint | None = None,
    default: Mapping[str, Any] | None = None,
    modes: ModesSpec = None,
    tuned_modes: Sequence[Mode] | None = None,
    op: str | None = None,
    impl: str | None = None,
    baseline: bool = False,
) -> Callable[[F], F]:
    """Register the decorated function as kernel `name` (returned behind `tile.recorded`).

    Args:
        inputs: `(case, key) -> tuple` of positional arguments. Arrays (and pytrees of arrays)
            are traced; other values (bools, ints, strings) are passed as static arguments.
        bench, test: `tile.axes(...)`, or a mapping from backend (`cpu`, `gpu`, `tpu`,
            `default`) to axes. Each falls back to the other when left out.
        bytes, flops: work of one call, `case -> float`; else XLA's cost analysis is used.
        tol: largest relative L2 error that passes, or `{output dtype or "default": tol}`.
        tunables: `tile.axes(block_rows=[1, 2, 4], ...)`: parameters `tile tune` chooses
            among; the function receives them as keyword arguments.
        constraint: `(case, config) -> reason or None`: rules a configuration out for a case.
        default: the configuration until one is tuned (else each tunable's first value).
        modes: what `--mode` may run besides `fwd`: `("bwd", "fwd_bwd")`, or `{mode: tile.mode(...)}`.
        tuned_modes: the modes whose timed program the tunables change (default: every mode);
            in the others a case has no configuration and runs the default outside the timing.
        op, impl, baseline: the op it implements, its label there (default: its name after the
            last `/`), and whether the op's others are timed against it (else the first one).
    """
    _check_arguments(name, inputs, {"reference": reference, "bytes": bytes, "flops": flops})
    check_specs(name, bench, test, tol)
    caller = _caller()
    declared = declare_modes(name, modes, ModeWork(bytes, flops), (bench, test))
    tuned = declare_tunables(name, tunables, (constraint, default, tuned_modes), tuple(declared))
    # `fn` is `inputs` until the decorated function replaces it (`_complete`).
    template = KernelDef(name=name, fn=inputs, inputs=inputs, reference=reference, bench=bench,
                         test=test, bytes=bytes, flops=flops, tol=tol, description=description,
                         tunables=tuned, modes=declared,
                         op=declare_op(name, op, impl, baseline))  # fmt: skip

    def register(fn: F) -> F:
        _add(_complete(template, fn, caller))
        return recorded(name)(fn)

    return register


def _complete(template: KernelDef, fn: object, caller: tuple[str | None, str | None]) -> KernelDef:
    """The kernel `template` declares, with the function it decorates and where it lives."""
    if not callable(fn):
        raise DefinitionError(f"kernel `{template.name}`: @tile.kernel must decorate a function")
    module, file = caller
    return dataclasses.replace(
        template,
        fn=fn,
        description=_first_doc_line(fn) if template.description is None else template.description,
        module=module or getattr(fn, "__module__", None) or "<unknown>",
        file=file if file is not None else _source_file(fn),
    )


def _check_arguments(name: str, inputs: object, optional: Mapping[str, object]) -> None:
    """`inputs` and every optional function given are callables."""
    _check_name(name)
    if not callable(inputs):
        raise DefinitionError(
            f"kernel `{name}`: `inputs` must be a callable `(case, key) -> tuple`"
        )
    for label, fn in optional.items():
        if fn is not None and not callable(fn):
            raise DefinitionError(f"kernel `{name}`: `{label}` must be callable")


def _caller() -> tuple[str | None, str | None]:
    """Module name and file of the code calling `kernel(...)`.

    The registering module is the one blamed for duplicates; the function itself may live
    elsewhere.
    """
    caller = sys._getframe(2).f_globals  # pyright: ignore[reportPrivateUsage]
    return caller.get("__name__"), caller.get("__file__")


def _add(definition: KernelDef) -> None:
    """Put `definition` in the registry; a second module registering its name is refused."""
    name = definition.name
    existing = _REGISTRY.get(name)
    if existing is not None and not _same_source(existing, definition):
        raise DefinitionError(
            f"kernel `{name}` is registered twice: by module `{existing.module}` "
            f"({existing.file}) and by module `{definition.module}` ({definition.file})",
            hint="kernel names are global; prefix them with your library, e.g. `mylib/softmax`",
        )
    check_op(definition, _REGISTRY.values())
    # Re-registering from the same source (a module imported again) replaces the entry.
    _REGISTRY[name] = definition


def _source_file(fn: Callable[..., Any]) -> str | None:
    try:
        return inspect.getsourcefile(fn)
    except TypeError:
        return None


def _same_source(a: KernelDef, b: KernelDef) -> bool:
    return a.module == b.module or (a.file is not None and a.file == b.file)


def _first_doc_line(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    return doc.strip().splitlines()[0] if doc and doc.strip() else None


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip() or _BAD_NAME_CHARS & set(name):
        raise DefinitionError(
            f"kernel name {name!r} must be a non-empty string without `,=[]` or spaces",
            hint="use names such as `mylib/softmax`",
        )


def registry() -> dict[str, KernelDef]:
    """A snapshot of every registered kernel, by name, in registration order."""
    return dict(_REGISTRY)


def op_of(kernel: str | KernelDef) -> OpInfo | None:
    """The op `kernel` implements as the runner reports it (with whether it is the op's
    baseline among the kernels registered now); None for a kernel of no op."""
    definition = get_kernel(kernel) if isinstance(kernel, str) else kernel
    return op_info(definition, _REGISTRY.values())


def get_kernel(name: str) -> KernelDef:
    """The kernel registered as `name`; DefinitionError listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise DefinitionError(
            f"no kernel named `{name}` (registered: {known})",
            hint="import the module that defines it first",
        ) from None


def cases(
    kernel: str | KernelDef,
    suite: Suite = "bench",
    *,
    backend: str | None = None,
    overrides: Mapping[str, list[str]] | None = None,
) -> list[Case]:
    """The cases of a kernel for `suite` on `backend` (default: JAX's default backend)."""
    definition = get_kernel(kernel) if isinstance(kernel, str) else kernel
    if backend is None:
        import jax

        backend = jax.default_backend()
    spec = definition.axes_for(suite, backend)
    if spec is None:
        return []
    if overrides:
        spec = spec.override(overrides)
    return [Case(definition.name, point) for point in spec]


def skip(reason: str) -> NoReturn:
    """Skip the current case (call from an inputs factory or kernel), e.g. an unsupported dtype."""
    raise Skip(reason)
