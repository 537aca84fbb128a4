"""A large document as JSON in pieces, so that writing it never holds its whole text.

`model_dump_json` of a 10,000-case report makes a 57 MB string (and pydantic's own buffer of
it, then the encoded bytes): about five times the file in memory at once, which was most of a
large run's peak. Here the document's long top-level lists (`cases`, `metrics`) are written
one item at a time, each item dumped and redacted on its own; the bytes are the same as
`model_dump_json(indent=2)`'s (a test holds them equal), so readers see no difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pydantic import BaseModel

__all__ = ["LONG_LIST", "json_pieces"]

LONG_LIST = 64
"""A top-level list with more items than this is written item by item."""

_INDENT = "    "  # an item of a top-level list sits two levels deep at indent=2


def _long_lists(model: BaseModel) -> list[str]:
    """The top-level fields that are lists of models longer than LONG_LIST, in order."""
    long: list[str] = []
    for name in type(model).model_fields:
        value: object = getattr(model, name)
        if isinstance(value, list) and len(value) > LONG_LIST:  # pyright: ignore[reportUnknownArgumentType]
            items: list[object] = value  # pyright: ignore[reportUnknownVariableType]
            if all(isinstance(item, BaseModel) for item in items):
                long.append(name)
    return long


def json_pieces(model: BaseModel, redact: Callable[[str], str]) -> Iterator[str]:
    """The text of `model_dump_json(indent=2)` plus a final newline, in pieces of at most
    one list item each; `redact` is applied to each piece's JSON before it is indented."""
    long = _long_lists(model)
    skeleton = ""
    if long:
        skeleton = redact(
            model.model_copy(update={key: [] for key in long}).model_dump_json(indent=2)
        )
    # A real newline never occurs inside a JSON string and only top-level keys are indented
    # by two spaces, so each marker is found once; if not (a field serialized under another
    # name), the document is written whole.
    markers = [f'\n  "{name}": []' for name in long]
    at = [skeleton.find(marker) for marker in markers]
    if not long or -1 in at or at != sorted(at) or any(skeleton.count(m) != 1 for m in markers):
        yield redact(model.model_dump_json(indent=2)) + "\n"
        return
    for name, marker in zip(long, markers, strict=True):
        head, _, skeleton = skeleton.partition(marker)
        yield head + f'\n  "{name}": ['
        items: list[BaseModel] = getattr(model, name)
        for i, item in enumerate(items):
            text = redact(item.model_dump_json(indent=2)).replace("\n", "\n" + _INDENT)
            yield ("\n" if i == 0 else ",\n") + _INDENT + text
        yield "\n  ]"
    yield skeleton + "\n"
