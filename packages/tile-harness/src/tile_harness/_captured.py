"""Cases from a program (`--from MODULE:FUNCTION`) and the cases file (`--save-cases`,
`--cases`): the one door bench, test, tune and list go through to run them.

A runner traces the program and lists the kernel calls it makes as captured cases (protocol
1.18, `RunRequest.capture`); the host keeps them as `CaseSpec`s, writes them to a file when
asked, and hands them to every later runner of the command (`RunRequest.cases`), so that the
program is traced once per command. The file (docs/tuning.md, "Real shapes"):

    {"schema_name": "tile.cases", "schema_version": 1,
     "cases": [{"kernel": "std/rmsnorm", "params": {"shape": "8x32", "dtype": "float32"},
                "captured": "mymodel:example"}]}
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

import tile_protocol as tp
from tile_harness._errors import CliError, ExitCode, usage_failure
from tile_harness._settings import Selection

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = [
    "CAPTURE_MINOR",
    "CASES_FORMAT",
    "CasesFile",
    "capture_cases",
    "load_cases",
    "save_cases",
    "with_cases",
]

CASES_FORMAT = "tile.cases"
"""The `schema_name` of a cases file, so that another JSON file given by mistake (a tuning
file: `tile.tuning`) is refused."""


CAPTURE_MINOR = 18
"""The protocol minor that added `RunRequest.capture` and `RunRequest.cases`."""


class CasesFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A cases file: the cases, each its kernel, axis values and where it was captured."""

    schema_name: str = CASES_FORMAT
    schema_version: int = 1
    cases: list[tp.CaseSpec] = []


def with_cases(resolved: ResolvedConfig, sel: Selection, say: Callable[[str], None]) -> Selection:
    """`sel` with its `cases` filled: captured from `--from` (and saved to `--save-cases`),
    or read from `--cases`; `sel` itself when it names neither. CliError (exit 2) for a
    program that cannot be imported or traced or calls no kernel, or a file that cannot be
    read; nothing is measured before."""
    if sel.capture is not None and sel.cases_file is not None:
        raise CliError(
            "`--from` and `--cases` both name the cases to run",
            hint="give one: `--from MODULE:FUNCTION` to capture them, `--cases FILE` to reuse "
            "a capture saved with `--save-cases`",
        )
    if sel.capture is not None:
        specs = capture_cases(resolved, sel, sel.capture, say)
        kernels = len({s.kernel for s in specs})
        say(f"{len(specs)} cases of {kernels} kernels captured from {sel.capture}")
        if sel.save_cases is not None:
            save_cases(sel.save_cases, specs)
            say(f"captured cases saved to {sel.save_cases}")
        return dataclasses.replace(sel, cases=specs, capture=None)
    if sel.save_cases is not None:
        raise CliError(
            "`--save-cases` saves what `--from` captures, and no `--from` was given",
            hint="add `--from MODULE:FUNCTION`",
        )
    if sel.cases_file is not None:
        specs = load_cases(sel.cases_file)
        say(f"{len(specs)} cases from {sel.cases_file}")
        return dataclasses.replace(sel, cases=specs)
    if sel.cases is None and (named := resolved.config.bench.cases) is not None:
        return dataclasses.replace(sel, cases=_project_cases(resolved, named, say))
    return sel


def _project_cases(
    resolved: ResolvedConfig, named: str, say: Callable[[str], None]
) -> list[tp.CaseSpec]:
    """The cases of `[bench] cases`, its path relative to tile.toml; CliError (exit 2) naming
    the key and where it was set when the file cannot be read or is not a cases file."""
    path = resolved.resolve_path(named)
    try:
        specs = load_cases(path)
    except CliError as exc:
        origin = resolved.origins.get("bench.cases")
        where = f" (set in {origin})" if origin is not None else ""
        fix = origin.hint if origin is not None else "fix the key in tile.toml"
        raise CliError(
            f"`[bench] cases`{where}: {exc.message}",
            hint=f"{fix}: name a file written by `--save-cases`, relative to tile.toml; or "
            "pass `--from MODULE:FUNCTION` or `--cases FILE` instead",
            code=ExitCode.USAGE,
        ) from None
    say(f"{len(specs)} cases from {path} (`[bench] cases`)")
    return specs


def capture_cases(
    resolved: ResolvedConfig, sel: Selection, target: str, say: Callable[[str], None]
) -> list[tp.CaseSpec]:
    """Ask a runner to trace `target` and list the kernel calls it makes, as case specs."""
    from tile_harness._ask import ask

    listing = dataclasses.replace(sel, modes=(), case_ids=None, cases=None)
    answer, clean = ask("list", resolved, listing, capture=target)
    refused = usage_failure(answer.failures)
    if refused is not None:
        raise refused
    for warning in answer.warnings:
        say(f"warning: {warning.message}")
    minor = answer.hello.protocol_minor if answer.hello is not None else CAPTURE_MINOR
    if minor < CAPTURE_MINOR:
        raise CliError(
            f"`--from {target}`: the runner speaks protocol 1.{minor}, which cannot capture "
            f"a program (1.{CAPTURE_MINOR} can)",
            hint="install the same tile-runner as the `tile` command's where the runner runs "
            "(`[runner] python`)",
        )
    if answer.failures or not clean or answer.plan is None:
        why = "; ".join(f"{f.phase}: {f.message}" for f in answer.failures) or "the runner died"
        raise CliError(
            f"`--from {target}`: the runner could not list the captured cases: {why}",
            hint="run `tile list --from ...` to see what loads, and fix `[project]`",
            code=ExitCode.INFRA,
        )
    specs = [
        tp.CaseSpec(kernel=c.kernel, params=dict(c.params), captured=c.captured)
        for c in answer.cases
        if c.captured is not None
    ]
    if not specs:
        raise CliError(
            f"`--from {target}`: the program's kernel calls are all outside the selection",
            hint="widen `-k`/`--kernel`, or drop them to take every captured call",
        )
    return specs


def save_cases(path: Path, specs: Sequence[tp.CaseSpec]) -> None:
    """Write `specs` to `path` as a cases file (sorted keys, one case per line)."""
    lines = [msgspec.json.encode(s, order="sorted").decode() for s in specs]
    body = ",\n    ".join(lines)
    head = f'{{"schema_name": "{CASES_FORMAT}", "schema_version": 1, "cases": ['
    text = f"{head}\n    {body}\n]}}\n" if lines else f"{head}]}}\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(
            f"cannot write the cases file {path}: {exc.strerror or exc}",
            hint="choose a path you can write to (`--save-cases FILE`)",
        ) from None


def load_cases(path: Path) -> list[tp.CaseSpec]:
    """The cases a cases file lists; CliError (exit 2) naming the file when it cannot be read."""
    hint = "give a file written by `--save-cases` (docs/tuning.md shows the format)"
    try:
        data = _read_regular(path)
    except OSError as exc:
        raise CliError(
            f"cannot read the cases file {path}: {exc.strerror or exc}", hint=hint
        ) from None
    try:
        parsed = msgspec.json.decode(data, type=CasesFile)
    except msgspec.DecodeError as exc:
        raise CliError(f"the cases file {path} is not valid: {exc}", hint=hint) from None
    if parsed.schema_name != CASES_FORMAT or parsed.schema_version != 1:
        raise CliError(
            f"the cases file {path} is `{parsed.schema_name}` version {parsed.schema_version}, "
            f"not `{CASES_FORMAT}` version 1",
            hint=hint,
        )
    if not parsed.cases:
        raise CliError(f"the cases file {path} lists no case", hint=hint)
    return list(parsed.cases)


def _read_regular(path: Path) -> bytes:
    """A regular file's bytes. A named pipe or a device is refused: reading a FIFO nobody
    writes blocked `tile bench --cases FIFO` forever. Opened without blocking, judged by
    `fstat` of what was opened."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(0, "not a regular file (a named pipe or a device)")
        return f.read()
