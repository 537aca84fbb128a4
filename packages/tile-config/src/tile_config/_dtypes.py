"""The dtype names tile knows without importing numpy: for `[test] tolerances` keys and the
`-a dtype=...` override, which are checked before any runner starts JAX."""

from __future__ import annotations

import difflib
from functools import partial

from pydantic import AfterValidator

__all__ = ["DTYPE_KEYS", "DTYPE_NAMES", "TOLERANCE_KEYS", "dtype_problem"]

DTYPE_NAMES: frozenset[str] = frozenset(
    {
        "bool",
        *(f"int{bits}" for bits in (2, 4, 8, 16, 32, 64)),
        *(f"uint{bits}" for bits in (2, 4, 8, 16, 32, 64)),
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
        # ml_dtypes' narrow floats, as JAX names them
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3b11fnuz",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float4_e2m1fn",
    }
)
"""Every dtype name JAX accepts as a string (`jnp.dtype(name)`), as tile writes them."""


def dtype_problem(name: str) -> str | None:
    """Why `name` is not a dtype name (with the nearest one as a suggestion), or None."""
    if name in DTYPE_NAMES:
        return None
    close = difflib.get_close_matches(name, sorted(DTYPE_NAMES), n=1)
    guess = f" (did you mean `{close[0]}`?)" if close else ""
    return f"`{name}` is not a dtype name{guess}"


def _dtype_keys(table: dict[str, float], allowed: frozenset[str] = frozenset()) -> dict[str, float]:
    # An unknown key would be accepted and never used: a typo silently keeps the default.
    for name in table.keys() - allowed:
        if (problem := dtype_problem(name)) is not None:
            also = "".join(f" or `{a}`" for a in sorted(allowed))
            raise ValueError(f"{problem}; use dtype names such as `float32`{also}")
    return table


DTYPE_KEYS = AfterValidator(_dtype_keys)
"""A table keyed by dtype name (`[machine] peak_tflops`): any other key is an error."""
TOLERANCE_KEYS = AfterValidator(partial(_dtype_keys, allowed=frozenset({"default"})))
"""`[test] tolerances`: dtype names, or `default` for every dtype."""
