"""The outside sweep of issue 39 run again (2026-12-05, benchmarks/results/sweep39-2026-12-05.md):
what it still found, each through the real `tile` command and a real run directory; each test
failed before its fix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fake_runner import fake_project
from support import assert_schema_valid, tile_argv, tile_env

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


def test_a_cases_file_that_is_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    """`tile bench --cases FIFO` (and `tile list --cases FIFO`) blocked forever reading a
    named pipe nobody wrote; compare, baseline save and --compare already refused one."""
    import os

    root = fake_project(tmp_path / "p", "hello(); plan(CASES); done()\n")
    os.mkfifo(root / "cases.json")
    for command in ("bench", "list"):
        done = _tile(root, command, "--cases", "cases.json")
        assert done.returncode == 2, done.stderr
        assert "cannot read the cases file cases.json: not a regular file" in done.stderr
        assert "Traceback" not in done.stderr


STRAY_LINES = """
hello(); plan(); start(CASES[0])
raw(b"".join(b"stray print %d\\n" % i for i in range(3000)))
for case in CASES:
    bench(case)
done()
"""


def test_lines_that_are_not_protocol_messages_are_capped(tmp_path: Path) -> None:
    """A runner printing stray lines (400,000 in the sweep) made one fsynced `protocol_noise`
    warning each: events.jsonl grew without bound (38 MB in five minutes, still going),
    where `log` lines are capped. The first 1,000 are kept and the rest counted, once."""
    root = fake_project(tmp_path / "p", STRAY_LINES)
    done = _tile(root, "bench", "-o", "run")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in (root / "run" / "events.jsonl").read_text().splitlines()]
    noise = [e for e in events if e["event"] == "protocol_noise"]
    assert len(noise) == 1000 and noise[0]["fields"]["raw"] == "stray print 0"
    [note] = [e for e in events if e["event"] == "log_dropped"]
    assert note["message"].startswith("2000 line(s) that are not protocol messages dropped")
    assert_schema_valid(root / "run")


UNKNOWN_CASE = """
hello()
send({"type": "plan", "command": REQUEST.get("command", "bench"), "cases": []})
for case_id in REQUEST.get("case_ids") or []:
    send({"type": "failure", "case_id": case_id, "phase": "plan", "error_type": "UnknownCase",
          "message": f"no case `{case_id}` among the selected kernels on this backend"})
done()
"""


def test_profile_of_a_case_id_that_is_no_case_is_a_usage_error(tmp_path: Path) -> None:
    """`tile profile --case nope[n=1]` exited 3 ("the runner could not list the cases") where
    `tile bench --case nope[n=1]` exits 2, as docs/cli.md says of filters that select no case."""
    root = fake_project(tmp_path / "p", UNKNOWN_CASE)
    done = _tile(root, "profile", "--case", "nope[n=1]")
    assert done.returncode == 2, done.stderr
    assert "no case `nope[n=1]`" in done.stderr and "hint: `tile list`" in done.stderr
    assert "could not list" not in done.stderr and "Traceback" not in done.stderr


def test_no_command_writes_its_output_into_a_run_directory(tmp_path: Path) -> None:
    """`tile report -o RUN/x.html` was refused (issue 39 item 7), but `tile compare -o
    RUN/c.json`, `tile baseline save --dir RUN/b`, `tile history add --db RUN/h.sqlite` and
    `tile bench -o RUN/inner` still wrote there, and the run then failed `tile schema-check`
    (files not listed)."""
    root = fake_project(
        tmp_path / "p", "hello(); plan(CASES)\nfor c in CASES:\n    bench(c)\ndone()\n"
    )
    assert _tile(root, "bench", "-o", "run").returncode == 0
    for args in (
        ("compare", "run", "run", "-o", "run/c.json"),
        ("baseline", "save", "run", "--dir", "run/baselines"),
        ("history", "add", "run", "--db", "run/logs/h.sqlite"),
        ("bench", "-o", "run/inner"),  # a run inside a run
    ):
        done = _tile(root, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert f"`{root / 'run'}` is a run directory" in done.stderr and "hint:" in done.stderr
        assert_schema_valid(root / "run")


RAISES = """
hello(); plan(); start(CASES[0])
send({"type": "failure", "case_id": CASES[0], "phase": "run", "error_type": "RuntimeError",
      "message": "kernel exploded"})
for case in CASES[1:]:
    bench(case)
done(ok=False)
"""


def test_schema_check_finds_exit_code_0_beside_a_failed_case(tmp_path: Path) -> None:
    """schema-check refused `summary.exit_code` 3 beside `run.status` success, but passed the
    other contradiction: a run with a failed case whose summary says it exited 0."""
    root = fake_project(tmp_path / "p", RAISES)
    assert _tile(root, "bench", "-o", "run").returncode == 3
    report = root / "run" / "report.json"
    assert _tile(root, "schema-check", str(report)).returncode == 0
    doc = json.loads(report.read_text())
    doc["summary"]["exit_code"] = 0
    report.write_text(json.dumps(doc, indent=2))
    done = _tile(root, "schema-check", str(report))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "summary.exit_code is 0 but case `fake/k[i=0]` is `failed`" in done.stdout + done.stderr
