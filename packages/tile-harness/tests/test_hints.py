"""The hint under a failure says what to do about that failure, not about another one."""

from __future__ import annotations

import tile_protocol as tp
from tile_harness._hints import failure_hints


def test_a_missing_plugin_is_told_to_install_it_not_to_check_module_paths() -> None:
    # Issue 40: `--plugin tile-std` in a project without tile-std got the hint for a module
    # that did not import (`[project] modules`/`paths`), which says nothing of plugins.
    missing = tp.Failure(phase="import", error_type="PluginNotFound",
                         message="no kernel plugin named `tile-std` is installed (installed: none)")  # fmt: skip
    (hint,) = failure_hints([missing])
    assert "uv add tile-std" in hint and "`[project] plugins`" in hint
    assert "paths" not in hint
    broken = tp.Failure(phase="import", error_type="ImportError", message="importing `m`: boom")
    hints = failure_hints([missing, broken])
    assert len(hints) == 2 and "`[project] modules`/`paths`" in hints[1]
