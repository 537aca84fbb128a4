"""tile-cli."""
