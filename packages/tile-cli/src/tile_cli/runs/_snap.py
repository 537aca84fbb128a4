"""`tile snap`: normalized StableHLO per case under `snapshots/`, checked like a golden file."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import tile_protocol as tp
from tile_cli.terminal._escape import hide_config_secrets
from tile_cli.terminal._render import display_path, print_failures
from tile_cli.terminal._ui import make_consoles
from tile_harness import (
    CliError,
    ExitCode,
    Selection,
    ask,
    no_cases,
    no_match,
    resolve_config,
    split_failures,
    undone_lines,
)

if TYPE_CHECKING:
    from rich.console import Console

    import tile_protocol as tp

__all__ = ["SnapMode", "normalize_stablehlo", "render_snapshot", "snap", "snapshot_case_id"]

SnapMode = Literal["record", "check", "update"]

SUFFIX = ".mlir"
_HEADER = re.compile(r"^// tile snapshot of `(?P<case>.*)`")

_LOC_DEFINITION = re.compile(r"^\s*#loc[\w.$-]*\s*=")
_STRING = r'"(?:[^"\\]|\\.)*"'
# Names of arguments and results as Python spelled them: renaming a parameter changes no code.
_DEBUG_ATTR = rf"jax\.(?:result_info|arg_info)\s*=\s*{_STRING}"
_DEBUG_ATTRS = (
    re.compile(rf",\s*{_DEBUG_ATTR}(?=\s*\}})"),  # last entry of a dictionary
    re.compile(rf"{_DEBUG_ATTR}\s*,\s*"),  # an entry followed by others
    re.compile(_DEBUG_ATTR),  # the only entry
)
_EMPTY_ATTRS = re.compile(r"(?<=>)\s*\{\s*\}")
_MODULE = re.compile(r"^(\s*module @[\w$-]+?)(?:[_.]\d+)+(?=[\s{]|$)")
_CALLBACK = re.compile(r"custom_call @\S*callback")
_CALLBACK_NOISE = (
    # Host callbacks are numbered per process and, in older jax, named by their address.
    (re.compile(r"\bindex = \d+ : ui64"), "index = N : ui64"),
    (re.compile(r'backend_config = "\d+"'), 'backend_config = "N"'),
)


def _string_end(line: str, start: int) -> int:
    """Index just past the string literal that opens at `start`."""
    i = start + 1
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == '"':
            return i + 1
        i += 1
    return len(line)


def _paren_end(line: str, start: int) -> int:
    """Index just past the parenthesis matching the one at `start` (strings skipped)."""
    depth = 0
    i = start
    while i < len(line):
        c = line[i]
        if c == '"':
            i = _string_end(line, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(line)


def _strip_locations(line: str) -> str:
    """Remove every `loc(...)` outside string literals, with the space before it."""
    out: list[str] = []
    i = 0
    while i < len(line):
        c = line[i]
        if c == '"':
            end = _string_end(line, i)
            out.append(line[i:end])
            i = end
            continue
        if line.startswith("loc(", i) and (
            i == 0 or not (line[i - 1].isalnum() or line[i - 1] in "_.$#@%")
        ):
            while out and out[-1].isspace():
                out.pop()
            i = _paren_end(line, i + 3)
            continue
        out.append(c)
        i += 1
    return "".join(out)


def normalize_stablehlo(text: str) -> str:
    """StableHLO with what varies between runs and machines removed.

    Gone: source locations (`loc(...)`, `#loc` definitions: file paths and line numbers),
    argument/result debug names (`jax.arg_info`, `jax.result_info`), numeric suffixes of the
    module name, host-callback numbering, trailing spaces and blank lines at the end.
    """
    lines: list[str] = []
    for raw in text.splitlines():
        if _LOC_DEFINITION.match(raw):
            continue
        line = _strip_locations(raw) if "loc(" in raw else raw
        if "jax." in line:
            for pattern in _DEBUG_ATTRS:
                line = pattern.sub("", line)
            line = _EMPTY_ATTRS.sub("", line)
        line = _MODULE.sub(r"\1", line)
        if _CALLBACK.search(line):
            for pattern, replacement in _CALLBACK_NOISE:
                line = pattern.sub(replacement, line)
        lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def render_snapshot(case_id: str, stablehlo: str, *, backend: str | None = None) -> str:
    """One snapshot file: a header naming the case and backend, then normalized StableHLO."""
    # The backend is in the header because lowering depends on it (Pallas above all): a
    # snapshot checked on another backend then shows why it differs in its first diff line.
    return (
        f"// tile snapshot of `{case_id}`: normalized StableHLO (no locations or debug names)\n"
        f"// backend: {backend or 'unknown'}; `tile snap --check` compares, "
        "`tile snap --update` rewrites\n" + normalize_stablehlo(stablehlo)
    )


def snapshot_case_id(path: Path) -> str | None:
    """The case a snapshot file belongs to, from its header; None when unreadable."""
    try:
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
    except (OSError, UnicodeDecodeError):
        return None
    match = _HEADER.match(first)
    return match.group("case") if match else None


@dataclass
class _Outcome:
    same: list[str] = field(default_factory=list[str])
    changed: list[tuple[str, Path, str, str]] = field(
        default_factory=list[tuple[str, Path, str, str]]
    )
    new: list[tuple[str, Path, str]] = field(default_factory=list[tuple[str, Path, str]])
    stale: list[Path] = field(default_factory=list[Path])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _print_diff(out: Console, old: str, new: str, path: Path) -> None:
    name = display_path(path)
    diff = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    styles = {"+": "green", "-": "red", "@": "cyan"}
    for line in diff:
        text = line if line.endswith("\n") else line + "\n"
        style = None if line.startswith(("+++", "---")) else styles.get(line[:1])
        out.print(text, end="", markup=False, style=style, highlight=False, soft_wrap=True)


def snap(sel: Selection, *, profile: str | None, mode: SnapMode, directory: Path | None) -> int:
    """Record, check or update the StableHLO snapshots of every selected case."""
    out, err = make_consoles()
    resolved = resolve_config(profile, sel.overrides)
    hide_config_secrets(resolved)
    root = resolved.project_root or Path.cwd()
    snap_dir = (directory if directory is not None else root / "snapshots").absolute()
    answer, clean = ask("inspect", resolved, sel, inspect_kind="stablehlo")
    planned = answer.case_ids
    texts = {v.case_id: v.text for v in answer.views if v.kind == "stablehlo"}
    broken, other = split_failures(answer.failures)
    if not planned and clean and not answer.failures:
        raise no_match(resolved, sel) if sel.filters or sel.kernels else no_cases(filtered=False)

    result = _Outcome()
    for case_id in planned:
        if case_id not in texts:
            continue
        path = snap_dir / (tp.case_dirname(case_id) + SUFFIX)
        current = render_snapshot(case_id, texts[case_id], backend=answer.backend)
        try:
            before = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read snapshot `{path}`: {exc}", code=ExitCode.USAGE) from None
        if before is None:
            result.new.append((case_id, path, current))
        elif before == current:
            result.same.append(case_id)
        else:
            result.changed.append((case_id, path, before, current))
    # Stale files are knowable only when every kernel was discovered and selected.
    whole = not (sel.filters or sel.kernels or sel.axes or sel.case_ids)
    if whole and not any(f.case_id is None for f in answer.failures) and snap_dir.is_dir():
        expected = {tp.case_dirname(c) + SUFFIX for c in planned}
        result.stale = sorted(p for p in snap_dir.glob(f"*{SUFFIX}") if p.name not in expected)

    _apply(out, err, result, mode)
    print_failures(err, [*broken, *other])
    err.print(_summary(mode, len(planned), result, len(broken)), markup=False)
    unseen = _undone(err, planned, texts, answer.failures)
    differs = (
        bool(result.changed)
        if mode == "record"
        else mode == "check" and bool(result.changed or result.new or result.stale)
    )
    if differs:
        err.print("hint: if the new lowering is intended, run `tile snap --update`", markup=False)
    if other or unseen or not clean:
        return int(ExitCode.INFRA)
    if broken or differs:
        return int(ExitCode.FAILED)
    return int(ExitCode.OK)


def _undone(
    err: Console, planned: list[str], texts: dict[str, str], failures: list[tp.Failure]
) -> list[str]:
    """Say which planned cases were left undone; a case with neither a lowering nor a failure
    is one of them (never counted as unchanged)."""
    told = {f.case_id for f in failures}
    unseen = [c for c in planned if c not in texts and c not in told]
    lines = undone_lines(len(planned), failures)
    if unseen:
        lines.insert(0, f"error: {len(unseen)} of {len(planned)} planned cases got no StableHLO "
                     f"from the runner (first `{unseen[0]}`)")  # fmt: skip
    for line in lines:
        err.print(line, markup=False)
    return unseen


def _apply(out: Console, err: Console, result: _Outcome, mode: SnapMode) -> None:
    """Show diffs; write and delete what the mode allows."""
    for case_id, path, before, current in result.changed:
        if mode == "update":
            _write(path, current)
            err.print(f"updated {display_path(path)} ({case_id})", markup=False)
        else:
            _print_diff(out, before, current, path)
    for case_id, path, current in result.new:
        if mode == "check":
            err.print(f"missing snapshot {display_path(path)} ({case_id})", markup=False)
        else:
            _write(path, current)
            err.print(f"new snapshot {display_path(path)} ({case_id})", markup=False)
    for path in result.stale:
        owner = snapshot_case_id(path)
        about = f" (case `{owner}` no longer exists)" if owner else ""
        if mode == "update":
            path.unlink(missing_ok=True)
            err.print(f"removed stale snapshot {display_path(path)}{about}", markup=False)
        else:
            err.print(f"stale snapshot {display_path(path)}{about}", markup=False)


def _summary(mode: SnapMode, total: int, result: _Outcome, broken: int) -> str:
    parts = [f"{total} cases", f"{len(result.same)} unchanged"]
    for label, items in (("changed", result.changed), ("new", result.new), ("stale", result.stale)):
        if items:
            parts.append(f"{len(items)} {label}")
    if broken:
        parts.append(f"{broken} failed to lower")
    flag = {"record": "", "check": " --check", "update": " --update"}[mode]
    return f"tile snap{flag}: " + ", ".join(parts)
