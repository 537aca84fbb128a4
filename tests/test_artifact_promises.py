"""Run directories keep their promises: no secret in any file, valid after SIGKILL at any
moment with every finished case, and findings that say what went wrong and what to do."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun, assert_schema_valid, tile_argv, tile_env, wait_for

import tile_artifacts as ta

pytestmark = pytest.mark.slow

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 30\n"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ---------------------------------------------------------------- secrets

SECRETS = {
    "toml_inline": "toml-inline-secret-0001",
    "toml_profile": "toml-profile-secret-0002",
    "env": "env-secret-value-0003",
    "argv_positional": "argv-positional-secret-0004",
    "argv_set": "argv-set-secret-0005",
}
SECRET_TOML = f"""\
[runner]
case_timeout = 30
env = {{ MY_API_TOKEN = "{SECRETS["toml_inline"]}", PLAIN = "visible-value" }}

[profiles.ci.runner.env]
"DB_PASSWORD" = '{SECRETS["toml_profile"]}'
"""


def test_no_file_of_the_run_holds_a_secret(tile: TileRun, project: MakeProject) -> None:
    root = project(["leaky.py"], FAST.replace("[runner]\ncase_timeout = 30\n", "") + SECRET_TOML)
    env = {
        "SERVICE_AUTH_TOKEN": SECRETS["env"],
        # Not secret by name, recorded by `[telemetry] env`: hidden because its value is known.
        "TILE_NOTE": f"deployed with {SECRETS['env']}",
    }
    proc = tile(
        "bench",
        "--profile",
        "ci",
        f"runner.env.CLI_TOKEN={SECRETS['argv_positional']}",
        "--set",
        f"runner.env.SECOND_PASSWORD={SECRETS['argv_set']}",
        cwd=root,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    run = (root / ".tile" / "latest").resolve()
    files = [p for p in run.rglob("*") if p.is_file()]
    for path in files:
        text = path.read_text(errors="replace")
        for where, secret in SECRETS.items():
            assert secret not in text, f"{where} secret in {path.relative_to(run)}"
    log = (run / "logs" / "runner-1.stderr.log").read_text()
    assert "debug: MY_API_TOKEN=<redacted>" in log  # the kernel did print it; it was hidden
    assert "debug: SERVICE_AUTH_TOKEN=<redacted>" in log
    snapshot = (run / "config" / "tile.toml").read_text()
    assert 'MY_API_TOKEN = "<redacted>"' in snapshot and '"DB_PASSWORD" = "<redacted>"' in snapshot
    assert 'PLAIN = "visible-value"' in snapshot  # only secrets are hidden
    started = _lines(run / "events.jsonl")[0]
    assert "runner.env.CLI_TOKEN=<redacted>" in started["fields"]["argv"]
    environment = json.loads((run / "config" / "environment.json").read_text())["variables"]
    assert environment["TILE_NOTE"] == "deployed with <redacted>"
    assert_schema_valid(run)


# Issue #39: a download URL's credentials have no secret-looking key beside them.
URL_SECRETS = {
    "userinfo": "url-password-0006",
    "query": "url-token-0007",
    "signature": "url-signature-0008",
}
URL_TOML = f"""
[downloads.weights]
url = "https://ci-bot:{URL_SECRETS["userinfo"]}@data.example.org/w.npy?access_token={URL_SECRETS["query"]}"
sha256 = "{"0" * 64}"

[downloads.signed]
url = "https://bucket.example.org/x.npy?X-Amz-Signature={URL_SECRETS["signature"]}&v=1"
sha256 = "{"1" * 64}"
"""


def _holding_secrets(root: Path, secrets: dict[str, str]) -> list[str]:
    """`where in FILE` for every secret found in a file under `root`."""
    return [f"{where} in {path.relative_to(root)}" for path in root.rglob("*") if path.is_file()
            for where, secret in secrets.items()
            if secret in path.read_text(errors="replace")]  # fmt: skip


def test_no_run_or_campaign_file_holds_a_download_urls_credentials(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST + URL_TOML)
    (root / "campaigns").mkdir()
    (root / "campaigns" / "one.toml").write_text("[select]\nkernels = ['fx/square']\n")
    runs = root / ".tile"
    assert (proc := tile("test", "-k", "fx/square", cwd=root)).returncode == 0, proc.stderr
    assert (proc := tile("campaign", "run", "one", "--smoke", cwd=root)).returncode == 0, (
        proc.stderr
    )
    assert _holding_secrets(runs, URL_SECRETS) == []
    snapshots = [p.read_text() for p in runs.rglob("tile.toml")] + [
        p.read_text() for p in runs.rglob("resolved_tool.json")
    ]
    assert len(snapshots) >= 4  # the test run's and the campaign unit's, TOML and JSON
    assert all("https://<redacted>@data.example.org/w.npy?access_token=<redacted>" in s
               for s in snapshots)  # fmt: skip
    assert all("X-Amz-Signature=<redacted>&v=1" in s for s in snapshots)


# ---------------------------------------------------------------- SIGKILL

# 3 kernels x 2 sizes = 6 cases: every kind of line and moment a longer run has (ten of its 15
# lines are killed at below), at a third of the cost of 18 cases.
KILL_AXES = ("-a", "n=64,128")
CASES = 6
# hello, plan, 6 x (case_start, bench_result), done: the stream of a complete run.
STREAM_LINES = 2 + CASES * 2 + 1


def _kill_after(root: Path, out: Path, lines: int) -> bool:
    """Run `tile bench --json`, SIGKILL it after it printed `lines` protocol lines (and its
    runner with it); True when it was killed before the end of its stream."""
    proc = subprocess.Popen(
        tile_argv("bench", "--json", "-o", str(out), *KILL_AXES),
        cwd=root,
        env=tile_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    runners: list[int] = []
    seen = 0
    for line in proc.stdout:
        message = json.loads(line)
        if message["type"] == "hello":
            runners.append(message["pid"])
        seen += 1
        if seen == lines:
            proc.send_signal(signal.SIGKILL)
            break
    proc.communicate(timeout=120)
    for pid in runners:  # the runner is in its own session: end it too (no orphans left)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    return seen == lines


def _check_killed_run(out: Path, killed: bool) -> int:
    """What holds whenever the kill came; returns how many cases were finished."""
    assert_schema_valid(out)
    # Through the reader: report.json of a killed run lags behind, cases.jsonl has the rest.
    report = ta.read_report(out / "report.json").model_dump(mode="json")
    manifest = json.loads((out / "artifact_manifest.json").read_text())
    if killed:
        assert manifest["run"]["status"] == "incomplete"
        assert report["run"]["status"] in ("incomplete", "partial")
    else:
        assert manifest["run"]["status"] == report["run"]["status"] == "partial"
    cases = {c["case_id"]: c for c in report["cases"]}
    assert len(cases) in (0, CASES)  # the plan, once it arrived, lists every case
    done = {e["message"] for e in _lines(out / "events.jsonl") if e["event"] == "case_done"}
    for case_id in done:
        assert cases[case_id]["status"] in ("success", "failed"), case_id
        assert len(cases[case_id]["samples"]) >= 5, case_id
    measured = {m["case_id"] for m in _lines(out / "metrics.jsonl")}
    assert measured <= {c for c, v in cases.items() if v["status"] != "incomplete"}
    commands = _lines(out / "commands" / "commands.jsonl")
    assert commands and commands[0]["command_id"] == "C001"  # recorded when it started
    return len(done)


def test_sigkill_at_any_moment_leaves_a_valid_run_with_every_finished_case(
    project: MakeProject,
) -> None:
    root = project(["good.py"], FAST)
    # Moments over the whole stream: its first line (hello), the plan, a case's start and a
    # case's end early, mid-way and late, the last line, and one beyond it: a run that ends
    # before the kill is complete. (Seven kills, not every line: each is a real bench run.)
    moments = [1, 2, 3, 6, 9, 12, STREAM_LINES, 10_000]
    finished: list[int] = []
    for i, lines in enumerate(moments):
        out = root / f"run-{i}-{lines}"
        killed = _kill_after(root, out, lines)
        assert killed == (lines <= STREAM_LINES), (lines, killed)
        finished.append(_check_killed_run(out, killed))
    assert finished[-1] == CASES
    assert finished[:-1] == sorted(finished[:-1])  # a later kill never has fewer cases


# Issue #39: a runner's stderr log was redacted only when the runner ended, so a CLI killed
# while the runner ran left a kernel's printed token on disk.
KILLED_SECRETS = {
    "env": "ghp-killed-cli-secret-0012",
    "url_password": "url-killed-password-0013",
    "url_query": "url-killed-0014",
}


def test_a_cli_killed_mid_run_leaves_no_secret_in_the_runners_log(project: MakeProject) -> None:
    root = project(["leaky_hang.py"], FAST.replace("case_timeout = 30", "case_timeout = 600"))
    out = root / "run"
    proc = subprocess.Popen(
        tile_argv("bench", "--json", "-o", str(out)),
        cwd=root,
        env=tile_env({"GITHUB_TOKEN": KILLED_SECRETS["env"]}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    runner = None
    try:
        while runner is None and (line := proc.stdout.readline()):
            message = json.loads(line)
            runner = message["pid"] if message["type"] == "hello" else None
        assert runner is not None, "the runner never said hello"
        log = out / "logs" / "runner-1.stderr.log"
        wait_for(log, "debug: all said", proc, 300)  # the secrets' lines were written before
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
        if runner is not None:  # in its own session, hung in its case: end it too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(runner, signal.SIGKILL)
    assert _holding_secrets(out, KILLED_SECRETS) == []
    text = log.read_text()
    assert f"debug: GITHUB_TOKEN={ta.REDACTED}" in text  # what was written is all there
    assert "https://<redacted>@data.example.org/w.npy?access_token=<redacted>" in text
    assert_schema_valid(out)
    manifest = json.loads((out / "artifact_manifest.json").read_text())
    assert manifest["run"]["status"] == "incomplete"


# ---------------------------------------------------------------- findings


def test_findings_say_what_failed_and_what_to_do(tile: TileRun, project: MakeProject) -> None:
    root = project(["crashy.py"], FAST)
    proc = tile(
        "bench", "-k", "a_good", "-k", "b_segfault", "-k", "e_raises", "-k", "g_wrong_shape",
        cwd=root,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    run = root / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    by = {f["category"]: f for f in report["findings"]}
    assert {"crash", "error", "correctness"} <= set(by)
    assert by["crash"]["severity"] == "high"
    # The evidence names the log of the runner that crashed in b_segfault's turn (after one
    # that crashed compiling the batch ahead, where no case was in flight to blame).
    (crash,) = [f for f in report["failures"] if f["exception_type"] == "RunnerCrash"]
    assert crash["case_id"].startswith("bad/b_segfault") and "SIGSEGV" in crash["message"]
    assert re.fullmatch(r"logs/runner-\d+\.stderr\.log", crash["stderr_log"])
    assert any("bad/b_segfault" in e and crash["stderr_log"] in e
               for e in by["crash"]["evidence"])  # fmt: skip
    assert any("bad/e_raises" in e for e in by["error"]["evidence"])
    assert any("bad/g_wrong_shape" in e for e in by["correctness"]["evidence"])
    actions = [a["description"] for a in report["recommended_actions"]]
    assert any("--isolate -k bad/b_segfault" in a for a in actions)
    assert [a["action_id"] for a in report["recommended_actions"]] == [
        f"A{i:03d}" for i in range(1, len(actions) + 1)
    ]
    assert report["summary"]["agent_summary"]["next_actions"] == actions
    summary = (run / "summary.md").read_text()
    assert "## Findings" in summary and "## Next steps" in summary
    assert "(crash): the runner crashed in 1 case" in summary
    assert_schema_valid(run)
