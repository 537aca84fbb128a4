"""Control characters in what tile prints (case ids, messages) are shown escaped, not obeyed.

Case ids, kernel names and messages come from user code and from the runner: a kernel named
`"x\\x1b]0;pwned\\x07"` would otherwise retitle the terminal, clear it or hide text when tile
prints its id. Rich drops a few control codes (BEL, CR) but passes ESC through, so every
console tile makes gets a render hook that escapes C0 and C1 control characters in text
(newlines and tabs stay); the styles rich emits itself are control segments and untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tile_harness import CONTROLS, escape_controls

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

__all__ = ["escape_controls", "install_escaping"]


class _Escaped:
    """Renders another renderable and escapes control characters in its text segments."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        for segment in console.render(self.inner, options):
            text, style, control = segment
            if control is None and CONTROLS.search(text):
                yield Segment(escape_controls(text), style)
            else:
                yield segment


class _EscapeHook:
    """A rich render hook (`Console.push_render_hook`) wrapping everything printed."""

    def process_renderables(self, renderables: Sequence[RenderableType]) -> list[RenderableType]:
        return [_Escaped(r) for r in renderables]


def install_escaping(consoles: Iterable[Console]) -> None:
    """Escape control characters in everything these consoles print from now on."""
    for console in consoles:
        console.push_render_hook(_EscapeHook())  # pyright: ignore[reportArgumentType]
