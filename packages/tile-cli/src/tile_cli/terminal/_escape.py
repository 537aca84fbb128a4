"""Control characters in what tile prints (case ids, messages) are shown escaped, not obeyed.

Case ids, kernel names and messages come from user code and from the runner: a kernel named
`"x\\x1b]0;pwned\\x07"` would otherwise retitle the terminal, clear it or hide text when tile
prints its id. Rich drops a few control codes (BEL, CR) but passes ESC through, so every
console tile makes gets a render hook that escapes C0 and C1 control characters in text
(newlines and tabs stay); the styles rich emits itself are control segments and untouched.

The same hook hides secrets: a kernel's exception message or a runner's stderr tail that
quotes `GITHUB_TOKEN`'s value shows `<redacted>` on the console, as it does in the run
directory. The secrets are those of the environment and the command line, and whatever a
run adds (`hide_on_console`: its `[runner] env` and tile.toml's secret-named keys).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tile_harness import CONTROLS, escape_controls

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

    import tile_artifacts as ta
    from tile_config import ResolvedConfig

__all__ = ["escape_controls", "hide_config_secrets", "hide_on_console", "install_escaping"]

_hidden: list[ta.Redactor] = []  # the process's one redactor, once made


def _redactor() -> ta.Redactor:
    if not _hidden:
        import tile_artifacts as ta

        _hidden.append(ta.Redactor.for_run(environ=os.environ, argv=sys.argv))
    return _hidden[0]


def hide_on_console(redactor: ta.Redactor) -> None:
    """Hide these secrets too in everything the consoles print from now on."""
    _hidden[:] = [_redactor() | redactor]


def hide_config_secrets(resolved: ResolvedConfig) -> None:
    """Hide the configuration's secrets on the consoles: `[runner] env`'s secret-named values
    and those under secret-named keys of tile.toml."""
    import tile_artifacts as ta

    config = resolved.config.runner.env
    hide_on_console(ta.Redactor.for_run(environ={}, settings=config, config_text=resolved.raw_text))


def _clean(text: str) -> str:
    text = _redactor().text(text)
    return escape_controls(text) if CONTROLS.search(text) else text


class _Escaped:
    """Renders another renderable and escapes control characters in its text segments."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        for segment in console.render(self.inner, options):
            text, style, control = segment
            clean = _clean(text) if control is None else text
            yield segment if clean == text else Segment(clean, style)


class _EscapeHook:
    """A rich render hook (`Console.push_render_hook`) wrapping everything printed."""

    def process_renderables(self, renderables: Sequence[RenderableType]) -> list[RenderableType]:
        return [_Escaped(r) for r in renderables]


def install_escaping(consoles: Iterable[Console]) -> None:
    """Escape control characters in everything these consoles print from now on."""
    for console in consoles:
        console.push_render_hook(_EscapeHook())  # pyright: ignore[reportArgumentType]
