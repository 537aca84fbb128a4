"""The README's first command installs tile, not the contributors' toolchain (issue 40: it
pulled ruff, pyright, mypy and hypothesis, about 33 MB of 171 MB, into a user's first run)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEV_TOOLS = {"ruff", "pyright", "mypy", "hypothesis"}


def test_the_readmes_bench_command_installs_no_dev_toolchain() -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    first = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert first is not None
    line = next(s for s in first.group(1).splitlines() if "tile bench" in s)
    argv = shlex.split(line.split("&&")[-1])
    assert argv[:2] == ["uv", "run"], line
    flags = argv[2 : argv.index("tile")]
    # What `uv run FLAGS` would install, read from the lock file (offline, nothing installed).
    exported = subprocess.run(
        [uv, "export", "--frozen", "--no-hashes", "--quiet", *flags],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    names = {re.split(r"[=<>;\s]", s, maxsplit=1)[0].lower() for s in exported.splitlines()}
    assert "-e ./packages/tile-cli" in exported and "jax" in names
    assert not DEV_TOOLS & names, f"`{line.strip()}` installs {sorted(DEV_TOOLS & names)}"
