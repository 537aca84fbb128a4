"""Registry entries: building from plain data, and clear errors for bad entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tile_downloads as td

SHA = "0123456789abcdef" * 4
URL = "https://example.org/data/weights.npz"


def test_registry_from_mapping_builds_and_normalizes() -> None:
    reg = td.registry_from_mapping(
        {
            "plain": {"url": URL, "sha256": SHA.upper()},
            "bundle": {
                "url": "http://example.org/b.tar.gz",
                "sha256": f"sha256:{SHA}",
                "archive": "tar.gz",
                "members": ["./data/", "extra/x.txt"],
                "description": "a bundle",
            },
        }
    )
    assert reg["plain"] == td.DownloadEntry("plain", URL, SHA)
    bundle = reg["bundle"]
    assert bundle.sha256 == SHA
    assert bundle.archive == "tar.gz"
    assert bundle.members == ("data", "extra/x.txt")
    assert bundle.description == "a bundle"


def test_explicit_nulls_are_accepted() -> None:
    """What a msgspec/pydantic dump of an entry looks like."""
    reg = td.registry_from_mapping(
        {"x": {"url": URL, "sha256": SHA, "archive": None, "members": None, "description": None}}
    )
    assert reg["x"].archive is None and reg["x"].members is None


BAD: list[tuple[str, Any, str]] = [
    ("not a table", "https://x", "must be a table"),
    ("missing url", {"sha256": SHA}, "missing required key `url`"),
    ("missing sha", {"url": URL}, "missing required key `sha256`"),
    ("short sha", {"url": URL, "sha256": "abc"}, "`sha256` must be 64 hexadecimal"),
    ("non-hex sha", {"url": URL, "sha256": "z" * 64}, "`sha256` must be 64 hexadecimal"),
    ("sha not str", {"url": URL, "sha256": 12}, "`sha256` must be 64 hexadecimal"),
    ("ftp url", {"url": "ftp://example.org/x", "sha256": SHA}, "`url` must be an http"),
    ("relative url", {"url": "data/x.bin", "sha256": SHA}, "`url` must be an http"),
    ("bad archive", {"url": URL, "sha256": SHA, "archive": "rar"}, "`archive` must be one of"),
    ("members w/o archive", {"url": URL, "sha256": SHA, "members": ["a"]}, "needs `archive`"),
    (
        "members ..",
        {"url": URL, "sha256": SHA, "archive": "zip", "members": ["../a"]},
        "`members` must hold relative paths",
    ),
    (
        "members absolute",
        {"url": URL, "sha256": SHA, "archive": "zip", "members": ["/a"]},
        "`members` must hold relative paths",
    ),
    (
        "members a string",
        {"url": URL, "sha256": SHA, "archive": "zip", "members": "a"},
        "`members` must be a non-empty list",
    ),
    ("unknown key", {"url": URL, "sha256": SHA, "sha1": "x"}, "unknown key `sha1`"),
    ("description", {"url": URL, "sha256": SHA, "description": 3}, "`description` must be"),
]


@pytest.mark.parametrize(("case", "data", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_entries_name_the_entry_and_the_key(case: str, data: Any, message: str) -> None:
    name = "weights"
    with pytest.raises(td.RegistryError) as info:
        td.registry_from_mapping({"fine": {"url": URL, "sha256": SHA}, name: data})
    err = info.value
    assert isinstance(err, td.DownloadError)
    assert f"`{name}`" in str(err)
    assert message in str(err)
    assert err.entry == name
    assert err.hint


@pytest.mark.parametrize("name", ["", "a/b", "../x", ".hidden", "x" * 129, "sp ace"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(td.RegistryError, match="is not valid"):
        td.registry_from_mapping({name: {"url": URL, "sha256": SHA}})


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(td.RegistryError, match="`sha256`"):
        td.DownloadEntry("x", URL, "nope")
    with pytest.raises(td.RegistryError, match="`archive`"):
        td.DownloadEntry("x", URL, SHA, archive="7z")  # pyright: ignore[reportArgumentType]


def test_registry_key_must_match_entry_name(tmp_path: Path) -> None:
    reg = {"alias": td.DownloadEntry("real", URL, SHA)}
    with pytest.raises(td.RegistryError, match="holds the entry named `real`"):
        td.fetch("alias", reg, cache_dir=tmp_path)


def test_entries_are_frozen() -> None:
    entry = td.DownloadEntry("x", URL, SHA)
    with pytest.raises(AttributeError):
        entry.url = "https://elsewhere"  # pyright: ignore[reportAttributeAccessIssue]
