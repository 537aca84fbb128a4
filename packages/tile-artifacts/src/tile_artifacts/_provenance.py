"""Provenance helpers: run ids, the producer block from git, input fingerprints."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from tile_artifacts._base import Producer, utc_now
from tile_artifacts._documents import FingerprintPolicy, InputFile
from tile_artifacts._errors import ArtifactError
from tile_artifacts._paths import NotRegularFileError, sha256_file

__all__ = ["fingerprint_input", "new_run_id", "producer_info", "read_git"]

_COMMAND_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_GIT_TIMEOUT_S: Final = 10.0


def new_run_id(command: str, now: datetime | None = None) -> str:
    """Return `<command>-<YYYYMMDDTHHMMSSZ>-<8 hex>`, e.g. `bench-20250131T120000Z-1a2b3c4d`."""
    if not _COMMAND_NAME.match(command):
        raise ArtifactError(
            f"command name `{command}` cannot start a run id",
            hint="use lowercase letters, digits and `-`, starting with a letter (e.g. `bench`)",
        )
    moment = utc_now() if now is None else now
    if moment.tzinfo is None:
        raise ArtifactError("run id time must be timezone-aware", hint="pass `datetime.now(UTC)`")
    stamp = moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{command}-{stamp}-{secrets.token_hex(4)}"


def read_git(cwd: Path, *args: str) -> bytes | None:
    """`git ARGS` run in `cwd`: its stdout, or None where git is missing, fails or hangs.

    For questions only: GIT_OPTIONAL_LOCKS=0 keeps even `git status` from taking the index
    lock of a repository someone is working in, and LC_ALL=C keeps its words parseable.
    """
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def producer_info(
    tool_name: str, tool_version: str, cwd: str | os.PathLike[str] | None = None
) -> Producer:
    """Describe the producer: git head, dirty flag and sha256 of `git diff HEAD` when dirty.

    Without git, outside a repository or before the first commit, the git fields are null.
    `dirty` counts tracked files only, like the diff whose hash is recorded.
    """
    where = Path.cwd() if cwd is None else Path(cwd)
    head = read_git(where, "rev-parse", "--verify", "HEAD")
    if head is None:
        return Producer(tool_name=tool_name, tool_version=tool_version)
    status = read_git(where, "status", "--porcelain", "--untracked-files=no")
    dirty = None if status is None else bool(status.strip())
    diff_sha = None
    if dirty:
        diff = read_git(where, "diff", "HEAD", "--no-color", "--no-ext-diff")
        diff_sha = None if diff is None else hashlib.sha256(diff).hexdigest()
    return Producer(
        tool_name=tool_name,
        tool_version=tool_version,
        git_head=head.decode("ascii", "replace").strip(),
        dirty=dirty,
        dirty_diff_sha256=diff_sha,
    )


def fingerprint_input(
    path: str | os.PathLike[str], kind: str, *, policy: FingerprintPolicy = "sha256"
) -> InputFile:
    """Describe an input file outside the run directory; a missing file gets policy `missing`.

    Only a regular file is hashed: a pipe or device (`/dev/zero`, a FIFO a runner named) is
    recorded `metadata_only`, without a size, since reading it could block or never end.
    """
    file = Path(path).absolute()
    if policy == "missing":
        return InputFile(path=str(file), kind=kind, fingerprint_policy="missing")
    try:
        if policy == "sha256":
            size, digest = sha256_file(file)
            return InputFile(
                path=str(file), kind=kind, size_bytes=size, sha256=digest, fingerprint_policy=policy
            )
        size = file.stat().st_size
    except FileNotFoundError:
        return InputFile(path=str(file), kind=kind, fingerprint_policy="missing")
    except NotRegularFileError:
        return InputFile(path=str(file), kind=kind, fingerprint_policy="metadata_only")
    except OSError as e:
        raise ArtifactError(
            f"cannot fingerprint input `{file}`: {e.strerror}",
            path=str(file),
            hint="check the file's permissions, or pass policy='metadata_only'",
        ) from None
    return InputFile(path=str(file), kind=kind, size_bytes=size, fingerprint_policy="metadata_only")
