"""The kept plan's key (issue 40): what changes it, what it refuses, and what it never answers.

Real files and the real configuration loader; the runner is not needed to tell a key apart
(tests/test_plan_cache.py runs the whole path with runners)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tile_protocol as tp
from tile_harness import ExitCode, Selection, resolve_config
from tile_harness._plan_cache import PlanCache, plans_path

CASES = [
    tp.CaseInfo(case_id=f"my/{k}[n={n}]", kernel=f"my/{k}")
    for k in ("fma", "scale")
    for n in (8, 16)
]


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "fma.py").write_text("X = 1\n")
    (root / "helpers").mkdir()
    (root / "helpers" / "shapes.py").write_text("SHAPES = [8, 16]\n")
    (root / "tile.toml").write_text('[project]\npaths = ["kernels"]\n')
    return root


def _cache(root: Path, sel: Selection, command: tp.Command = "bench") -> PlanCache | None:
    return PlanCache.open(command, resolve_config(None, {}, cwd=root), sel)


def _key(root: Path, sel: Selection | None = None) -> str:
    cache = _cache(root, sel or Selection(filters=["x"]))
    assert cache is not None
    return cache.key


def test_the_key_changes_with_what_the_plan_depends_on(tmp_path: Path) -> None:
    root = _project(tmp_path)
    first = _key(root)
    assert _key(root, Selection(filters=["other"], kernels=["my/*"])) == first  # filters: no
    assert _key(root, Selection(filters=["x"], modes=["bwd"])) != first
    assert _key(root, Selection(filters=["x"], axes=["n=8"])) != first
    cache = _cache(root, Selection(filters=["x"]), "test")
    assert cache is not None and cache.key != first
    # A helper the kernels import, outside `[project] paths`, is read too.
    (root / "helpers" / "shapes.py").write_text("SHAPES = [8, 16, 32]\n")
    second = _key(root)
    assert second != first
    (root / "tile.toml").write_text('[project]\npaths = ["kernels"]\n# a comment\n')
    assert _key(root) != second
    # A virtual environment or tile's own folder in the project is not read.
    third = _key(root)
    (root / ".tile").mkdir()
    (root / ".tile" / "x.py").write_text("changed = True\n")
    (root / "venv").mkdir()
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / "venv" / "y.py").write_text("changed = True\n")
    assert _key(root) == third


def test_the_key_changes_when_a_device_appears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel's cases can depend on the device (tile-std: GPU shapes on a GPU); a plan kept
    # on a CPU must not refuse a filter after a GPU appeared. A stand-in device node here.
    from tile_harness import _plan_cache

    root = _project(tmp_path)
    node = tmp_path / "nvidiactl"
    monkeypatch.setattr(_plan_cache, "_DEVICE_NODES", (str(node),))
    before = _key(root)
    node.write_text("")
    assert _key(root) != before


def test_a_kept_plan_refuses_only_filters_that_match_none_of_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    cache = _cache(root, Selection())
    assert cache is not None
    assert cache.refusal(Selection(filters=["fmaa"])) is None  # nothing kept yet
    cache.remember(CASES)
    assert plans_path(resolve_config(None, {}, cwd=root)).is_file()
    refused = cache.refusal(Selection(filters=["fmaa"]))
    assert refused is not None and refused.code == ExitCode.USAGE
    assert refused.message == "no case matches `-k fmaa`"
    assert refused.hint is not None and refused.hint.startswith("did you mean `-k fma`?")
    assert cache.refusal(Selection(filters=["fma", "zzz"])) is None  # one of them matches
    assert cache.refusal(Selection(filters=["sc*16"])) is None  # a glob, as the runner's
    assert cache.refusal(Selection(kernels=["my/f*"])) is None
    refused = cache.refusal(Selection(kernels=["my/fma"], filters=["scale"]))
    assert refused is not None and "together" in refused.message


def test_no_key_where_the_kept_plan_could_differ(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _cache(root, Selection(case_ids=["my/fma[n=8]"])) is None  # ids plan every mode
    assert _cache(root, Selection(cases=[tp.CaseSpec(kernel="my/fma")])) is None
    (root / "tile.toml").write_text('[project]\nmodules = ["no_such_module_here"]\n')
    assert _cache(root, Selection(filters=["x"])) is None  # cannot be found without importing
    (root / "tile.toml").write_text('[runner]\npython = "/usr/bin/python3"\n')
    assert _cache(root, Selection(filters=["x"])) is None  # another interpreter's packages


def test_a_damaged_plans_file_is_no_plan(tmp_path: Path) -> None:
    root = _project(tmp_path)
    cache = _cache(root, Selection())
    assert cache is not None
    cache.remember(CASES)
    for text in ("{not json", '{"format": 99, "plans": []}', '{"format": 1, "plans": [{}]}'):
        cache.path.write_text(text)
        assert cache.refusal(Selection(filters=["fmaa"])) is None
    cache.remember(CASES)  # written over, and used again
    assert cache.refusal(Selection(filters=["fmaa"])) is not None
