"""Exit codes and the one error type the CLI turns into a message plus `hint:`."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import Final

import tile_protocol as tp

__all__ = [
    "USAGE_ERRORS",
    "CliError",
    "ExitCode",
    "exit_codes_help",
    "no_cases",
    "os_error",
    "os_failure",
    "refuse_run_directory",
    "stopped_code",
    "usage_failure",
    "write_atomically",
]

USAGE_ERRORS: frozenset[str] = frozenset(tp.USAGE_ERROR_TYPES)
"""Runner failures that mean the command line asked for something that does not exist: an
axis no selected kernel has, an `-a` value no kernel can read, or a `--tunable` no selected
kernel declares."""


class ExitCode(IntEnum):
    """Documented exit codes of `tile` (docs/cli.md); what each means is `meaning`."""

    OK = 0
    FAILED = 1
    USAGE = 2
    INFRA = 3
    INCONCLUSIVE = 4
    """Named for its most common cause; it means any comparison that could not judge a case."""
    INTERRUPTED = 130
    TERMINATED = 143

    @property
    def meaning(self) -> str:
        """One line for `tile --help`; docs/cli.md's table says the same at length."""
        return _MEANINGS[self]


_MEANINGS: Final[dict[ExitCode, str]] = {
    ExitCode.OK: "ok",
    ExitCode.FAILED: "failed check or regression",
    ExitCode.USAGE: "usage/config error or unusable input file",
    ExitCode.INFRA: "runner crash, timeout or infrastructure error (partial results kept)",
    ExitCode.INCONCLUSIVE: "a comparison could not judge every case: a case without a "
    "baseline or a baseline's case not run (unless --allow-missing), a case not comparable "
    "(another device, timer or cold/warm mode), or an inconclusive one with --fail-on-inconclusive",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
    ExitCode.TERMINATED: "terminated (SIGTERM)",
}


def exit_codes_help() -> str:
    """The exit-code paragraph of `tile --help`, made from `ExitCode` so the two cannot differ."""
    return "Exit codes: " + " · ".join(f"{int(code)} {code.meaning}" for code in ExitCode) + "."


class CliError(Exception):
    """A user-facing failure: one message, a hint, and the exit code to leave with."""

    def __init__(self, message: str, *, hint: str | None = None, code: ExitCode = ExitCode.USAGE):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


def stopped_code(interrupted: str) -> int:
    """The exit code of a run stopped by a signal (`interrupted` names it, e.g. "SIGTERM")."""
    return int(ExitCode.TERMINATED if "SIGTERM" in interrupted else ExitCode.INTERRUPTED)


def no_cases(filtered: bool) -> CliError:
    """The error of a run that planned no case: the filters matched none, or none exist."""
    if filtered:
        return CliError("no case matches the filters", hint="run `tile list` to see every case id")
    return CliError(
        "no kernels found",
        hint="add `[project] modules = [...]` or `paths = [...]` to tile.toml, or run "
        "`tile init NAME` to start a project",
    )


def os_failure(what: str, exc: OSError, *, hint: str, code: ExitCode = ExitCode.INFRA) -> CliError:
    """The error of an operating-system call that failed: `cannot <what>: <the OS's reason>`."""
    return CliError(f"cannot {what}: {exc.strerror or exc}", hint=hint, code=code)


def write_atomically(path: Path, data: str | bytes, *, hint: str, code: ExitCode) -> None:
    """Write a whole file through a temp file and a rename, so no reader sees half of it.

    The file honours the umask like a run directory's files (`tile_artifacts.replace_file`).
    """
    import tile_artifacts as ta  # not at import time: `tile --help` stays light

    refuse_run_directory(path, hint=hint)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ta.replace_file(path, data.encode() if isinstance(data, str) else data)
    except OSError as exc:
        raise os_failure(f"write `{path}`", exc, hint=hint, code=code) from None


def refuse_run_directory(path: Path, *, hint: str, in_campaign: bool = False) -> None:
    """Refuse (exit 2) a file tile would write at `path` inside a run or campaign directory.

    Its manifest lists every file, so a file added there (`tile compare -o RUN/c.json`,
    `tile baseline save --dir RUN`, `tile history add --db RUN/h.sqlite`, a run `-o RUN/x`)
    made the run fail `tile schema-check`; `tile report -o` refuses the same (tile-report's
    `write_html`). A directory tile writes as a run holds `events.jsonl` from its start, or a
    manifest. `in_campaign`: a campaign's directory (its plan.json is written before any unit
    runs) may hold it, as it holds each unit's run under `units/`.
    """
    import tile_artifacts as ta

    folder = path.absolute().parent
    for directory in (folder, *folder.parents):
        if in_campaign and (directory / ta.campaign.CAMPAIGN_PLAN_JSON).is_file():
            return
        if (directory / ta.EVENTS_JSONL).is_file() or (directory / ta.MANIFEST_JSON).is_file():
            raise CliError(
                f"cannot write `{path}`: `{directory}` is a run directory, and a file added "
                "there makes it fail `tile schema-check`",
                hint=f"write it outside the run directory ({hint})",
                code=ExitCode.USAGE,
            )


_USAGE_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.EEXIST,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EROFS,
    }
)
_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def os_error(exc: OSError) -> CliError:
    """What the environment refused, as a message naming the file, a hint and an exit code.

    A path the user gave that cannot be used (missing, not a directory, no permission) is a
    usage error (2); a full disk or a failing device is infrastructure (3).
    """
    where = exc.filename if exc.filename is not None else None
    what = exc.strerror or type(exc).__name__
    message = f"{what}: `{where}`" if where is not None else f"{what} ({exc})"
    if exc.errno in _SPACE_ERRNOS:
        return CliError(
            message,
            hint="free some space (or raise the quota) there, or point tile elsewhere "
            "(`--output-dir`, `TILE_CACHE_DIR`), then rerun",
            code=ExitCode.INFRA,
        )
    if exc.errno in _USAGE_ERRNOS:
        return CliError(
            message,
            hint="check the path and its permissions, or choose another location",
            code=ExitCode.USAGE,
        )
    return CliError(message, hint="check the file system, then rerun", code=ExitCode.INFRA)


_NAMED_WRONG: Final[dict[tp.UsageErrorType, str]] = {
    "UnknownAxis": "override one of those axes (`-a dtype=float32`), or select kernels that have "
    "it (`--kernel NAME`); `tile list` shows every case id with its axes",
    "UnknownTunable": "override a tunable the selected kernels declare (named above; "
    "`KERNEL:NAME=VALUE` for one of them), or select a kernel that has it (`--kernel NAME`)",
    "TunableValue": "give one of the values named above (`tile list` shows each kernel's), or "
    "`--tunable KERNEL:NAME=VALUE` to set one kernel's where several share the name",
    "CaptureImport": "write `--from MODULE:FUNCTION` with MODULE importable from the project's "
    "root (or `[project] paths`); `python -c 'import MODULE'` there shows the whole traceback",
    "CaptureTrace": "FUNCTION() must return `(fn, args)`: the program and example inputs "
    "(arrays or `jax.ShapeDtypeStruct`s); run it by itself to see the whole traceback",
    "CaptureNone": "call `@tile.kernel` functions or tile-std's kernels in the program, with "
    "the module that registers them in `[project] modules` or imported by the program",
}
"""The hint for a flag that names what no selected kernel has; the runner's message says which."""


def usage_failure(failures: Sequence[tp.Failure], *, planned: int | None = None) -> CliError | None:
    """One usage error (exit 2) for a selection the runner refused, however many kernels
    refused it (the runner then planned no case); None when there is no such failure.
    With `planned` 0, `--case` ids of which none is a case are one too (docs/cli.md: filters
    that select no case are a usage error), not a failure of the run."""
    unknown = [f for f in failures if f.error_type == "UnknownCase"]
    if planned == 0 and unknown and len(unknown) == len(failures):
        more = f" (and {len(unknown) - 1} other `--case` id(s))" if len(unknown) > 1 else ""
        return CliError(unknown[0].message + more, code=ExitCode.USAGE,
                        hint="`tile list` prints every case id; pass one of them to `--case`")  # fmt: skip
    for error_type, hint in _NAMED_WRONG.items():
        named = next((f for f in failures if f.error_type == error_type), None)
        if named is not None:
            return CliError(named.message, hint=hint, code=ExitCode.USAGE)
    bad = [f for f in failures if f.error_type == "AxisValueError"]
    if not bad:
        return None
    kernels = len(bad)
    more = f" (and {kernels - 1} other kernel{'s' * (kernels > 2)})" if kernels > 1 else ""
    return CliError(
        f"bad `-a` value: {bad[0].message}{more}",
        hint="write the value as the case ids show it (`tile list`), e.g. `-a shape=256x1024` "
        "or `-a dtype=bfloat16`; several values are separated by commas",
        code=ExitCode.USAGE,
    )
