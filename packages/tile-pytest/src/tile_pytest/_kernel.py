"""`@pytest.mark.tile_kernel(NAME)`: one pytest item per case of a registered kernel.

Each item gets a `KernelCase`: the case, its seeded inputs (the same values `tile test` draws
for that case id and seed) and `check()`, which runs the kernel compiled the way the runner
compiles it and compares it with its reference under the same tolerances.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import pytest

from tile_pytest._errors import TilePytestError
from tile_pytest._record import CaseName

if TYPE_CHECKING:
    import tile_runner as tile
    from tile_protocol import Check

__all__ = ["Configurations", "KernelCase", "Suite", "kernel_cases", "merged_tolerance"]

Suite = Literal["test", "bench"]
_SUITES: tuple[Suite, ...] = ("test", "bench")


def kernel_cases(mark: pytest.Mark) -> list[tile.Case]:
    """The cases a `tile_kernel` mark stands for; TilePytestError for a bad mark or name."""
    import tile_runner as tile

    if len(mark.args) != 1 or not isinstance(mark.args[0], str):
        raise TilePytestError(
            f"@pytest.mark.tile_kernel{mark.args!r}: expected one kernel name",
            hint='write `@pytest.mark.tile_kernel("mylib/softmax")`',
        )
    name: str = mark.args[0]
    suite: object = mark.kwargs.get("suite", "test")
    unknown = set(mark.kwargs) - {"suite", "mode"}
    if unknown or suite not in _SUITES:
        raise TilePytestError(
            f"@pytest.mark.tile_kernel({name!r}): unexpected {sorted(unknown) or suite!r}",
            hint='the options are `suite="test"` (default) or `suite="bench"`, and `mode`',
        )
    try:
        cases = tile.cases(name, "bench" if suite == "bench" else "test")
        modes = _modes(name, tile.get_kernel(name), mark.kwargs.get("mode", "fwd"))
    except tile.RunnerError as exc:
        raise TilePytestError(
            f"@pytest.mark.tile_kernel({name!r}): {exc.args[0]}",
            hint=(exc.hint or "") + "; import the module that registers the kernel at the top "
            "of the test module",
        ) from None
    return [
        c if m == "fwd" else tile.Case(c.kernel, c.params, mode=m) for c in cases for m in modes
    ]


def _modes(name: str, definition: tile.KernelDef, mode: object) -> list[tile.Mode]:
    """The modes a mark's `mode` asks for: one mode, a list of them, or "all" (the declared)."""
    import tile_runner as tile

    declared = list(definition.modes)
    if mode == "all":
        return declared
    many = isinstance(mode, list | tuple)
    wanted = list(cast("Sequence[object]", mode)) if many else [mode]
    for m in wanted:
        if m not in tile.MODES:
            raise TilePytestError(
                f"@pytest.mark.tile_kernel({name!r}): unknown mode {m!r}",
                hint=f"use one of {', '.join(tile.MODES)}, a list of them, or 'all'",
            )
        if m not in declared:
            raise TilePytestError(
                f"@pytest.mark.tile_kernel({name!r}): the kernel does not declare mode {m!r} "
                f"(its modes: {', '.join(declared)})",
                hint="declare it with `@tile.kernel(modes=...)`, or leave it out of `mode`",
            )
    return cast("list[tile.Mode]", wanted)


def merged_tolerance(
    kernel: float | Mapping[str, float] | None, request: Mapping[str, float]
) -> float | Mapping[str, float] | None:
    """One tolerance argument for `tile.check` that gives `[test] tolerances` precedence.

    The runner looks up a dtype in the configuration (its entry, then its `default`), then in
    the kernel's `tol`, then in the built-in table; this mapping resolves the same way.
    """
    if not request:
        return kernel
    if "default" in request:
        return dict(request)
    if kernel is None:
        base: dict[str, float] = {}
    elif isinstance(kernel, int | float):
        base = {"default": float(kernel)}
    else:
        base = dict(kernel)
    return {**base, **request}


class Configurations:
    """Each case's tunable configuration, chosen as `tile bench` here would choose it.

    `tile_runner.configure` is the runner's own choice (an override, else the case's tuning
    entry for this device and JAX version, else the constraint-checked default); the tuning
    files are the ones `tile bench` passes its runner (`tile_harness.tuning_files` and
    `user_tuning_files`), read once a session.
    """

    def __init__(
        self, tuning_files: tuple[str, ...], user_tuning_files: tuple[str, ...] = ()
    ) -> None:
        self._files = tuning_files
        self._user_files = user_tuning_files
        self._index: tile.TuningIndex | None = None
        self._chosen: dict[str, tile.Configured] = {}

    def of(self, case: tile.Case) -> tile.Configured:
        """The case's kernel bound to its values; skips the test when none can run."""
        import tile_runner as tile

        if case.id not in self._chosen:
            if self._index is None:
                self._index = tile.TuningIndex.load(self._files, user_paths=self._user_files)
            try:
                chosen = tile.configure(tile.get_kernel(case.kernel), case, tuning=self._index)
            except tile.Skip as exc:
                pytest.skip(str(exc.args[0]) if exc.args else "skipped")
            self._chosen[case.id] = chosen
        return self._chosen[case.id]


class KernelCase:
    """One case of a registered kernel inside a pytest item (the `tile_case` fixture)."""

    def __init__(
        self,
        case: tile.Case,
        *,
        seed: int,
        tolerances: Mapping[str, float],
        on_check: Callable[[CaseName, Check], None],
        configured: tile.Configured,
    ) -> None:
        import tile_runner as tile

        self.case = case
        self.definition = tile.get_kernel(case.kernel)
        self.configured = configured
        """The tunable values the case runs with, and the kernel bound to them."""
        self.seed = seed
        self._tolerances = dict(tolerances)
        self._on_check = on_check
        self._inputs: tuple[Any, ...] | None = None
        self._run: tile.KernelDef | None = None

    @property
    def run(self) -> tile.KernelDef:
        """The kernel as the case's mode runs it: itself in `fwd`; in `bwd` and `fwd_bwd` the
        runner's gradient program, its inputs and reference (as `tile test --mode` runs it)."""
        if self._run is None:
            import tile_runner as tile

            self._run = tile.mode_kernel(self.definition, self.configured.fn, self.case.mode)
        return self._run

    @property
    def id(self) -> str:
        """The case id, as `tile list` shows it."""
        return self.case.id

    @property
    def fn(self) -> Callable[..., Any]:
        """The kernel with the case's tunable values bound (to hand to `tile_bench`): the
        configuration `tile bench` times for this case id; in a gradient mode, its program."""
        return self.configured.fn if self.case.mode == "fwd" else self.run.fn

    @property
    def name(self) -> CaseName:
        """How the case appears in the session's report."""
        import tile_runner

        params = dict(self.case.str_params)
        op = tile_runner.op_of(self.case.kernel)
        return CaseName(self.case.id, self.case.kernel, params, self.configured.info, op)

    def inputs(self) -> tuple[Any, ...]:
        """The case's arguments, drawn from the seed and the case id (as `tile test` draws);
        in a gradient mode followed by the cotangent (and in `bwd` the residuals)."""
        if self._inputs is None:
            import jax

            import tile_runner as tile

            drawn = self.run.inputs(self.case, tile.case_key(self.seed, self.case.id))
            args = cast("tuple[Any, ...]", drawn) if isinstance(drawn, tuple) else (drawn,)
            # jax leaves block_until_ready unannotated; it returns the pytree it is given.
            ready = cast("tuple[Any, ...]", jax.block_until_ready(args))  # pyright: ignore[reportUnknownMemberType]
            self._inputs = tuple(ready)
        return self._inputs

    def check(self) -> Check:
        """Compare the kernel with its reference; the test fails when they disagree.

        Without a reference the check passes with the message "no reference", as in
        `tile test`. `tile.skip(...)` in the inputs or the kernel skips the test.
        """
        import tile_runner as tile
        from tile_protocol import Check

        definition = self.run
        reference = definition.check_reference or definition.reference
        try:
            args = self.inputs()
            if reference is None:
                result = Check(passed=True, message="no reference")
            else:
                tol = merged_tolerance(definition.tol, self._tolerances)
                gradients = self.case.mode != "fwd"
                result = tile.check(
                    _compiled(self.fn), reference, *args, tol=tol, gradients=gradients
                )
        except tile.Skip as exc:
            pytest.skip(str(exc.args[0]) if exc.args else "skipped")
        except tile.Unsupported as exc:  # `tile test` gives the case an `unsupported` row
            pytest.skip(f"unsupported: {exc.args[0]}")
        self._on_check(self.name, result)
        if not result.passed:
            pytest.fail(f"{self.case.id}: {result.message}", pytrace=False)
        return result

    def __repr__(self) -> str:
        return f"KernelCase({self.case.id!r})"


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` jitted with its array-free arguments closed over: what the runner checks."""
    import jax

    import tile_runner as tile

    def call(*args: Any) -> Any:
        bound, dynamic = tile.bind_static(fn, args)
        # jax.jit's `device` parameter names jaxlib's Device (no stubs); its call is untyped.
        jitted = cast("Callable[..., Any]", jax.jit(bound))  # pyright: ignore[reportUnknownMemberType]
        return jitted(*dynamic)

    return call
