"""The state a `RunnerSession` keeps across its runners (tile_harness/_session.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import tile_protocol as tp

__all__ = ["RunState"]


@dataclass
class RunState:
    """What a session knows of its runners so far: the plan, the cases finished, how the
    current runner speaks and how the last one ended."""

    plan: list[str] | None = None
    finished: set[str] = field(default_factory=set[str])
    done_seen: bool = False
    hello_seen: bool = False
    minor: int = tp.PROTOCOL_MINOR
    """The protocol minor version the current runner speaks (from its hello)."""
    restart: str | None = None
    """Why the current runner ended before its remaining cases (`Done.restart`)."""
    ahead: bool = False
    """The runner makes cases ready ahead of their turn: it said a batch's step (`progress`)."""
    ended: str | None = None
    """How the last runner ended when no case was to blame (said in the not-run failures)."""
    seen: set[tuple[str, str, str]] = field(default_factory=set[tuple[str, str, str]])
    noise: str | None = None
    """The current runner's first stdout line before `hello` that was not tile protocol."""
