"""Case records held for a whole run, made smaller: one set of field names per shape.

pydantic gives every model instance its own `__pydantic_fields_set__`, a set of the names
given to it: a case record is nine models, and their sets (728 bytes each past four names)
are more than half of its 8.8 KB. A run keeps every finished case's record to the end, so at
10,000 cases those sets alone were about 50 MB of the CLI's memory. Records of one shape
have equal sets; here each model of a record is given the one shared set of its class and
names. The records are frozen, so nothing adds to a set in place (`model_copy` copies it
first), and what they serialize to does not change.
"""

from __future__ import annotations

from tile_artifacts import ArtifactModel

__all__ = ["share_field_sets"]

_SHARED: dict[tuple[type[ArtifactModel], frozenset[str]], set[str]] = {}


def share_field_sets(model: ArtifactModel) -> None:
    """Give `model` and every record inside it the shared set of its field names (records
    are frozen: a model that can be assigned to would add names to its own set)."""
    names = model.__pydantic_fields_set__
    key = (type(model), frozenset(names))
    shared = _SHARED.setdefault(key, set(names))
    if shared is not names:
        object.__setattr__(model, "__pydantic_fields_set__", shared)
    for value in model.__dict__.values():
        _share_inside(value)


def _share_inside(value: object) -> None:
    if isinstance(value, ArtifactModel):
        share_field_sets(value)
    elif isinstance(value, list | tuple):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            _share_inside(item)  # pyright: ignore[reportUnknownArgumentType]
    elif isinstance(value, dict):
        for item in value.values():  # pyright: ignore[reportUnknownVariableType]
            _share_inside(item)  # pyright: ignore[reportUnknownArgumentType]
