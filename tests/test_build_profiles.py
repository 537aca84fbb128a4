"""The build-profile harness on a real one-second crate: real cargo builds, real probes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from support import FIXTURES

import tile_artifacts as ta

REPO = Path(__file__).resolve().parent.parent
TINY = FIXTURES / "rust-tiny"


def _harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.build_profiles", *args,
         "--target", str(TINY / "build-profiles.toml"),
         "--output-root", str(tmp_path / "results"),
         "--target-root", str(tmp_path / "target"),
         "--import-runs", "2"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_two_profiles_build_apart_and_leave_valid_summaries(tmp_path: Path) -> None:
    touched = TINY / "src" / "lib.rs"
    mtime = touched.stat().st_mtime_ns
    proc = _harness(tmp_path, "dev", "release")
    assert proc.returncode == 0, proc.stderr
    (out,) = (tmp_path / "results").iterdir()
    assert out.name.endswith("Z") and out.name[:8].isdigit()  # <YYYYMMDDTHHMMSSZ>

    # Each profile in its own target dir, and only there.
    dev, release = tmp_path / "target" / "dev", tmp_path / "target" / "release"
    assert (dev / "debug" / "libtiny.so").is_file()
    assert (release / "release" / "libtiny.so").is_file()
    assert not (dev / "release").exists() and not (release / "debug").exists()
    # The incremental rebuild touched a source file and gave its time back.
    assert touched.stat().st_mtime_ns == mtime

    for name in ("summary.json", "commands/commands.jsonl", "metrics.jsonl", "events.jsonl"):
        assert ta.check.check_path(out / name) == [], name
    report = ta.read_report(out / "summary.json")
    assert report.run.status == "success"
    assert [c.params["profile"] for c in report.cases] == ["dev", "release"]
    figures = {(m.case_id, m.metric_name): m.value for m in report.metrics}
    for label, lib in (("dev", dev / "debug"), ("release", release / "release")):
        case = f"tiny[profile={label}]"
        assert figures[case, "extension_bytes"] == (lib / "libtiny.so").stat().st_size
        for name in (
            "clean_build_s",
            "noop_rebuild_s",
            "incremental_rebuild_s",
            "import_s",
            "engine_s",
        ):
            value = figures[case, name]
            assert value is not None and value > 0, (case, name)

    commands = [
        json.loads(line) for line in (out / "commands/commands.jsonl").read_text().splitlines()
    ]
    for record in commands:
        assert record["status"] == "success", record
        assert record["display"] == shlex.join(record["args"])
        assert (out / record["stderr_log"]).is_file()
    builds = [c for c in commands if c["args"][:2] == ["cargo", "build"]]
    assert len(builds) == 6  # clean, no-op and incremental, per profile
    assert {c["args"][c["args"].index("--target-dir") + 1] for c in builds} == {
        str(dev),
        str(release),
    }
    # Cargo itself says what it did: the no-op compiled nothing, the touched crate recompiled.
    logs: dict[str, list[str]] = {c["phase"]: [] for c in builds}
    for c in builds:
        logs[c["phase"]].append((out / c["stderr_log"]).read_text())
    assert all("Compiling tiny" in text for text in logs["build"] + logs["incremental"])
    assert not any("Compiling" in text for text in logs["noop"])
    # Probes ran on the build under test, through PYTHONPATH, never through a shell.
    probes = [c for c in commands if c["phase"] in ("import", "speed")]
    assert len(probes) == 2 * 3
    assert all(c["environment_overrides"]["PYTHONPATH"].startswith(str(tmp_path)) for c in probes)

    table = (out / "summary.md").read_text()
    assert "| | `dev` | `release` |" in table
    assert "rebuild after touching `src/lib.rs`" in table


def test_unknown_profile_is_a_usage_error_naming_the_manifest(tmp_path: Path) -> None:
    proc = _harness(tmp_path, "dev", "fastest")
    assert proc.returncode == 2
    assert "error:" in proc.stderr and "fastest" in proc.stderr
    assert str(TINY / "Cargo.toml") in proc.stderr
    assert "hint:" in proc.stderr and "release-small" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()
