"""`tile config`: the resolved configuration and the origin of every value."""

from __future__ import annotations

import json
from collections.abc import Mapping

from tile_cli.terminal._ui import make_consoles
from tile_harness import ExitCode, describe_origin, resolve_config

__all__ = ["show_config"]


def show_config(
    *, profile: str | None, as_json: bool, overrides: Mapping[str, object] | None = None
) -> int:
    """Print each dotted key, its value and where it came from (`overrides`: KEY=VALUE)."""
    from rich.table import Table

    from tile_config import flatten

    out, err = make_consoles()
    resolved = resolve_config(profile, overrides or {})
    values = {key: _shown(key, value) for key, value in flatten(resolved.config).items()}
    if as_json:
        doc = {
            "config_file": str(resolved.config_file) if resolved.config_file else None,
            "profiles": list(resolved.profiles),
            "values": {
                key: {"value": value, "origin": describe_origin(resolved.origins.get(key))}
                for key, value in values.items()
            },
        }
        print(json.dumps(doc, indent=2, default=str))
        return int(ExitCode.OK)
    source = resolved.config_file or "no tile.toml found (defaults)"
    profiles = f"; profiles {', '.join(resolved.profiles)} (in order)" if resolved.profiles else ""
    err.print(f"config: {source}{profiles}", markup=False, style="dim")
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("key", "value", "origin"):
        table.add_column(col, overflow="fold")
    for key, value in values.items():
        origin = resolved.origins.get(key)
        style = "dim" if origin is None or origin.kind == "default" else None
        table.add_row(key, json.dumps(value, default=str), describe_origin(origin), style=style)
    out.print(table)
    return int(ExitCode.OK)


def _shown(key: str, value: object) -> object:
    """A value as `tile config` prints it: a secret-named key's value (`runner.env.HF_TOKEN`,
    a CI job's `GITHUB_TOKEN`) hidden, as in every file a run writes; the key stays. A URL's
    credentials (`[downloads]`: `user:pass@`, `?access_token=`) are hidden too: the table's
    console hid them, `--json` (printed past it) did not."""
    import tile_artifacts as ta

    if ta.is_secret_name(key.rsplit(".", 1)[-1]):
        return ta.REDACTED
    return ta.Redactor().text(value) if isinstance(value, str) else value
