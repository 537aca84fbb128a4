"""How bytes reach the disk so that a kill never leaves a torn file.

A whole file goes to a temp file beside it, is fsynced and renamed over the target (then the
directory is fsynced, so the rename lasts too); lines are appended with one `write(2)` of
whole lines, then fsynced. A SIGKILL lands before or after each, never inside.

Every file is created with the mode `open()` gives a new file, 0666 less the umask: the user's
umask decides who may read a run, a baseline or a report (docs/artifacts.md), never tile.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from tile_artifacts._errors import ArtifactWriteError

__all__ = [
    "append_batch",
    "create_run_directory",
    "replace_file",
    "write_atomically",
    "write_error",
]

_FILE_MODE = 0o666
"""Before the umask: the kernel takes the umask's bits away, as for any file a program opens."""
_TEMP_ATTEMPTS = 100


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; some filesystems refuse fsync on directories.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_error(target: Path, error: OSError) -> ArtifactWriteError:
    """The error of a write into the run directory that the OS refused."""
    return ArtifactWriteError(
        f"cannot write `{target}`: {error.strerror}",
        path=str(target),
        hint="check free space and permissions of the run directory",
    )


def create_run_directory(run_dir: Path, allow_existing: bool) -> None:
    """Make `run_dir`; refuse a file in the way, or (unless allowed) an earlier run's files."""
    where = f"`{run_dir}`"
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        leftovers = any(run_dir.iterdir())
    except FileExistsError:
        raise ArtifactWriteError(
            f"cannot create run directory {where}: a file is in the way",
            path=str(run_dir),
            hint="remove that file or choose another `--output-dir`",
        ) from None
    except NotADirectoryError:
        raise ArtifactWriteError(
            f"cannot create run directory {where}: a parent is a file, not a directory",
            path=str(run_dir),
            hint="choose another `--output-dir`",
        ) from None
    except OSError as e:
        raise ArtifactWriteError(
            f"cannot create run directory {where}: {e.strerror}",
            path=str(run_dir),
            hint="check permissions and free space, or choose another `--output-dir`",
        ) from None
    if leftovers and not allow_existing:
        raise ArtifactWriteError(
            f"run directory {where} already exists and is not empty",
            path=str(run_dir),
            hint="choose another `--output-dir` or remove the old run",
        )


def _temp_beside(target: Path) -> tuple[int, Path]:
    """Create a new, empty temp file in `target`'s directory; return its descriptor and path.

    Not `tempfile.mkstemp`: it makes the file 0600 whatever the umask, and the rename would
    carry that mode over to the target. A random name per call keeps concurrent writers of
    one target (two CI jobs saving a baseline) from sharing a temp file.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(_TEMP_ATTEMPTS):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, _FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(target.parent))


def replace_file(target: Path, data: bytes | Iterable[bytes], *, durable: bool = False) -> None:
    """Replace `target` with `data` (bytes, or pieces written in turn) through a temp file and
    a rename: old or new, never torn.

    The file gets the umask's mode (see the module docstring). Raises the `OSError` itself, so
    that each caller can say what the file was for and which exit code it means; with
    `durable` the data and the rename are fsynced.
    """
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            else:
                f.writelines(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(target.parent)


def write_atomically(target: Path, data: bytes | Iterable[bytes], *, durable: bool) -> None:
    """`replace_file` for a file of the run directory: a refusal is an `ArtifactWriteError`."""
    try:
        replace_file(target, data, durable=durable)
    except OSError as e:
        raise write_error(target, e) from None


def _drop_torn_tail(fd: int) -> None:
    """Cut a half line that a killed writer left at the end of a JSONL file.

    A line is appended with one write(2), but the kernel may stop a write of more than a page
    part way when the process is killed, leaving a line without its newline. Readers skip
    such a tail (`read_jsonl`); a writer that appends to the file again (a resumed campaign)
    removes it first, so that its own first line does not get glued onto the torn one.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    keep = 0
    step = 1 << 16
    end = size
    while end > 0:
        start = max(0, end - step)
        at = os.pread(fd, end - start, start).rfind(b"\n")
        if at >= 0:
            keep = start + at + 1
            break
        end = start
    os.ftruncate(fd, keep)


def append_batch(target: Path, data: bytes, *, durable: bool, repair: bool = False) -> None:
    """Append a batch of whole lines to `target` in one `write(2)` (created if missing), then
    fsync; with `repair`, first cut a torn last line a killed writer left."""
    try:
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, _FILE_MODE)
        try:
            if repair:
                _drop_torn_tail(fd)
            start = os.fstat(fd).st_size
            try:
                # One write(2) per batch of whole lines: a kill lands before or after it.
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if durable and data:
                    os.fsync(fd)
            except OSError:
                # A full disk takes part of a batch: cut it off again (truncating needs no
                # space), so that the file keeps whole lines only.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                raise
        finally:
            os.close(fd)
    except OSError as e:
        raise write_error(target, e) from None
