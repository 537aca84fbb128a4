"""Discovery by module name, by path, and through `tile.kernels` entry points."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tile_runner as tile

FIXTURES = Path(__file__).parent / "fixtures"


def test_paths_import_files_and_directories(tmp_path: Path) -> None:
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "one.py").write_text(
        "import tile_runner as tile\ntile.kernel('t_disc/one', inputs=lambda c, k: ())(lambda: 1)\n"
    )
    (folder / "_private.py").write_text("raise RuntimeError('must not be imported')\n")
    (folder / "two.py").write_text(
        "from sibling import NAME\nimport tile_runner as tile\n"
        "tile.kernel(NAME, inputs=lambda c, k: ())(lambda: 2)\n"
    )
    (folder / "sibling.py").write_text("NAME = 't_disc/two'\n")
    failures = tile.discover(paths=[str(folder)], plugins=[])
    assert failures == []
    assert {"t_disc/one", "t_disc/two"} <= set(tile.registry())


def test_relative_paths_and_modules_use_project_root(tmp_path: Path) -> None:
    (tmp_path / "t_disc_mod.py").write_text(
        "import tile_runner as tile\ntile.kernel('t_disc/mod', inputs=lambda c, k: ())(lambda: 3)\n"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "rel.py").write_text(
        "import tile_runner as tile\ntile.kernel('t_disc/rel', inputs=lambda c, k: ())(lambda: 4)\n"
    )
    failures = tile.discover(
        modules=["t_disc_mod"], paths=["sub"], plugins=[], project_root=str(tmp_path)
    )
    assert failures == []
    assert {"t_disc/mod", "t_disc/rel"} <= set(tile.registry())


def test_import_errors_become_failures_and_discovery_goes_on(tmp_path: Path) -> None:
    (tmp_path / "t_disc_ok.py").write_text(
        "import tile_runner as tile\ntile.kernel('t_disc/ok', inputs=lambda c, k: ())(lambda: 5)\n"
    )
    (tmp_path / "t_disc_exit.py").write_text("raise SystemExit(2)\n")
    failures = tile.discover(
        modules=["t_disc_no_such_module", "t_disc_ok"],
        paths=[str(FIXTURES / "broken"), str(tmp_path / "t_disc_exit.py"), "nowhere/at/all"],
        plugins=[],
        project_root=str(tmp_path),
    )
    assert [f.phase for f in failures] == ["import"] * 4
    assert all(f.case_id is None for f in failures)
    assert failures[0].error_type == "ModuleNotFoundError"
    assert "broken on purpose" in failures[1].message
    assert failures[2].error_type == "SystemExit"
    assert "does not exist" in failures[3].message
    assert "t_disc/ok" in tile.registry()


def test_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES / "plugin_site"))  # pyright: ignore[reportUnknownMemberType]
    assert tile.discover(plugins=[]) == []
    assert "fxplugin_kernels" not in sys.modules  # plugins=[] loads none
    failures = tile.discover(plugins=["fxplugin", "nope"])
    assert "fxplugin/double" in tile.registry()
    assert len(failures) == 1
    assert failures[0].error_type == "PluginNotFound"
    assert "`nope`" in failures[0].message and "fxplugin" in failures[0].message
    broken = tile.discover(plugins=["fxbroken"])
    assert broken[0].phase == "import"
    assert "fxbroken" in broken[0].message


def test_all_installed_plugins_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES / "plugin_site"))  # pyright: ignore[reportUnknownMemberType]
    failures = tile.discover(plugins=None)
    assert "fxplugin/double" in tile.registry()
    # fxbroken is installed too (on purpose) and reported; other plugins may add their own.
    assert any("fxbroken" in f.message for f in failures)
    assert not any("`fxplugin`" in f.message for f in failures)
