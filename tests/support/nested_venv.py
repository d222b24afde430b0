"""A virtual environment that sees every package this test process sees, from any interpreter.

`venv` builds from the base interpreter: inside a venv (as the README's test command runs), a nested
venv with system site-packages sees the base's packages, not this venv's (no kernel_tuner, no numpy).
A `.pth` line in the nested venv adds this process's site-packages after its own, so what it installs
itself (a numpy copy) still comes first, and editable installs' own `.pth` files are processed too.
"""

from __future__ import annotations

import site
import subprocess
import sys
import venv
from pathlib import Path


def make_nested_venv(where: Path) -> tuple[Path, Path]:
    """A venv at `where` (symlinked python) that sees this process's packages; returns (python, purelib)."""
    venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    if sys.prefix != sys.base_prefix:  # this process runs in a venv: its packages are not the base's
        outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
        (purelib / "_outer_venv.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in outer))
    return python, purelib
