"""What a run's commit was: its time, subject and branch, asked of git once when it is recorded.

A run directory keeps only the commit hash (`producer.git_head`), which is enough to match
runs but not to order them or to say which branch they were on. Commits do not change, so
their time and subject can be looked up later; a branch is only known when HEAD still is the
run's commit (or when the caller says).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import tile_artifacts as ta

__all__ = ["GitInfo", "git_info"]


@dataclass(frozen=True, slots=True)
class GitInfo:
    """A run's source: commit, branch, dirty flag, commit time (UTC, `Z`) and subject line."""

    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None
    commit_time: str | None = None
    subject: str | None = None


def _git(cwd: Path, *args: str) -> str | None:
    out = ta.read_git(cwd, *args)
    return None if out is None else out.decode("utf-8", "replace").strip()


def git_info(
    repo: Path, commit: str | None, *, dirty: bool | None = None, branch: str | None = None
) -> GitInfo:
    """Look `commit` up in the repository at `repo`; unknown parts stay None.

    The branch is `branch` when given, else the checked-out branch if HEAD is `commit`
    (a detached HEAD, as in most CI checkouts, has none).
    """
    if commit is None or not repo.is_dir():
        return GitInfo(commit=commit, branch=branch, dirty=dirty)
    shown = _git(repo, "show", "-s", "--format=%ct%x1f%s", commit, "--")
    commit_time = subject = None
    if shown:
        stamp, _, subject = shown.partition("\x1f")
        if stamp.isdigit():
            moment = datetime.fromtimestamp(int(stamp), UTC)
            commit_time = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if branch is None and _git(repo, "rev-parse", "--verify", "-q", "HEAD") == commit:
        branch = _git(repo, "symbolic-ref", "--short", "-q", "HEAD") or None
    return GitInfo(commit, branch, dirty, commit_time, subject or None)
