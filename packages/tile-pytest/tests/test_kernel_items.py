"""`@pytest.mark.tile_kernel`: one item per case with the case id, checked like `tile test`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest_plugins = ("pytester",)
Session = Callable[..., pytest.RunResult]

CHECKS = """\
import pytest

import demo_kernels


@pytest.mark.tile_kernel("demo/double")
def test_double(tile_case):
    result = tile_case.check()
    assert result.passed and result.rel_l2_err is not None


@pytest.mark.tile_kernel("demo/off_by_5pct")
def test_off(tile_case):
    tile_case.check()
"""

SKIPPING = """\
import pytest
import tile_runner as tile


def _inputs(case, key):
    if case.dtype.name == "bfloat16":
        tile.skip("no bfloat16 on this path")
    return (tile.normal(key, (8, 8), case.dtype),)


@tile.kernel("demo/picky", inputs=_inputs, reference=lambda x: x,
             test=tile.axes(dtype=["float32", "bfloat16"]))
def picky(x):
    return x


@pytest.mark.tile_kernel("demo/picky")
def test_picky(tile_case):
    tile_case.check()
"""

IDS = [
    "demo/double[shape=8x128,dtype=float32]",
    "demo/double[shape=8x128,dtype=bfloat16]",
    "demo/double[shape=33x100,dtype=float32]",
    "demo/double[shape=33x100,dtype=bfloat16]",
]


def test_one_item_per_case_checked_against_its_reference(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(test_checks=CHECKS, test_skipping=SKIPPING)
    result = session("-v", "-rs")
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    out = result.stdout.str()
    # ids are the case ids, in the kernel's axes order.
    ran = [line.split(" ")[0] for line in result.outlines if line.startswith("test_checks.py::")]
    assert ran == [
        *(f"test_checks.py::test_double[{i}]" for i in IDS),
        "test_checks.py::test_off[demo/off_by_5pct[shape=8x128]]",
    ]
    # The failure says which case, by how much, against what tolerance; no traceback.
    assert "demo/off_by_5pct[shape=8x128]: relative L2 error 0.05 > tol 1e-05" in out
    assert "Traceback" not in out and "def check" not in out
    # tile.skip in the inputs factory skips that case only.
    assert "test_picky[demo/picky[dtype=float32]] PASSED" in out
    assert "no bfloat16 on this path" in out


def test_config_tolerances_win_over_the_kernels(
    pytester: pytest.Pytester, session: Session
) -> None:
    # tile test's order: [test] tolerances, then the kernel's tol, then the built-in table.
    pytester.makepyfile(test_checks=CHECKS)
    pytester.makefile(".toml", tile="[test]\ntolerances = { float32 = 0.1 }\n")
    session().assert_outcomes(passed=5)


def test_misuse_is_explained_without_tracebacks(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(
        test_no_argument="""
        import pytest
        import demo_kernels

        @pytest.mark.tile_kernel("demo/double")
        def test_forgot():
            pass
        """,
        test_typo="""
        import pytest
        import demo_kernels

        @pytest.mark.tile_kernel("demo/tripple")
        def test_typo(tile_case):
            tile_case.check()
        """,
        test_suite="""
        import pytest
        import demo_kernels

        @pytest.mark.tile_kernel("demo/double", suite="build")
        def test_suite(tile_case):
            pass
        """,
        test_no_mark="def test_no_mark(tile_case):\n    pass\n",
    )
    result = session("--continue-on-collection-errors")
    result.assert_outcomes(errors=4)
    out = result.stdout.str()
    assert "@pytest.mark.tile_kernel needs the test to take the `tile_case` argument" in out
    assert "hint: write `def test_x(tile_case): tile_case.check()`" in out
    assert "tile_kernel('demo/tripple'): no kernel named `demo/tripple`" in out
    assert "registered: demo/double, demo/off_by_5pct" in out
    assert "import the module that registers the kernel" in out
    assert "unexpected 'build'" in out and 'suite="bench"' in out
    assert "the `tile_case` fixture comes from a kernel's cases" in out
    assert "Traceback" not in out


GRADIENTS = """\
import jax
import pytest
import tile_runner as tile


def _inputs(case, key):
    x = 0.01 * tile.normal(key, (64,), "float32")
    return (x.at[37].set(10.0),)  # the planted bug's missing term (2 x g) is largest here


@jax.custom_vjp
def square(x):
    return x * x


# The planted bug: the gradient drops the factor 2 (one of the two x * g terms).
square.defvjp(lambda x: (square(x), x), lambda x, g: (x * g,))
tile.kernel("demo/square", inputs=_inputs, reference=lambda x: x * x,
            test=tile.axes(dtype=["float32"]), modes=("fwd", "bwd", "fwd_bwd"))(square)


@pytest.mark.tile_kernel("demo/square", mode="all")
def test_square(tile_case):
    tile_case.check()
"""
UNDECLARED = """import pytest
import demo_kernels


@pytest.mark.tile_kernel("demo/double", mode="bwd")
def test_undeclared(tile_case):
    tile_case.check()
"""


def test_modes_reach_the_mark_and_a_dropped_gradient_term_fails_bwd_only(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(test_grads=GRADIENTS, test_undeclared=UNDECLARED)
    result = session("-v", "--continue-on-collection-errors")
    out = result.stdout.str()
    # One item per case and mode, ids as `tile test --mode all` names them.
    assert "test_square[demo/square[dtype=float32]] PASSED" in out, out
    assert "test_square[demo/square[dtype=float32,mode=bwd]] FAILED" in out
    assert "test_square[demo/square[dtype=float32,mode=fwd_bwd]] FAILED" in out
    # The failure names the input and the worst index, as `tile test --mode bwd` does.
    assert "demo/square[dtype=float32,mode=bwd]: gradient of input `x`" in out
    assert "at [37]" in out
    # A mode the kernel does not declare is a collection error that says which it has.
    assert "the kernel does not declare mode 'bwd' (its modes: fwd)" in out
    assert "Traceback" not in out
    result.assert_outcomes(passed=1, failed=2, errors=1)
