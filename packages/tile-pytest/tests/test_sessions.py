"""The plugin in whole sessions: light to load, its options, bad input, pytest-xdist."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest_plugins = ("pytester",)
Session = Callable[..., pytest.RunResult]

CHECK_AND_BENCH = """\
import jax.numpy as jnp
import pytest

import demo_kernels


@pytest.mark.tile_kernel("demo/double")
def test_double(tile_case):
    tile_case.check()


def test_speed(tile_bench):
    tile_bench(lambda x: x * 2, jnp.ones(64))
"""


def test_loading_the_plugin_imports_nothing_heavy(
    pytester: pytest.Pytester, session: Session
) -> None:
    # pytest loads the plugin in every session of the environment, most of which never use it.
    pytester.makepyfile(
        test_light="""
        import sys

        def test_nothing_heavy_loaded():
            heavy = {"jax", "numpy", "pydantic", "tile_runner", "tile_artifacts", "tile_config"}
            assert not heavy & set(sys.modules), sorted(heavy & set(sys.modules))
        """
    )
    result = session("-p", "no:xdist", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
    assert "tile-pytest-0.1.0" in result.stdout.str()  # it was loaded, from its entry point


def test_options_and_markers_are_documented(pytester: pytest.Pytester, session: Session) -> None:
    helped = session("--help")
    assert helped.ret == 0
    out = helped.stdout.str()
    for option in ("--tile-compare=BASELINE", "--tile-fail-on-inconclusive", "--tile-save=DIR"):
        assert option in out
    markers = session("--markers").stdout.str()
    assert "@pytest.mark.tile_kernel(name, suite='test', mode='fwd')" in markers
    assert "@pytest.mark.tile_bench" in markers


def test_bad_options_are_usage_errors(pytester: pytest.Pytester, session: Session) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    (pytester.path / "used").mkdir()
    (pytester.path / "used" / "report.json").write_text("{}")
    cases = {
        ("--tile-save", "used"): "--tile-save: directory `",
        ("--tile-save", "test_x.py"): "is a file, not a directory",
        ("--tile-compare", "nowhere"): "--tile-compare: `",
    }
    for args, says in cases.items():
        result = session(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (args, result.stdout.str())
        err = result.stderr.str()
        assert says in err and "\nhint: " in err, (args, err)
        assert "Traceback" not in err


def test_a_bad_tile_toml_is_named(pytester: pytest.Pytester, session: Session) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    pytester.makefile(".toml", tile="[bench]\nmax_time = 'long'\n")
    result = session("--tile-save", "runs/a")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "tile.toml:2" in err and "bench.max_time" in err and "hint: " in err
    assert not (pytester.path / "runs").exists()


def test_a_baseline_of_another_device_fails_the_benchmark_clearly(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(test_both=CHECK_AND_BENCH)
    (pytester.path / "baselines").mkdir()
    (pytester.path / "baselines" / "nvidia-h200.json").write_text("{}")
    result = session("--tile-compare", "baselines")
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
    assert "no baseline for device `cpu` in" in out and "looked for `cpu.json`" in out
    assert "available: nvidia-h200.json" in out


def test_xdist_runs_checks_and_refuses_benchmarks(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(test_both=CHECK_AND_BENCH)
    result = session("-n", "2")
    # The checks ran in the workers; the benchmark refused to, with the way out.
    result.assert_outcomes(passed=4, errors=1)
    out = result.stdout.str()
    assert "tile_bench refuses to run in pytest-xdist worker gw" in out
    assert "-m 'not tile_bench'" in out
    # ...which works: every test that uses tile_bench carries the `tile_bench` mark.
    kept = session("--collect-only", "-q", "-m", "not tile_bench")
    assert [line for line in kept.outlines if "::" in line] == [
        f"test_both.py::test_double[demo/double[shape={shape},dtype={dtype}]]"
        for shape in ("8x128", "33x100")
        for dtype in ("float32", "bfloat16")
    ]
    # Results that need the benchmarks refuse the whole session up front.
    refused = session("-n", "2", "--tile-save", "runs/a")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    err = refused.stderr.str()
    assert "--tile-save cannot be used with pytest-xdist (-n 2)" in err and "hint: " in err
