"""Redaction by value: every file the writer writes, whatever form the secret takes there."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path

import pytest

from tile_artifacts import (
    REDACTED,
    ArtifactWriter,
    Context,
    Producer,
    Redactor,
    is_secret_name,
    new_run_id,
)
from tile_artifacts._redact import redact_urls
from tile_artifacts.check import check_path

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0")
TOML = """\
[runner]
env = { HF_TOKEN = "tok-inline-1234", PLAIN = "visible" }

[profiles.gpu.runner.env]
"AWS_SECRET_ACCESS_KEY" = 'quoted-key-5678'

[profiles.ci]
runner.env.DB_PASSWORD = "pw"   # short: hidden by its name only
"""


def test_names_decide_what_is_secret() -> None:
    for name in ("HF_TOKEN", "db_password", "GH_AUTH", "api-key", "SESSION_COOKIE"):
        assert is_secret_name(name), name
    for name in ("XLA_FLAGS", "PATH", "CUDA_VISIBLE_DEVICES", "max_time"):
        assert not is_secret_name(name), name


def test_secrets_come_from_env_settings_config_and_argv() -> None:
    redactor = Redactor.for_run(
        environ={
            "MY_API_TOKEN": "env-token-0001",
            "XDG_SESSION_TYPE": "x11",  # too short to hide everywhere
            "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",  # a path, not a secret
            "HOME": "/home/someone-with-a-long-name",
        },
        settings={"RUNNER_SECRET": "setting-secret", "PLAIN": "not-a-secret"},
        config_text=TOML,
        argv=["tile", "bench", "runner.env.CLI_TOKEN=argv-token-77", "--api-key", "flag-key-9"],
    )
    assert set(redactor.secrets) == {
        "env-token-0001",
        "setting-secret",
        "tok-inline-1234",
        "quoted-key-5678",
        "argv-token-77",
        "flag-key-9",
    }
    assert "DB_PASSWORD" in redactor.keys


def test_toml_snapshot_hides_every_spelling() -> None:
    redactor = Redactor.for_run(environ={}, config_text=TOML)
    text = redactor.toml(TOML)
    for secret in ("tok-inline-1234", "quoted-key-5678", '"pw"'):
        assert secret not in text
    assert 'HF_TOKEN = "<redacted>"' in text
    assert 'runner.env.DB_PASSWORD = "<redacted>"   # short' in text
    assert 'PLAIN = "visible"' in text


@pytest.mark.parametrize("secret", ["1234567890", 'quo"te\\slash', "ünïcode-sëcret"])
def test_json_stays_json_whatever_the_secret(secret: str) -> None:
    redactor = Redactor([secret])
    doc = {"n": 12345678901234, "argv": [f"--x={secret}"], secret: 1.5, "t": True}
    for indent in (None, 2):
        text = json.dumps(doc, ensure_ascii=False, indent=indent)
        out = json.loads(redactor.json_text(text, indent=indent))
        assert out["argv"] == [f"--x={REDACTED}"]
        assert out[REDACTED] == 1.5
        assert out["n"] == 12345678901234  # digits inside a number are not a secret's
        assert secret not in json.dumps(out["argv"], ensure_ascii=False)
    untouched = json.dumps({"a": "nothing here"})
    assert redactor.json_text(untouched) is untouched


def test_every_writer_path_redacts_and_logs_can_be_scrubbed(tmp_path: Path) -> None:
    secret = "sk-live-7f3a9c"
    run = tmp_path / "run"
    writer = ArtifactWriter(
        run, run_id=new_run_id("bench"), producer=PRODUCER, redactor=Redactor([secret])
    )
    writer.event("run_started", f"argv has {secret}", fields={"argv": ["--set", f"x={secret}"]})
    writer.command("C001", ["srun", f"--comment={secret}"], cwd=tmp_path, status="success",
                   environment_overrides={"PLAIN": secret})  # fmt: skip
    writer.write_text("config/tile.toml", f'token = "{secret}"\n')
    writer.write_json("context.json", Context(argv=["tile", secret]))
    log = writer.log_path("logs/runner-1.stderr.log")
    log.write_text(f"the kernel printed {secret}\n")
    assert writer.scrub("logs/runner-1.stderr.log")
    assert not writer.scrub("logs/runner-1.stderr.log")  # nothing left to hide
    for path in run.rglob("*"):
        text = path.read_text() if path.is_file() else ""
        assert secret not in text, path
        assert not text or REDACTED in text, path
    assert not [p for p in check_path(run) if "context.json" in p.file]


# Issue #39: a `[downloads]` URL carries its credentials without a secret-looking key.
URL_TOML = """\
[downloads.weights]
url = "https://alice:pa%40ss-0001@data.example.org/w.npy?v=2&access_token=tok-url-0002#part"
sha256 = "00"

[downloads.signed]
url = "https://bucket.s3.amazonaws.com/x?X-Amz-Credential=AKIA0003&X-Amz-Signature=sig-0004"

[downloads.mirror]
url = "https://ghp_token0005@github.com/o/r/raw/x.npy?format=raw"
"""


def test_url_credentials_are_hidden_by_value() -> None:
    text = redact_urls(URL_TOML)
    for secret in (
        "alice",
        "pa%40ss-0001",
        "tok-url-0002",
        "AKIA0003",
        "sig-0004",
        "ghp_token0005",
    ):
        assert secret not in text, secret
    assert "https://<redacted>@data.example.org/w.npy?v=2&access_token=<redacted>#part" in text
    assert "X-Amz-Credential=<redacted>&X-Amz-Signature=<redacted>" in text
    assert "https://<redacted>@github.com/o/r/raw/x.npy?format=raw" in text
    # A plain user name, a URL without credentials, text without a URL: as written.
    plain = "git+ssh://git@github.com/o/r https://example.org/a?page=2&key_count"
    assert redact_urls(plain) == plain


def test_url_secrets_are_secrets_of_the_run_everywhere() -> None:
    redactor = Redactor.for_run(environ={"HTTPS_PROXY": "http://bob:proxy-pw-0006@proxy:3128"},
                                config_text=URL_TOML,
                                argv=["tile", "fetch", "--url", "https://h/?token=argv-0007"])  # fmt: skip
    assert {"pa%40ss-0001", "pa@ss-0001", "tok-url-0002", "AKIA0003", "sig-0004",
            "proxy-pw-0006", "argv-0007"} <= set(redactor.secrets)  # fmt: skip
    # The token alone, as an error message might quote it, and inside JSON and a snapshot.
    assert redactor.text("401 for tok-url-0002") == f"401 for {REDACTED}"
    line = json.dumps({"url": "https://carol:x-pw-0008@host/f"})
    assert json.loads(redactor.json_text(line)) == {"url": f"https://{REDACTED}@host/f"}
    assert "tok-url-0002" not in redactor.toml(URL_TOML)


# Issue #39: a runner's stderr log is as large as a kernel makes it (1.2 GB took the CLI to
# 1.25 GB while a secret-named variable was set, as in every CI job).
SCRUB_SCRIPT = """
import resource, sys
from tile_artifacts import Redactor

redactor = Redactor([sys.argv[2]])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
held = redactor.scrub_file(sys.argv[1])
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(held, grown // 1024)  # ru_maxrss is in KiB on Linux
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB")
def test_scrubbing_a_large_log_holds_a_bounded_part_of_it(tmp_path: Path) -> None:
    secret = "ci-token-value-0123"
    log = tmp_path / "runner-1.stderr.log"
    block = ("noise " * 20 + "see https://example.org/doc?page=2\n") * 4000  # ~0.6 MiB
    with log.open("w") as fh:
        fh.write(f"first {secret}\n")
        for _ in range(128):
            fh.write(block)
        fh.write(f"https://u:{secret}@host/x\nlast {secret}")  # no newline at the end
    size = log.stat().st_size
    done = subprocess.run([sys.executable, "-c", SCRUB_SCRIPT, str(log), secret],
                          capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    held, grown_mib = done.stdout.split()
    assert held == "True"
    assert int(grown_mib) < 16, f"scrubbing a {size >> 20} MiB log grew by {grown_mib} MiB"
    text = log.read_text()
    assert secret not in text
    assert text.startswith(f"first {REDACTED}\n") and text.endswith(f"last {REDACTED}")
    assert f"https://{REDACTED}@host/x\n" in text
    assert text.count("https://example.org/doc?page=2\n") == 128 * 4000


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_a_secret_or_url_across_a_block_boundary_is_still_hidden(
    tmp_path: Path, block: int
) -> None:
    log = tmp_path / "log"
    text = "a multi\nline secret-0001 and https://u:pw-0002@h/?token=t-0003 end\n" * 3
    log.write_text(text)
    redactor = Redactor(["line secret-0001"])
    assert redactor.scrub_file(log, block=block)
    assert log.read_text() == redactor.text(text)
    assert not redactor.scrub_file(log, block=block)  # nothing left to hide


# Issue #39: the runner's stderr now reaches its log through the CLI, redacted as it comes, so
# that a CLI killed mid-run leaves no secret on disk and every line it was given.
def _fed(chunks: list[bytes], redactor: Redactor, **kw: int) -> list[tuple[int, bytes]]:
    """Each piece `Redactor.stream` gave, with how many bytes of `chunks` it had read then."""
    read = 0

    def source() -> Iterator[bytes]:
        nonlocal read
        for chunk in chunks:
            read += len(chunk)
            yield chunk

    return [(read, piece) for piece in redactor.stream(source(), **kw)]


def test_a_stream_is_written_line_by_line_with_its_secrets_hidden() -> None:
    redactor = Redactor(["token-secret-0001"])
    chunks = [b"first line\n", b"tok", b"en-secret-0001 and https://u:pw-0002@", b"h/x\n", b"end"]
    ends = list(accumulate(map(len, chunks)))
    # A complete line is out before the next chunk is read; a secret or URL a chunk cut is
    # held until it is whole; the unfinished last line comes at the end.
    assert _fed(chunks, redactor) == [
        (ends[0], b"first line\n"),
        (ends[2], f"{REDACTED} and ".encode()),
        (ends[3], f"https://{REDACTED}@h/x\n".encode()),
        (ends[4], b"end"),
    ]


def test_a_stream_keeps_a_secret_with_a_line_break_whole() -> None:
    redactor = Redactor(["BEGIN KEY\nabcd END"])
    pieces = _fed([b"key: BEGIN KEY\n", b"abcd END\n", b"after\n"], redactor)
    assert b"".join(p for _, p in pieces) == f"key: {REDACTED}\nafter\n".encode()


def test_a_stream_without_line_breaks_holds_a_bounded_part_of_it() -> None:
    redactor = Redactor(["secret-0003"])
    chunk = b"x" * 4096
    pieces = _fed([chunk] * 64 + [b"secret-0003"], redactor, longest_line=16384)
    held = max(read - sum(len(p) for _, p in pieces[: i + 1]) for i, (read, _) in
               enumerate(pieces))  # fmt: skip
    assert held <= 16384 + len(chunk)
    assert b"".join(p for _, p in pieces) == b"x" * 4096 * 64 + REDACTED.encode()
    invalid = b"bad \xff\xfe bytes\n"
    assert _fed([invalid], redactor) == [(len(invalid), invalid)]  # not UTF-8: kept as it is
