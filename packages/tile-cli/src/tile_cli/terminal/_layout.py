"""Tables that fit the console's width without cutting a case id or a number.

rich shrinks a table that is too wide by cutting cells (`7… µs`, `mine/gelu[shap…`), which
makes the row that regressed impossible to name. Here a table that does not fit is folded
instead: its columns are split into several tables, each repeating the key column (the case
id) whole, and only prose columns (a reason) may wrap. When not even the key and one column
fit, each row is stacked: the key on a line of its own, then one `header: value` per line.
Piped output is written without the trailing spaces rich pads lines with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ["Column", "emit", "fit_tables", "refit"]

Cell = str | Text
WRAP_MIN = 24
"""Columns a wrapping column keeps at least (or its natural width, if smaller)."""


@dataclass(frozen=True)
class Column:
    """A column: its header, alignment, and whether its text may wrap (prose such as a reason)."""

    header: str
    justify: Literal["left", "right"] = "right"
    wrap: bool = False


def _text(cell: Cell) -> Text:
    # A plain string is data, never rich markup: `[shape=8x128]` is a case id, not a tag.
    return cell if isinstance(cell, Text) else Text(cell)


def _width(cell: Cell) -> int:
    text = cell if isinstance(cell, Text) else Text(cell)
    return max((Text(line).cell_len for line in text.plain.split("\n")), default=0)


def _natural(columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> list[int]:
    widths = [Text(c.header).cell_len for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], _width(cell))
    return widths


def _new_table(title: str | None, plain: bool) -> Table:
    # The title as text, styled as rich styles a title: a case id's `[n=512]` is not markup.
    return Table(
        title=None if title is None else Text(title, style="table.title"),
        title_justify="left",
        box=box.SIMPLE if plain else box.ROUNDED,
        header_style="bold",
    )


@lru_cache(maxsize=64)
def _overhead(count: int, plain: bool) -> int:
    """Columns a table of `count` columns spends on borders and padding."""
    table = _new_table(None, plain)
    for _ in range(count):
        table.add_column("x", no_wrap=True)
    measured = Console(width=10_000).measure(table).maximum
    return measured - count


def _needed(indices: Sequence[int], columns: Sequence[Column], natural: Sequence[int]) -> int:
    return sum(min(natural[i], WRAP_MIN) if columns[i].wrap else natural[i] for i in indices)


def _groups(
    columns: Sequence[Column], natural: Sequence[int], width: int, plain: bool, key: int
) -> list[list[int]] | None:
    """Column indices of each folded table (the key first in each); None when even the key and
    one other column do not fit, and rows must be stacked."""
    groups: list[list[int]] = []
    current = [key]
    for i in range(len(columns)):
        if i == key:
            continue
        trial = [*current, i]
        if _needed(trial, columns, natural) + _overhead(len(trial), plain) <= width:
            current = trial
        elif len(current) == 1:
            return None
        else:
            groups.append(current)
            current = [key, i]
            if _needed(current, columns, natural) + _overhead(2, plain) > width:
                return None
    groups.append(current)
    return groups


def _table(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    indices: Sequence[int],
    plain: bool,
) -> Table:
    table = _new_table(title, plain)
    for i in indices:
        col = columns[i]
        table.add_column(
            col.header,
            justify=col.justify,
            no_wrap=not col.wrap,
            overflow="fold" if col.wrap else "ellipsis",
        )
    for row in rows:
        table.add_row(*(_text(row[i]) for i in indices))
    return table


def _stacked(
    title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], key: int
) -> list[RenderableType]:
    """One block per row: the key whole on its own line (longer than the console if it must
    be: `emit` never wraps a Text marked no_wrap), then one `header: value` line per column."""
    blocks: list[RenderableType] = [Text(title, style="bold")] if title else []
    for row in rows:
        whole = _text(row[key]).copy()
        whole.no_wrap = True  # `emit` prints it unwrapped, however long
        blocks.append(whole)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for i, col in enumerate(columns):
            if i != key:
                grid.add_row(Text(f"  {col.header}:"), _text(row[i]))
        blocks.append(grid)
    return blocks


def fit_tables(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    *,
    width: int,
    plain: bool,
    key: int = 0,
) -> list[RenderableType]:
    """The table as one or more tables no wider than `width`, the key column never cut."""
    natural = _natural(columns, rows)
    groups = _groups(columns, natural, width, plain, key)
    if groups is None:
        return _stacked(title, columns, rows, key)
    tables: list[RenderableType] = []
    for n, indices in enumerate(groups):
        name = title if n == 0 else (f"{title} (continued)" if title else None)
        tables.append(_table(name, columns, rows, indices, plain))
    return tables


PROSE_HEADERS = frozenset({"reason", "error", "why", "message"})
"""Columns `refit` lets wrap: sentences, not values."""


def refit(table: Table, console: Console) -> list[RenderableType]:
    """An already built rich table, laid out again by `fit_tables` for the console's width:
    its first column is the key, columns headed like PROSE_HEADERS may wrap."""
    columns = [
        Column(
            str(col.header),
            "left" if col.justify == "left" else "right",
            wrap=i > 0 and str(col.header) in PROSE_HEADERS,
        )
        for i, col in enumerate(table.columns)
    ]
    cells = [list(col.cells) for col in table.columns]
    rows: list[list[Cell]] = []
    for r in range(table.row_count):
        row: list[Cell] = []
        for column in cells:
            cell = column[r]
            row.append(cell if isinstance(cell, str | Text) else str(cell))
        rows.append(row)
    found = table.title
    title = found.plain if isinstance(found, Text) else found if isinstance(found, str) else None
    plain = table.box is None or table.box in (box.SIMPLE, box.SIMPLE_HEAD)
    return fit_tables(title, columns, rows, width=console.width, plain=plain)


def _unwrapped(renderable: RenderableType) -> bool:
    return isinstance(renderable, Text) and bool(renderable.no_wrap)


def emit(console: Console, *renderables: RenderableType) -> None:
    """Print to the console; when it is not a terminal, without trailing spaces on any line."""
    if console.is_terminal:
        for renderable in renderables:
            console.print(renderable, soft_wrap=_unwrapped(renderable))
        return
    with console.capture() as capture:
        for renderable in renderables:
            console.print(renderable, soft_wrap=_unwrapped(renderable))
    text = "\n".join(line.rstrip() for line in capture.get().split("\n"))
    console.file.write(text)
    console.file.flush()
