"""Entry point of the `tile` command: one place that turns errors into messages and exit codes."""

from __future__ import annotations

import os
import signal
import sys
import traceback

__all__ = ["main"]


class _Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives, so cleanup code runs."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def main(argv: list[str] | None = None) -> None:
    """Run `tile`; never let a traceback reach the user unless `-vv` asked for it."""
    from tile_cli._app import app
    from tile_cli._errors import CliError, ExitCode

    args = _compose_profiles(sys.argv[1:] if argv is None else argv)
    debug = "-vv" in args or "-vvv" in args or os.environ.get("TILE_DEBUG") == "1"
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        code = app(args=args, prog_name="tile", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        sys.exit(code)
    except CliError as exc:
        _print_error(exc.message, exc.hint)
        if debug:
            traceback.print_exc()
        sys.exit(int(exc.code))
    except KeyboardInterrupt:
        _print_error("interrupted", None)
        sys.exit(int(ExitCode.INTERRUPTED))
    except _Terminated:
        _print_error("terminated by SIGTERM", None)
        sys.exit(int(ExitCode.TERMINATED))
    except Exception as exc:  # the last line of defence: no bare tracebacks
        import typer

        if isinstance(exc, typer.Exit):
            sys.exit(exc.exit_code)
        if isinstance(exc, typer.Abort):
            sys.exit(int(ExitCode.INTERRUPTED))
        show = getattr(exc, "show", None)
        if callable(show):  # click's usage errors (bad flag, missing argument)
            show()
            sys.exit(int(getattr(exc, "exit_code", ExitCode.USAGE)))
        _print_error(
            f"internal error: {type(exc).__name__}: {exc}",
            "rerun with -vv for the traceback and report it",
        )
        if debug:
            traceback.print_exc()
        sys.exit(int(ExitCode.INFRA))
    sys.exit(code if isinstance(code, int) else 0)


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
    color = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    red, bold, reset = ("\x1b[31m", "\x1b[1m", "\x1b[0m") if color else ("", "", "")
    print(f"{red}{bold}error{reset}: {message}", file=sys.stderr)
    if hint:
        print(f"{bold}hint{reset}: {hint}", file=sys.stderr)


if __name__ == "__main__":
    main()
