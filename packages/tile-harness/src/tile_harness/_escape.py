"""Control characters in what tile says (case ids, messages) are written escaped, not obeyed.

Case ids, kernel names and messages come from user code and from the runner: a kernel named
`"x\\x1b]0;pwned\\x07"` would otherwise retitle the terminal, clear it or hide text when its
id is printed. Every line tile writes for a person passes through `escape_controls`.
"""

from __future__ import annotations

import re

__all__ = ["CONTROLS", "escape_controls"]

CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 and C1 control characters other than newline and tab."""


def _escaped(match: re.Match[str]) -> str:
    return ascii(match.group())[1:-1]  # "\x1b", "\x7f", "\x9b": how Python writes them


def escape_controls(text: str) -> str:
    """`text` with control characters other than newline and tab written as `\\xNN`."""
    return CONTROLS.sub(_escaped, text)
