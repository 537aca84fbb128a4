"""Authoring API: axes, case ids, Case, registration, planning and filters."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tile_runner as tile
from tile_runner._plan import make_plan


def _inputs(case: Any, key: Any) -> tuple[Any, ...]:
    return (tile.normal(key, case.shape, case.dtype),)


def test_axes_product_in_declaration_order() -> None:
    ax = tile.axes(shape=[(8, 128), (33, 1000)], dtype=["float32", "bfloat16"], causal=True)
    assert ax.names == ("shape", "dtype", "causal")
    points = list(ax)
    assert len(ax) == len(points) == 4
    assert points[0] == {"shape": (8, 128), "dtype": "float32", "causal": True}
    assert points[1] == {"shape": (8, 128), "dtype": "bfloat16", "causal": True}
    assert points[3] == {"shape": (33, 1000), "dtype": "bfloat16", "causal": True}


def test_axes_normalize_and_reject() -> None:
    ax = tile.axes(dtype=[np.float32, "bfloat16"], n=[np.int64(3)], shape=[[2, 3]])
    assert ax.values("dtype") == ("float32", "bfloat16")
    assert ax.values("n") == (3,)
    assert ax.values("shape") == ((2, 3),)
    with pytest.raises(tile.DefinitionError, match="ambiguous"):
        tile.axes(shape=(8, 128))
    with pytest.raises(tile.DefinitionError, match="not a dtype"):
        tile.axes(dtype=["floaty"])
    with pytest.raises(tile.DefinitionError, match="no values"):
        tile.axes(n=[])
    with pytest.raises(tile.DefinitionError, match="free of"):
        tile.axes(mode=["a,b"])


def test_axes_join_and_override() -> None:
    ax = tile.axes(shape=[(4, 4)], dtype="float32") + tile.axes(shape=[(1,)], dtype="bfloat16")
    assert len(ax) == 2
    over = ax.override({"shape": ["128x256", "7"]})
    assert [p["shape"] for p in over] == [(128, 256), (7,), (128, 256), (7,)]
    typed = tile.axes(n=[1], scale=[0.5], flag=[True], mode=["fast"]).override(
        {"n": ["4"], "scale": ["2"], "flag": ["false"], "mode": ["slow"]}
    )
    assert next(iter(typed)) == {"n": 4, "scale": 2.0, "flag": False, "mode": "slow"}
    with pytest.raises(tile.DefinitionError, match="does not match"):
        tile.axes(n=[1]).override({"n": ["many"]})


def test_parse_and_format_values() -> None:
    assert tile.parse_value("4096x4096") == (4096, 4096)
    assert tile.parse_value("12") == 12
    assert tile.parse_value("0.25") == 0.25
    assert tile.parse_value("true") is True
    assert tile.parse_value("bfloat16") == "bfloat16"
    for value in [(4096, 4096), (7,), (), 3, 0.1, 1e-5, True, "bfloat16"]:
        text = tile.format_value(value)
        assert tile.parse_value(text, [value]) == value


def test_case_id_and_conveniences() -> None:
    case = tile.Case("std/softmax", {"shape": (4096, 4096), "dtype": "bfloat16", "causal": False})
    assert case.id == "std/softmax[shape=4096x4096,dtype=bfloat16,causal=false]"
    assert case.shape == (4096, 4096)
    assert case.dtype == np.dtype("bfloat16") or case.dtype.name == "bfloat16"
    assert case.size == 4096 * 4096
    assert case.itemsize == 2
    assert case.causal is False
    assert case.get("block", 128) == 128
    assert case.str_params == {"shape": "4096x4096", "dtype": "bfloat16", "causal": "false"}
    with pytest.raises(AttributeError, match="no axis `block`"):
        _ = case.block
    assert tile.Case("k", {}).id == "k"
    assert case == tile.Case("std/softmax", dict(case.params))
    with pytest.raises(AttributeError):
        case.kernel = "other"  # pyright: ignore[reportAttributeAccessIssue]
    again = pickle.loads(pickle.dumps(case))
    assert again == case and again.params == case.params


def test_kernel_registers_and_returns_function() -> None:
    def fn(x: Any) -> Any:
        """Identity."""
        return x

    out = tile.kernel(
        "t_api/identity",
        inputs=_inputs,
        bench={"cpu": tile.axes(shape=[(4,)], dtype="float32"), "default": tile.axes(n=[1])},
        test=None,
    )(fn)
    # What comes back calls `fn` unchanged (and records its calls while `--from` traces).
    assert getattr(out, "__wrapped__", None) is fn and out(3) == 3 and out.__doc__ == "Identity."
    definition = tile.get_kernel("t_api/identity")
    assert definition.fn is fn
    assert definition.description == "Identity."
    assert definition.module == __name__
    cpu = tile.cases("t_api/identity", "bench", backend="cpu")
    assert [c.id for c in cpu] == ["t_api/identity[shape=4,dtype=float32]"]
    # test falls back to bench; the mapping falls back to "default".
    assert [c.id for c in tile.cases("t_api/identity", "test", backend="gpu")] == [
        "t_api/identity[n=1]"
    ]
    # Registering again from the same module replaces the entry.
    tile.kernel("t_api/identity", inputs=_inputs)(fn)
    assert [c.id for c in tile.cases("t_api/identity", "bench", backend="cpu")] == [
        "t_api/identity"
    ]


def test_duplicate_kernel_from_another_module_names_both(tmp_path: Path) -> None:
    def dup(x: Any) -> Any:
        return x

    tile.kernel("t_api/dup", inputs=_inputs)(dup)
    other = tmp_path / "other_dup.py"
    other.write_text(
        "import tile_runner as tile\ntile.kernel('t_api/dup', inputs=lambda c, k: ())(lambda: 0)\n"
    )
    failures = tile.discover(paths=[str(other)], plugins=[])
    assert len(failures) == 1
    assert "registered twice" in failures[0].message
    assert __name__ in failures[0].message
    assert "other_dup" in failures[0].message


def test_kernel_rejects_bad_declarations() -> None:
    with pytest.raises(tile.DefinitionError, match="name"):
        tile.kernel("bad name", inputs=_inputs)
    with pytest.raises(tile.DefinitionError, match="key 'cuda'"):
        tile.kernel("t_api/bad", inputs=_inputs, bench={"cuda": tile.axes(n=[1])})
    with pytest.raises(tile.DefinitionError, match="tol"):
        tile.kernel("t_api/bad", inputs=_inputs, tol=-1.0)
    with pytest.raises(tile.DefinitionError, match="inputs"):
        tile.kernel("t_api/bad", inputs=None)  # pyright: ignore[reportArgumentType]


def test_plan_filters_kernels_and_case_ids() -> None:
    def a(x: Any) -> Any:
        return x

    def b(x: Any) -> Any:
        return x

    tile.kernel(
        "t_plan/a",
        inputs=_inputs,
        bench=tile.axes(shape=[(8,), (16,)], dtype=["float32", "bfloat16"]),
    )(a)
    tile.kernel("t_plan/b", inputs=_inputs, bench=tile.axes(shape=[(8,)]))(b)

    def ids(**kw: Any) -> list[str]:
        return [c.id for _, c in make_plan("bench", "cpu", **kw).cases]

    assert len(ids(kernels=["t_plan/*"])) == 5
    assert ids(kernels=["t_plan/b"]) == ["t_plan/b[shape=8]"]
    assert ids(kernels=["t_plan/*"], filters=["bfloat16"]) == [
        "t_plan/a[shape=8,dtype=bfloat16]",
        "t_plan/a[shape=16,dtype=bfloat16]",
    ]
    # A full id works as a filter although it contains `[`; globs are unanchored.
    assert ids(filters=["t_plan/a[shape=16,dtype=float32]"]) == ["t_plan/a[shape=16,dtype=float32]"]
    assert ids(filters=["t_plan/a*16*float32"]) == ["t_plan/a[shape=16,dtype=float32]"]
    assert ids(kernels=["t_plan/*"], filters=["shape=8]", "b["]) == ["t_plan/b[shape=8]"]
    plan = make_plan(
        "bench", "cpu", kernels=["t_plan/*"], case_ids=["t_plan/b[shape=8]", "t_plan/zzz"]
    )
    assert [c.id for _, c in plan.cases] == ["t_plan/b[shape=8]"]
    assert plan.failures[0].case_id == "t_plan/zzz"
    assert plan.failures[0].error_type == "UnknownCase"
    over = make_plan("bench", "cpu", kernels=["t_plan/b"], axes={"shape": ["2x2"]})
    assert [c.id for _, c in over.cases] == ["t_plan/b[shape=2x2]"]
    # An axis no selected kernel has is refused, naming the axes there are; nothing runs.
    over = make_plan("bench", "cpu", kernels=["t_plan/*"], axes={"shape": ["2x2"], "zz": ["1"]})
    assert over.cases == [] and over.units == []
    (failure,) = over.failures
    assert failure.error_type == "UnknownAxis" and failure.case_id is None
    assert "`zz`" in failure.message
    assert "t_plan/a (shape, dtype); t_plan/b (shape)" in failure.message


def test_matches() -> None:
    assert tile.matches("std/softmax[shape=8x128,dtype=float32]", "softmax")
    assert tile.matches("std/softmax[shape=8x128,dtype=float32]", "soft*float32")
    assert not tile.matches("std/softmax[shape=8x128,dtype=float32]", "bfloat16")
    assert tile.matches("std/softmax[shape=8x128]", "std/softmax[shape=8x128]")


def test_lazy_package_exports_everything() -> None:
    for name in tile.__all__:
        assert getattr(tile, name) is not None
    with pytest.raises(AttributeError):
        _ = tile.does_not_exist


# 105 and 48000 values are drawn as 112 and 49152 (drawn_count), then cut.
@pytest.mark.parametrize("where", ["device", "host"])  # where the draw is cut to shape
@pytest.mark.parametrize("partitionable", [True, False])  # False: drawn exactly, not cut
@pytest.mark.parametrize("shape", [(3, 5, 7), (10,), (), (0, 4), (48, 1000), (2, 2049)])
def test_inputs_drawn_flat_are_the_values_jax_draws_for_the_shape(
    shape: tuple[int, ...], partitionable: bool, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tile.normal/uniform/randint draw one flat run of values, a little longer than the shape
    needs, then cut and reshape it (a few drawing programs for many shapes), on the device or,
    when small, on the host; the values must stay those of drawing the shape itself, or every
    seeded input of an earlier run would change."""
    import jax

    import tile_runner._host as host_module

    if where == "device":
        monkeypatch.setattr(host_module, "HOST_ELEMENTS", 0)
    with jax.threefry_partitionable(partitionable):
        key = jax.random.key(7)
        pairs = [
            (tile.normal(key, shape, "bfloat16"),
             jax.random.normal(key, shape, "float32").astype("bfloat16")),
            (tile.uniform(key, shape, "float32", -1.0, 2.0),
             jax.random.uniform(key, shape, "float32", -1.0, 2.0)),
            (tile.randint(key, shape, 0, 9), jax.random.randint(key, shape, 0, 9, "int32")),
        ]  # fmt: skip
        for mine, theirs in pairs:
            assert mine.shape == shape and mine.dtype == theirs.dtype
            np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


def test_a_draw_already_in_shape_and_dtype_compiles_no_finishing_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jax

    import tile_runner._host as host_module
    from tile_runner._inputs import _finish  # pyright: ignore[reportPrivateUsage]

    monkeypatch.setattr(host_module, "HOST_ELEMENTS", 0)  # every draw finished on the device
    finishing: Any = _finish()  # the jitted cut, reshape and cast
    key = jax.random.key(3)
    before = finishing._cache_size()
    x = tile.normal(key, (4096,), "float32")  # a drawn size, drawn in float32: used as drawn
    assert x.shape == (4096,) and finishing._cache_size() == before
    np.testing.assert_array_equal(np.asarray(x), np.asarray(jax.random.normal(key, (4096,))))
    tile.normal(key, (4096,), "bfloat16")  # a cast: one finishing program
    assert finishing._cache_size() == before + 1


def test_small_draws_of_many_shapes_compile_no_finishing_program() -> None:
    """Up to HOST_ELEMENTS values, the cut and reshape are made on the host: a sweep of shapes
    compiles no program per shape (the cast is compiled per drawn count, not per shape)."""
    import jax

    from tile_runner._inputs import _finish  # pyright: ignore[reportPrivateUsage]

    finishing: Any = _finish()
    before = finishing._cache_size()
    key = jax.random.key(5)
    for rows in range(60, 72):
        x = tile.normal(key, (rows, 33), "bfloat16")
        assert x.shape == (rows, 33) and x.dtype == jax.numpy.bfloat16
    assert finishing._cache_size() == before


def test_a_sweep_of_sizes_draws_a_few_sizes_each_a_little_longer() -> None:
    from tile_runner._inputs import drawn_count

    drawn = {n: drawn_count(n) for n in range(1, 70_000)}
    assert all(n <= m < n + max(1, n / 8) for n, m in drawn.items())
    assert all(drawn_count(m) == m for m in set(drawn.values()))  # a drawn size draws itself
    # 100 neighbouring sizes share 12 drawing programs; powers of two (4096x4096) stay.
    assert len({drawn[n] for n in range(64, 164)}) == 12
    assert drawn_count(4096 * 4096) == 4096 * 4096 and drawn_count(48_000) == 49_152
