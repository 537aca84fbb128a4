"""The pytest hooks and fixtures of tile-pytest, loaded through the `pytest11` entry point `tile`.

pytest imports this module in every session of an environment that has tile-pytest, so it
imports nothing heavy: jax, pydantic and tile's packages load when a test first uses a
fixture or the `tile_kernel` mark, or when `--tile-compare` / `--tile-save` is given.
`-p no:tile` leaves the plugin out of a session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tile_pytest._errors import TilePytestError
from tile_pytest._settings import Options, add_options, parallel_workers, xdist_worker

if TYPE_CHECKING:
    from tile_pytest._bench import BenchFixture
    from tile_pytest._kernel import Configurations, KernelCase
    from tile_pytest._record import CaseName, SessionRecord
    from tile_pytest._settings import Settings
    from tile_pytest._verdicts import Judge

__all__ = [
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "tile_bench",
    "tile_case",
]

_XDIST_HINT = (
    "run the benchmarks in one process (`-n 0` or `-p no:xdist`), and the rest in parallel "
    "with `-m 'not tile_bench'`"
)


class _State:
    """The plugin's per-session state; settings, record and baseline are made on first use."""

    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        self.save_error: str | None = None
        self.saved: Path | None = None
        self._settings: Settings | None = None
        self._record: SessionRecord | None = None
        self._judge: Judge | None = None
        self._configurations: Configurations | None = None

    def configurations(self) -> Configurations:
        if self._configurations is None:
            from tile_pytest._kernel import Configurations

            settings = self.settings()
            self._configurations = Configurations(settings.tuning_files, settings.user_tuning_files)
        return self._configurations

    def settings(self) -> Settings:
        if self._settings is None:
            from tile_pytest._settings import load_settings

            self._settings = load_settings(self.config.rootpath)
        return self._settings

    def record(self) -> SessionRecord:
        if self._record is None:
            from tile_pytest._record import SessionRecord

            argv = ["pytest", *self.config.invocation_params.args]
            self._record = SessionRecord(
                rootpath=self.config.rootpath, argv=argv, settings=self.settings()
            )
        return self._record

    def judge(self) -> Judge | None:
        if self._judge is None and self.options.compare is not None:
            from tile_pytest._verdicts import Judge

            self._judge = Judge(
                self.options.compare,
                self.settings(),
                fail_on_inconclusive=self.options.fail_on_inconclusive,
                allow_missing=self.options.allow_missing,
            )
        return self._judge

    @property
    def recorded(self) -> SessionRecord | None:
        return self._record


_STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--tile-compare`, `--tile-fail-on-inconclusive`, `--tile-save`."""
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; refuse unusable options before any test runs."""
    config.addinivalue_line(
        "markers",
        "tile_kernel(name, suite='test', mode='fwd'): one test per case (and mode: fwd, bwd, "
        "fwd_bwd, a list or 'all') of the registered tile kernel NAME, "
        "each given its case as the `tile_case` fixture",
    )
    config.addinivalue_line(
        "markers",
        "tile_bench: the test times code with the `tile_bench` fixture (set by tile-pytest)",
    )
    try:
        options = Options.from_config(config)
        workers = parallel_workers(config)
        if workers is not None and options.wants_run:
            flag = "--tile-compare" if options.compare is not None else "--tile-save"
            raise TilePytestError(
                f"{flag} cannot be used with pytest-xdist (-n {workers}): benchmarks refuse to "
                "run in parallel workers, which share one device and disturb each other's timings",
                hint=_XDIST_HINT,
            )
        state = _State(config, options)
        if options.wants_run:
            state.settings()  # a bad tile.toml is a usage error now, not a failure per test
    except TilePytestError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_STATE] = state


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize a `tile_kernel`-marked test over the kernel's cases, ids = case ids."""
    mark = metafunc.definition.get_closest_marker("tile_kernel")
    if mark is None:
        return
    from tile_pytest._kernel import kernel_cases

    if "tile_case" not in metafunc.fixturenames:
        pytest.fail(
            f"{metafunc.definition.nodeid}: @pytest.mark.tile_kernel needs the test to take "
            "the `tile_case` argument\nhint: write `def test_x(tile_case): tile_case.check()`",
            pytrace=False,
        )
    try:
        cases = kernel_cases(mark)
    except TilePytestError as exc:
        pytest.fail(f"{metafunc.definition.nodeid}: {exc}", pytrace=False)
    metafunc.parametrize("tile_case", cases, ids=[c.id for c in cases], indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses `tile_bench`, so `-m 'not tile_bench'` can leave them out."""
    for item in items:
        if "tile_bench" in getattr(item, "fixturenames", ()):
            item.add_marker("tile_bench")


def _state(request: pytest.FixtureRequest) -> _State:
    return request.config.stash[_STATE]


@pytest.fixture
def tile_case(request: pytest.FixtureRequest) -> KernelCase:
    """The case of a `@pytest.mark.tile_kernel(NAME)` test: `tile_case.check()` checks it."""
    from tile_pytest._kernel import KernelCase

    case: Any = getattr(request, "param", None)
    if case is None:
        pytest.fail(
            f"{request.node.nodeid}: the `tile_case` fixture comes from a kernel's cases\n"
            'hint: mark the test with `@pytest.mark.tile_kernel("mylib/kernel")`',
            pytrace=False,
        )
    state = _state(request)
    try:
        settings = state.settings()
        return KernelCase(
            case,
            seed=settings.seed,
            tolerances=settings.tolerances,
            on_check=state.record().checked,
            configured=state.configurations().of(case),
        )
    except TilePytestError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def tile_bench(request: pytest.FixtureRequest) -> BenchFixture:
    """Time a callable: `tile_bench(fn, *args)` returns a `tile_runner.Measurement`."""
    from tile_pytest._bench import BenchFixture

    worker = xdist_worker(request.config)
    if worker is not None:
        pytest.fail(
            f"tile_bench refuses to run in pytest-xdist worker {worker}: parallel workers share "
            f"one device and disturb each other's timings\nhint: {_XDIST_HINT}",
            pytrace=False,
        )
    state = _state(request)
    try:
        record = state.record()
        judge = state.judge()
    except TilePytestError as exc:
        pytest.fail(str(exc), pytrace=False)
    name = _case_name(request.node, state)
    return BenchFixture(name, record, judge=judge, output_dir=state.options.save)


def _case_name(item: pytest.Item, state: _State) -> CaseName:
    """A `tile_kernel` test is its tile case (with its configuration); any other test is its
    node id."""
    from tile_pytest._record import CaseName

    callspec: Any = getattr(item, "callspec", None)
    case: Any = callspec.params.get("tile_case") if callspec is not None else None
    if case is not None:
        import tile_runner

        info = state.configurations().of(case).info
        op = tile_runner.op_of(case.kernel)
        return CaseName(case.id, case.kernel, dict(case.str_params), info, op)
    original: str = getattr(item, "originalname", item.name)
    kernel = item.nodeid.removesuffix(item.name) + original
    return CaseName(item.nodeid, kernel)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write `--tile-save DIR` once every test has run (never in an xdist worker)."""
    state = session.config.stash.get(_STATE, None)
    if state is None or state.options.save is None or xdist_worker(session.config) is not None:
        return
    from tile_pytest._save import save_run

    try:
        save_run(state.record(), state.options.save, state.judge())
        state.saved = state.options.save
    except TilePytestError as exc:
        state.save_error = str(exc)
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The verdicts of `--tile-compare` and where `--tile-save` wrote the run."""
    state = terminalreporter.config.stash.get(_STATE, None)
    if state is None or not state.options.wants_run:
        return
    write = terminalreporter.write_line
    terminalreporter.section("tile")
    judge = state.judge() if state.options.compare is not None else None
    if judge is not None:
        from tile_pytest._verdicts import describe_row

        write(f"compared with {state.options.compare}: {len(judge.rows)} benchmarks")
        for row in judge.rows:
            write(f"  {describe_row(row)}", red=row.judgement == "regression")
    if state.saved is not None:
        record = state.recorded
        write(f"run directory: {state.saved} ({len(record) if record else 0} tile cases)")
    if state.save_error is not None:
        write(f"error: {state.save_error}", red=True)
