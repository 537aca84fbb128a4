"""JAX's compilation cache seen from tile: real runs fill a real cache; info, clear and reports."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_runner import fake_project
from support import MakeProject, TileRun, tile_argv, tile_env

import tile_artifacts as ta

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n"


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.name.endswith("-cache"))


def _bench(tile: TileRun, root: Path, out: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = tile("bench", "-k", "scale", "-o", str(out), "--cache-report", *args, cwd=root, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert ta.check.check_path(out) == []
    manifest = json.loads((out / "artifact_manifest.json").read_text())
    assert "diagnostics/jax_cache.json" in {a["path"] for a in manifest["artifacts"]}
    doc = json.loads((out / "diagnostics" / "jax_cache.json").read_text())
    assert doc["run"]["status"] == manifest["run"]["status"]
    return doc


def test_cache_report_explains_misses_then_counts_hits(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], FAST)
    env = {"TILE_CACHE_DIR": str(tmp_path / "cache")}
    cache = tmp_path / "cache" / "jax"

    first = _bench(tile, root, tmp_path / "r1", env)
    assert first["cache_dir"] == str(cache) and "TILE_CACHE_DIR" in first["origin"]
    assert first["before"]["exists"] is False and first["before"]["entries"] == 0
    assert first["after"]["entries"] == len(_entries(cache)) > 0
    misses = [e for e in first["events"] if e["event"] == "miss"]
    assert len(misses) == first["miss_count"] > 0 and first["hit_count"] == 0
    assert {e["code"] for e in misses} <= {"new_program", "key_changed"}
    assert all(e["reason"] and e["case_id"] and e["module"].startswith("jit") for e in misses)
    assert any(e["module"] == "jit_scale" and e["code"] == "new_program" for e in misses)

    second = _bench(tile, root, tmp_path / "r2", env)
    assert second["miss_count"] == 0 and second["hit_count"] == first["miss_count"]
    assert second["before"]["entries"] == second["after"]["entries"] == first["after"]["entries"]

    # Other XLA flags change every key: each miss names that part of the key.
    flags = FAST + '[runner]\nenv = { XLA_FLAGS = "--xla_cpu_enable_fast_math=false" }\n'
    (root / "tile.toml").write_text('[project]\npaths = ["kernels"]\n' + flags)
    third = _bench(tile, root, tmp_path / "r3", env)
    changed = [e for e in third["events"] if e["event"] == "miss"]
    assert changed and all(e["code"] == "key_changed" for e in changed)
    assert all(e["differs"] == ["XLA flags"] for e in changed), [
        (e["module"], e["differs"]) for e in changed
    ]
    assert all("XLA flags" in e["reason"] for e in changed)


def test_cold_process_runs_twice_and_reports_what_the_cache_saved(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], FAST)
    env = {"TILE_CACHE_DIR": str(tmp_path / "cache")}
    doc = _bench(tile, root, tmp_path / "run", env, "--cold-process")
    cold, warm = doc["processes"]
    assert (cold["role"], warm["role"]) == ("cold", "warm")
    assert cold["misses"] > 0 and cold["hits"] == 0
    assert warm["hits"] == cold["misses"] and warm["misses"] == 0
    assert doc["before"]["entries"] == 0 and cold["cache_after"]["entries"] > 0
    assert cold["time_to_first_result_s"] > 0 and warm["time_to_first_result_s"] > 0
    assert {c["case_id"] for c in doc["cases"]} == {
        "fx/scale[n=256,dtype=float32]",
        "fx/scale[n=1024,dtype=float32]",
    }
    for case in doc["cases"]:
        assert case["cold_cache_hit"] is False and case["warm_cache_hit"] is True
        assert case["compile_saved_s"] == case["cold_compile_s"] - case["warm_compile_s"]
    # The run's cases are the warm runner's, once each; both runners are on record.
    report = ta.read_report(tmp_path / "run" / "report.json")
    assert len(report.cases) == 2 and all(c.phases.cache_hit for c in report.cases)
    commands = (tmp_path / "run" / "commands" / "commands.jsonl").read_text().splitlines()
    ended = [c for c in map(json.loads, commands) if c["status"] != "incomplete"]
    assert [c["phase"] for c in ended] == ["runner", "runner"]
    # The scratch cache is gone and the user's cache was never touched.
    assert not list((tmp_path / "cache").glob(".jax-cold-*"))
    assert not (tmp_path / "cache" / "jax").exists()


def test_an_older_runners_cache_log_lines_still_make_the_report(
    tile: TileRun, tmp_path: Path
) -> None:
    # Runners before protocol 1.9 sent each event as a `log` line `jax_cache {json}`.
    root = fake_project(
        tmp_path / "p",
        """
        def cache_log(case_id, **event):
            send({"type": "log", "level": "debug", "case_id": case_id,
                  "message": "jax_cache " + json.dumps(event, sort_keys=True)})

        hello(protocol_minor=8); plan()
        for i, case_id in enumerate(CASES):
            start(case_id, i)
            cache_log(case_id, event="miss", module="jit_k", key="jit_k-" + str(i),
                      code="new_program", differs=[], reason="first compile")
            cache_log(case_id, event="hit", module="jit_ref", key="jit_ref-0")
            bench(case_id)
        done()
        """,
    )
    doc = _bench_fake(tile, root, tmp_path)
    assert (doc["miss_count"], doc["hit_count"]) == (3, 3)
    first = doc["events"][0]
    assert first == {"process": "run", "case_id": "fake/k[i=0]", "event": "miss",
                     "module": "jit_k", "key": "jit_k-0", "code": "new_program",
                     "reason": "first compile", "differs": []}  # fmt: skip
    lines = (root / "run" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    recorded = [e for e in events if e["event"] == "cache_event"]
    assert len(recorded) == 6 and recorded[0]["fields"]["module"] == "jit_k"
    assert not [e for e in events if e["message"].startswith("jax_cache")]


def _bench_fake(tile: TileRun, root: Path, tmp_path: Path) -> dict[str, Any]:
    env = {"TILE_CACHE_DIR": str(tmp_path / "cache")}
    proc = tile("bench", "-o", "run", "--cache-report", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert ta.check.check_path(root / "run") == []
    return json.loads((root / "run" / "diagnostics" / "jax_cache.json").read_text())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cache-report", "--no-compile-cache"], "compile_cache"),
        (["--cold-process", "--isolate"], "--isolate"),
    ],
)
def test_cache_report_refuses_what_it_cannot_do(
    tile: TileRun, project: MakeProject, tmp_path: Path, args: list[str], needle: str
) -> None:
    root = project(["good.py"], FAST)
    proc = tile("bench", "-o", str(tmp_path / "out"), *args, cwd=root)
    assert proc.returncode == 2
    assert "error:" in proc.stderr and needle in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_cache_info_and_clear_on_a_real_cache(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], FAST)
    env = {"TILE_CACHE_DIR": str(tmp_path / "cache")}
    cache = tmp_path / "cache" / "jax"
    assert (
        tile("bench", "-k", "scale", "-o", str(tmp_path / "r"), cwd=root, env=env).returncode == 0
    )
    (cache / "notes.txt").write_text("not the cache's\n")

    info = tile("cache", "info", "--json", cwd=root, env=env)
    assert info.returncode == 0, info.stderr
    got = json.loads(info.stdout)
    entries = _entries(cache)
    assert got["cache_dir"] == str(cache) and got["enabled"] is True
    assert got["entries"] == len(entries) > 0
    assert got["entry_bytes"] == sum(p.stat().st_size for p in entries)
    assert got["oldest"] <= got["newest"] and got["refused_because"] is None

    # No terminal and no --yes: refuse, remove nothing.
    refused = tile("cache", "clear", cwd=root, env=env)
    assert refused.returncode == 2
    assert "error:" in refused.stderr and "--yes" in refused.stderr
    assert len(_entries(cache)) == len(entries)

    cleared = tile("cache", "clear", "--yes", "--json", cwd=root, env=env)
    assert cleared.returncode == 0, cleared.stderr
    assert json.loads(cleared.stdout)["removed_entries"] == len(entries)
    assert json.loads(cleared.stdout)["kept"] == ["notes.txt"]
    assert sorted(p.name for p in cache.iterdir()) == ["notes.txt"]
    assert cache.stat().st_mode & 0o777 == 0o700
    after = json.loads(tile("cache", "info", "--json", cwd=root, env=env).stdout)
    assert after["entries"] == 0 and after["oldest"] is None


def test_cache_info_names_the_config_key_it_came_from(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], '[runner]\njax_cache_dir = "build/jax"\ncompile_cache = false\n')
    proc = tile("cache", "info", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert f"cache directory: {root / 'build' / 'jax'}" in proc.stdout
    assert "`[runner] jax_cache_dir` (" in proc.stdout and "tile.toml:4" in proc.stdout
    assert "compile cache:   off" in proc.stdout


def test_cache_info_warns_when_runners_would_refuse_the_directory(
    tile: TileRun, tmp_path: Path
) -> None:
    cache = tmp_path / "cache" / "jax"
    cache.mkdir(parents=True)
    cache.chmod(0o777)
    proc = tile("cache", "info", env={"TILE_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0
    assert "writable by group or others" in proc.stderr and "chmod 700" in proc.stderr


def test_cache_commands_never_import_jax_or_numpy(tmp_path: Path) -> None:
    # sys.modules after a real `tile cache info`, written by the process itself: tile-harness
    # imports its names on first use (importlib), which `-X importtime` does not list.
    listing = tmp_path / "modules.txt"
    program = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: open({str(listing)!r}, 'w').write('\\n'.join(sys.modules)))\n"
        "sys.argv = ['tile', 'cache', 'info']\n"
        "runpy.run_module('tile_cli', run_name='__main__')\n"
    )
    subprocess.run(
        [sys.executable, "-c", program],
        cwd=tmp_path, capture_output=True, text=True, check=True,
        env=tile_env({"TILE_CACHE_DIR": str(tmp_path / "cache")}),
    )  # fmt: skip
    imported = set(listing.read_text().split())
    assert "tile_harness._jax_cache" in imported
    assert not {m for m in imported if m.split(".")[0] in ("jax", "jaxlib", "numpy")}


@pytest.mark.parametrize(("answer", "kept"), [(b"n\n", True), (b"y\n", False)])
def test_cache_clear_asks_on_a_terminal(tmp_path: Path, answer: bytes, kept: bool) -> None:
    cache = tmp_path / "cache" / "jax"
    cache.mkdir(parents=True, mode=0o700)
    entry = cache / f"jit_f-{'0' * 64}-cache"
    entry.write_bytes(b"executable")
    primary, secondary = pty.openpty()  # a real terminal on stdin
    try:
        os.write(primary, answer)
        proc = subprocess.run(
            tile_argv("cache", "clear"), stdin=secondary, capture_output=True, text=True,
            cwd=tmp_path, env=tile_env({"TILE_CACHE_DIR": str(tmp_path / "cache")}), timeout=60,
        )  # fmt: skip
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 0, proc.stderr
    assert "Remove 1 compiled executables" in proc.stderr
    assert entry.exists() is kept
    assert ("nothing removed" in proc.stderr) is kept
