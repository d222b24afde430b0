"""Output paths checked before any work: a file or folder Tunesmith is asked to write to.

`report -o`, `export --out` and the default places inside a run directory fail after the work
when the place is read-only, a folder where a file is meant, or under a file. Checked first, each is
one line naming the path and how to choose another; nothing is written (a probe file in the
nearest existing folder is created and removed at once, because only a write tells for sure:
root passes every permission check on a read-only file system).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from generator.errors import TunesmithError


class OutputError(TunesmithError):
    """A place Tunesmith was asked to write to cannot take the output."""


def check_output_file(path, fix: str, example: str = "report.html") -> Path:
    """Refuse a file path that cannot be written (a folder, under a file, read-only); `fix` says what to do."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{path} is a folder; {fix} (a file name, e.g. {path / example})")
    _check_folder(path.parent, path, fix)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"{path} is read-only; {fix}")
    return path


def check_output_dir(path, fix: str) -> Path:
    """Refuse a folder that cannot be created or written into; `fix` says what to do."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path} is a file, not a folder; {fix}")
    _check_folder(path, path, fix)
    return path


def _check_folder(folder: Path, target: Path, fix: str) -> None:
    existing = next((p for p in [folder, *folder.parents] if p.exists()), None)
    if existing is None:
        return
    if not existing.is_dir():
        raise OutputError(f"{target}: {existing} is a file, not a folder; {fix}")
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".tunesmith-probe-"):
            pass
    except OSError as exc:
        raise OutputError(f"{target}: {existing} is not writable ({exc.strerror}); {fix}") from None
