"""Every relative link in the user documentation points at a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_in_docs_and_readmes_exist() -> None:
    pages = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("packages/*/README.md")]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in _LINK.findall(page.read_text())
        if "://" not in target and not target.startswith("mailto:")
        if not (page.parent / target).exists()
    ]
    assert len(pages) > 10 and broken == []
