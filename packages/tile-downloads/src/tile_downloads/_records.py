"""Fingerprints (path, size, sha256) of input files, for the artifact manifest's input_files."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ._errors import DownloadError

__all__ = ["FileRecord", "file_records", "sha256_file"]


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One regular file: absolute path, size and sha256, as an `absolute_input` of a run."""

    path: Path
    size_bytes: int
    sha256: str

    def to_dict(self) -> dict[str, str | int]:
        """Plain JSON-ready form: `{"path", "size_bytes", "sha256"}`."""
        return {"path": str(self.path), "size_bytes": self.size_bytes, "sha256": self.sha256}


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at `path`, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def file_records(path: str | os.PathLike[str]) -> list[FileRecord]:
    """Records for a file, or for every regular file under a directory (sorted, links skipped)."""
    root = Path(path).absolute()
    try:
        if root.is_file():
            return [FileRecord(root, root.stat().st_size, sha256_file(root))]
        if not root.is_dir():
            raise FileNotFoundError(f"no such file or directory: {root}")
        files: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            # Links inside an extracted archive point at files that are recorded anyway.
            files.extend(p for n in filenames if not (p := Path(dirpath, n)).is_symlink())
        files.sort(key=lambda p: p.relative_to(root).as_posix())
        return [FileRecord(p, p.stat().st_size, sha256_file(p)) for p in files]
    except OSError as exc:
        raise DownloadError(
            f"cannot fingerprint {root}: {exc.strerror or exc}",
            hint="check that the path exists and is readable",
        ) from exc
