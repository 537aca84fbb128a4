"""Entry point of the `tile` command: one place that turns errors into messages and exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Run `tile`; never let a traceback reach the user unless `-vv` asked for it."""
    from tile_harness import signals

    # First, so that a Ctrl-C while the rest imports is an "interrupted", not a traceback.
    signals.install()
    try:
        _tolerant_streams()
        args = _compose_profiles(sys.argv[1:] if argv is None else argv)
        debug = "-vv" in args or "-vvv" in args or os.environ.get("TILE_DEBUG") == "1"
        bad = next((arg for arg in args if not _utf8(arg)), None)
        if bad is not None:
            _print_error(
                f"argument `{bad.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')}`"
                " is not valid UTF-8: tile records its arguments in JSON, which holds text only",
                "retype it (or rename the file) in UTF-8",
            )
            code = 2  # ExitCode.USAGE, before anything is created
        else:
            code = _run(args, debug)
    except KeyboardInterrupt:
        _print_error("interrupted", None)
        code = 130  # ExitCode.INTERRUPTED, without importing more while signals arrive
    except signals.Terminated:
        _print_error("terminated by SIGTERM", None)
        code = 143  # ExitCode.TERMINATED
    sys.exit(code)


def _utf8(arg: str) -> bool:
    """Whether a command-line argument was valid UTF-8 (Python keeps invalid bytes as lone
    surrogates, which no JSON file, table or path of a run can hold)."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _run(args: list[str], debug: bool) -> int:
    """The command's exit code; every error becomes a message (and a code) here."""
    from tile_harness import CliError, os_error

    try:
        from tile_cli._app import app

        code = app(args=args, prog_name="tile", standalone_mode=False)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except CliError as exc:
        _print_error(exc.message, exc.hint)
        if debug:
            traceback.print_exc()
        return int(exc.code)
    except OSError as exc:  # the environment refused something: a full disk, a bad path
        error = os_error(exc)
        _print_error(error.message, error.hint)
        if debug:
            traceback.print_exc()
        return int(error.code)
    except Exception as exc:  # the last line of defence: no bare tracebacks
        return _unexpected(exc, debug)
    return code if isinstance(code, int) else 0


def _unexpected(exc: Exception, debug: bool) -> int:
    """The exit code of an exception no tile code raised on purpose: typer's and click's own
    exits and usage errors keep their meaning; anything else is an internal error."""
    import typer

    from tile_harness import ExitCode

    if isinstance(exc, typer.Exit):
        return exc.exit_code
    if isinstance(exc, typer.Abort):
        return int(ExitCode.INTERRUPTED)
    show = getattr(exc, "show", None)
    if callable(show):  # click's usage errors (bad flag, missing argument)
        show()
        return int(getattr(exc, "exit_code", ExitCode.USAGE))
    _print_error(
        f"internal error: {type(exc).__name__}: {exc}",
        "rerun with -vv for the traceback and report it",
    )
    if debug:
        traceback.print_exc()
    return int(ExitCode.INFRA)


def _tolerant_streams() -> None:
    """Characters the terminal's encoding lacks (`PYTHONIOENCODING=ascii`, a C locale) are
    written as escapes instead of ending the command in a UnicodeEncodeError: tables use ✓."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            with contextlib.suppress(ValueError, OSError):  # a closed or odd stream: leave it
                reconfigure(errors="backslashreplace")


def _compose_profiles(args: list[str]) -> list[str]:
    """`--profile ci --profile h200` as one `--profile ci,h200`, where the first one was.

    Click keeps only the last value of an option given twice, which silently dropped every
    profile but one; repeating `--profile` means laying the profiles on in order.
    """
    out: list[str] = []
    names: list[str] = []
    slot: int | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out += args[i:]
            break
        if arg == "--profile" and i + 1 < len(args):
            names.append(args[i + 1])
            i += 2
        elif arg.startswith("--profile="):
            names.append(arg.partition("=")[2])
            i += 1
        else:
            out.append(arg)
            i += 1
            continue
        if slot is None:
            slot = len(out)
            out += ["--profile", ""]
    if slot is not None:
        out[slot + 1] = ",".join(names)
    return out


def _print_error(message: str, hint: str | None) -> None:
    from tile_cli.terminal._escape import escape_controls

    color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    red, bold, reset = ("\x1b[31m", "\x1b[1m", "\x1b[0m") if color else ("", "", "")
    print(f"{red}{bold}error{reset}: {escape_controls(message)}", file=sys.stderr)
    if hint:
        print(f"{bold}hint{reset}: {escape_controls(hint)}", file=sys.stderr)


if __name__ == "__main__":
    main()
