"""The outside sweep of issue 39 run again (2026-12-05, benchmarks/results/sweep39-2026-12-05.md):
what it still found, each through the real `tile` command and a real run directory; each test
failed before its fix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fake_runner import fake_project
from support import tile_argv, tile_env

TOKEN, HF = "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hf_notarealtoken42"

LEAKY_FAILURE = """
hello(); plan(CASES[:1]); start(CASES[0])
send({"type": "failure", "case_id": CASES[0], "phase": "run", "error_type": "RuntimeError",
      "message": "401 for " + os.environ["GITHUB_TOKEN"] + " and " + os.environ["HF_TOKEN"]})
done(ok=False)
"""


def _tile(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(tile_argv(*args), cwd=root, capture_output=True, text=True,
                          env=tile_env(env), timeout=120)  # fmt: skip


def test_json_lines_hide_the_secrets_the_run_directory_hides(tmp_path: Path) -> None:
    """`tile bench --json` wrote a kernel's exception quoting GITHUB_TOKEN (environment) and
    HF_TOKEN (`[runner] env`) to stdout as is; the console and the run directory hid both."""
    root = fake_project(
        tmp_path / "p", LEAKY_FAILURE, runner_toml=f'env = {{ HF_TOKEN = "{HF}" }}\n'
    )
    done = _tile(root, "bench", "--json", "-o", "run", env={"GITHUB_TOKEN": TOKEN})
    assert done.returncode == 3, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    [failure] = [m for m in lines if m.get("error_type") == "RuntimeError"]
    assert failure["message"] == "401 for <redacted> and <redacted>"
    assert TOKEN not in done.stdout + done.stderr and HF not in done.stdout + done.stderr
    assert {m["type"] for m in lines} >= {"hello", "plan", "done"}


def test_tile_config_json_hides_a_url_s_credentials(tmp_path: Path) -> None:
    """`tile config --json` printed a `[downloads]` URL's password and access token; the table
    (and every file a run writes) hid them."""
    url = "https://user:s3cretpass@example.org/d.bin?access_token=tok_abcdefgh&x=1"
    (tmp_path / "tile.toml").write_text(f'[downloads.d]\nurl = "{url}"\nsha256 = "{"0" * 64}"\n')
    done = _tile(tmp_path, "config", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["values"]["downloads.d.url"]["value"]
    assert shown == "https://<redacted>@example.org/d.bin?access_token=<redacted>&x=1"
    assert "s3cretpass" not in done.stdout and "tok_abcdefgh" not in done.stdout


HELLO_2_0 = """
send({"type": "hello", "protocol_version": "2.0", "protocol_minor": 0, "runner_version": "x",
      "python_version": "3", "backend": "cpu", "timers": ["wall"], "pid": os.getpid(),
      "devices": []})
"""


def test_a_hello_of_version_string_2_0_is_a_newer_protocol(tmp_path: Path) -> None:
    """`"protocol_version": "2.0"` was reported as a runner that crashed before its hello;
    docs/cli.md: a newer protocol version, in any shape, is refused (3) as newer."""
    root = fake_project(tmp_path / "p", HELLO_2_0)
    done = _tile(root, "bench", "-o", "run")
    assert done.returncode == 3, done.stderr
    assert "the runner speaks tile protocol 2.0, this CLI understands only major version 1" in (
        done.stderr
    )
    assert "RunnerCrash" not in done.stderr and "Traceback" not in done.stderr
