"""Development tools of the tile repository itself; shipped in no package.

Run them from the repository root as `uv run --no-sync python -m tools.<name>` (the justfile
has a recipe for each).
"""
