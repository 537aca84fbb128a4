"""Item 11 of issue 39: small defects, each once an internal error (exit 3), a bad value
accepted, a wrong exit code or something shown that should not be; each test failed before."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_runner import fake_project
from support import MakeProject, TileRun, tile_argv, tile_env


def _tile_bytes(*args: bytes, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`tile ARGS` with arguments given as bytes, as a shell passes what it was typed."""
    argv = [os.fsencode(sys.executable), b"-m", b"tile_cli", *args]
    return subprocess.run(argv, cwd=cwd, env=tile_env(), capture_output=True, text=True,
                          errors="replace", timeout=120)  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        [b"list", b"-k", b"\xff"],
        [b"bench", b"-o", b"run-\xff"],
        [b"bench", b"--set", b"bench.rounds=\xff"],
        [b"baseline", b"save", b"run", b"--label", b"\xfe"],
    ],
    ids=["-k", "-o", "--set", "--label"],
)
def test_an_argument_that_is_not_utf8_is_a_usage_error(tmp_path: Path, args: list[bytes]) -> None:
    (tmp_path / "tile.toml").write_text("[history]\nenabled = false\n")
    done = _tile_bytes(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "not valid UTF-8" in done.stderr and "internal error" not in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tile.toml"]  # no half-made run


UNKNOWN_CASE = """
hello()
send({"type": "plan", "command": "bench", "cases": []})
send({"type": "failure", "case_id": "nope[n=1]", "phase": "plan", "error_type": "UnknownCase",
      "message": "no case `nope[n=1]` among the selected kernels on this backend"})
done()
"""


def test_a_case_id_that_is_no_case_is_a_usage_error(tmp_path: Path) -> None:
    """Issue 39, item 11: `--case nope[n=1]` exited 3 (a failed run) where docs/cli.md says
    that filters selecting no case are a usage error (2)."""
    root = fake_project(tmp_path / "p", UNKNOWN_CASE)
    done = _tile_bytes(b"bench", b"--case", b"nope[n=1]", cwd=root)
    assert done.returncode == 2, done.stderr
    assert "no case `nope[n=1]`" in done.stderr and "tile list" in done.stderr
    assert "Traceback" not in done.stderr


NEWLINE_ID = """
evil = "fake/k[i=a\\nb]"
hello()
send({"type": "plan", "command": "bench",
      "cases": [{"case_id": evil, "kernel": "fake/k", "params": {"i": "a\\nb"}}]})
send({"type": "case_start", "case_id": evil, "index": 0, "total": 1})
bench(evil)
done()
"""


def test_a_newline_in_a_case_id_stays_on_its_row(tmp_path: Path) -> None:
    """Issue 39, item 11: a newline in a case id split its console row in two."""
    root = fake_project(tmp_path / "p", NEWLINE_ID)
    done = _tile_bytes(b"bench", b"-o", b"run", cwd=root)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "[i=a" in line]
    assert len(rows) == 1 and "[i=a\\nb]" in rows[0] and "ms" in rows[0], done.stdout


def test_tile_config_hides_a_secret_named_value(tmp_path: Path) -> None:
    """Issue 39, item 11: `tile config` printed `[runner] env`'s tokens on the console."""
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    (tmp_path / "tile.toml").write_text(f'[runner]\nenv = {{ GITHUB_TOKEN = "{token}" }}\n')
    for args in ([b"config"], [b"config", b"--json"]):
        done = _tile_bytes(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert token not in done.stdout + done.stderr
        assert "runner.env.GITHUB_TOKEN" in done.stdout and "<redacted>" in done.stdout


def test_tile_offline_that_is_not_a_boolean_is_refused_by_bench(tmp_path: Path) -> None:
    """Issue 39, item 11: `tile fetch` refused `TILE_OFFLINE=maybe`; `tile bench` ignored it."""
    root = fake_project(
        tmp_path / "p", "hello(); plan(CASES)\nfor c in CASES:\n    bench(c)\ndone()\n"
    )
    done = subprocess.run(tile_argv("bench", "-o", "run"), cwd=root, capture_output=True,
                          text=True, env=tile_env({"TILE_OFFLINE": "maybe"}), timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "TILE_OFFLINE='maybe' is not a boolean" in done.stderr and "hint:" in done.stderr
    assert not (root / "run").exists()


NOT_A_RUNNER = """
print("Python 3.11.7 (main) [GCC] on linux")
print("Type help for more information.")
"""


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (NOT_A_RUNNER, "its stdout began with a line that is not tile's protocol: 'Python 3.11"),
        # `"2.0"` is now read as the newer version it is (tests/test_sweep39.py)
    ],
    ids=["not-a-runner"],
)
def test_a_runner_that_never_says_hello_is_told_apart_from_a_crash(
    tmp_path: Path, body: str, said: str
) -> None:
    """Issue 39, item 11: output that is not tile's protocol, and a hello whose
    `protocol_version` is the string "2.0", were both reported as "runner exited with code 0
    before finishing", with a hint to a stderr log that was empty."""
    root = fake_project(tmp_path / "p", body)
    done = _tile_bytes(b"bench", b"-o", b"run", cwd=root)
    assert done.returncode == 3, done.stderr
    assert "runner exited with code 0 before finishing, without a `hello`" in done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # The hint says what is wrong with the runner, not to read its (empty) stderr log.
    assert "is not a tile runner: it must run `-m tile_runner`" in done.stderr
    assert "stderr is in `logs/runner-1.stderr.log`" not in done.stderr


NEWLINE_FAILURE = """
evil = "fake/k[i=a\\nb]"
hello()
send({"type": "plan", "command": "bench",
      "cases": [{"case_id": evil, "kernel": "fake/k", "params": {"i": "a\\nb"}}]})
send({"type": "case_start", "case_id": evil, "index": 0, "total": 1})
send({"type": "failure", "case_id": evil, "phase": "run", "error_type": "RuntimeError",
      "message": "kernel exploded"})
done(ok=False)
"""


def test_a_newline_in_a_case_id_stays_on_its_failure_line(tmp_path: Path) -> None:
    """Issue 39, item 11: the `✗ CASE ...` failure line split on a newline in a case id."""
    root = fake_project(tmp_path / "p", NEWLINE_FAILURE)
    done = _tile_bytes(b"bench", b"-o", b"run", cwd=root)
    assert done.returncode == 3, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("✗")]
    assert "fake/k[i=a\\nb] [run, failed] RuntimeError: kernel exploded" in line, done.stderr


def test_campaign_json_that_is_a_directory_is_named(tile: TileRun, project: MakeProject) -> None:
    """Issue 39, item 11: `campaign.json` replaced by a directory made the next `tile campaign
    run` an internal error (exit 3, "report it") when it wrote its checkpoint."""
    root = project(["good.py"], "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n")
    (root / "campaigns").mkdir()
    (root / "campaigns" / "c.toml").write_text("[select]\nkernels = ['fx/scale']\n"
                                               "filters = ['n=256']\n")  # fmt: skip
    assert tile("campaign", "run", "c", cwd=root).returncode == 0
    doc = root / ".tile" / "campaigns" / "c" / "campaign.json"
    doc.unlink()
    doc.mkdir()
    done = tile("campaign", "run", "c", cwd=root)
    assert done.returncode == 2, done.stderr
    assert f"`{doc}` is not a file" in done.stderr and "hint:" in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    doc.rmdir()  # as the hint says: the next run writes it again
    assert tile("campaign", "run", "c", cwd=root).returncode == 0 and doc.is_file()


def test_an_unusable_cache_dir_for_fetch_is_a_usage_error(tile: TileRun, tmp_path: Path) -> None:
    """Issue 39, item 11: `tile fetch` with TILE_CACHE_DIR under a file exited 3 (a failure
    of the machine) where docs/cli.md says a path you gave is 2."""
    digest = hashlib.sha256(b"x").hexdigest()
    (tmp_path / "tile.toml").write_text(
        f'[downloads.table]\nurl = "http://127.0.0.1:9/t.txt"\nsha256 = "{digest}"\n'
    )
    (tmp_path / "afile").write_text("")
    for cache in (tmp_path / "afile", tmp_path / "afile" / "sub"):
        done = tile("fetch", env={"TILE_CACHE_DIR": str(cache)})
        assert done.returncode == 2, done.stderr
        assert f"cannot write to the cache {cache}" in done.stderr
        assert "hint: point TILE_CACHE_DIR" in done.stderr


LEAKY_FAILURE = """
hello(); plan(CASES[:1]); start(CASES[0])
send({"type": "failure", "case_id": CASES[0], "phase": "run", "error_type": "RuntimeError",
      "message": "401 for " + os.environ["GITHUB_TOKEN"] + " and " + os.environ["HF_TOKEN"]})
done(ok=False)
"""


def test_a_token_in_an_exception_message_is_hidden_on_the_console(tmp_path: Path) -> None:
    """Issue 39, item 11: a kernel's exception quoting GITHUB_TOKEN's value (from the
    environment) or HF_TOKEN's (from `[runner] env`) was printed as is on the console (the run
    directory already hid both)."""
    token, hf = "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hf_notarealtoken42"
    root = fake_project(
        tmp_path / "p", LEAKY_FAILURE, runner_toml=f'env = {{ HF_TOKEN = "{hf}" }}\n'
    )
    done = subprocess.run(tile_argv("bench", "-o", "run"), cwd=root, capture_output=True,
                          text=True, env=tile_env({"GITHUB_TOKEN": token}), timeout=120)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "RuntimeError: 401 for <redacted> and <redacted>" in done.stderr
    assert token not in done.stdout + done.stderr and hf not in done.stdout + done.stderr
