"""The sandbox keeps the Python installation readable wherever it lives (issue 15, item 1).

The sandbox host runs under the evaluating process's own interpreter (`sys.executable`), so the
test starts an evaluating process with a virtual environment's python. The venv lies under /tmp
(which each run gets as a private, empty tmpfs) or under a home directory (hidden): numpy is put
inside the venv, and a candidate imports submodules that the host never imported before the walls
went up (`numpy.ma`), so they must still be readable then.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.nested_venv import make_nested_venv

from generator.sandbox.jobs import PROJECT_ROOT, interpreter_paths

SCRIPT = '''
import json, sys
from generator.evaluation.evaluate import evaluate_source
from generator.tasks.entries import load_tasks

tasks = load_tasks(sys.argv[1])
secrets = [str(tasks[0].source), sys.argv[2], __file__]  # task data, the project, the caller's folder
src = """
class Imports:
    def __call__(self, func, searchspace):
        import numpy.ma, numpy.linalg, random, heapq, math
        assert numpy.__file__.startswith(%r), numpy.__file__
        assert numpy.linalg.norm(numpy.ma.masked_array([3.0, 4.0])) == 5.0
        for path in %r:
            try:
                open(path, "rb").read(1)
            except OSError:
                continue
            raise RuntimeError("readable: " + path)
        try:
            open(numpy.__file__, "a")
        except OSError:
            pass
        else:
            raise RuntimeError("writable: " + numpy.__file__)
        func(searchspace.get_random_sample(1)[0])
""" % (sys.prefix, secrets)
fit = evaluate_source(src, tasks, repeats=1, seed=0)
print("RESULT " + json.dumps({"error": fit.error and fit.error.message,
                              "held": fit.metadata["protections"]["held"]}))
'''


def _link_or_copy(src: Path, dst: Path) -> None:
    """Hard links where possible (same file system: instant), a copy otherwise."""

    def copy(a, b):
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=copy, symlinks=True)


def _make_venv(where: Path) -> Path:
    """A venv (this process's packages visible) with its own copy of numpy: it shadows the system one."""
    import numpy

    python, purelib = make_nested_venv(where)
    np_dir = Path(numpy.__file__).parent
    for name in (np_dir.name, np_dir.name + ".libs"):  # numpy.libs: the wheel's bundled OpenBLAS
        if (np_dir.parent / name).is_dir():
            _link_or_copy(np_dir.parent / name, Path(purelib) / name)
    return python, purelib


def _parent_dir(kind: str) -> Path:
    if kind == "tmp":
        return Path(tempfile.mkdtemp(prefix="tunesmith-venv-", dir="/tmp"))
    home = Path.home()
    if not os.access(home, os.W_OK):
        pytest.skip(f"home directory {home} is not writable")
    return Path(tempfile.mkdtemp(prefix=".tunesmith-venv-test-", dir=home))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the walls are Linux namespaces")
@pytest.mark.parametrize("kind", ["tmp", "home"])
def test_venv_under_tmp_or_home_can_import_lazy_submodules(kind, hub_dir):
    """A candidate run by a venv's python (venv under /tmp or ~) imports numpy.ma, numpy.linalg, ..."""
    parent = _parent_dir(kind)
    try:
        os.chmod(parent, 0o755)
        python, purelib = _make_venv(parent / "venv")
        # task data inside an installed package: still hidden although its folder is kept
        cache = purelib / "tunesmith_tasks" / "cachefiles" / "convolution_milo" / "A100.json.gz"
        cache.parent.mkdir(parents=True)
        shutil.copy(hub_dir / "cachefiles" / "convolution_milo" / "A100.json.gz", cache)
        (purelib / "tunesmith_tasks" / "kernels").mkdir()
        shutil.copy(hub_dir / "kernels" / "convolution_milo.json", purelib / "tunesmith_tasks" / "kernels")
        script = parent / "evaluate.py"
        script.write_text(SCRIPT)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "VIRTUAL_ENV")}
        env["PYTHONPATH"] = str(PROJECT_ROOT)
        proc = subprocess.run(
            [str(python), str(script), str(cache), str(PROJECT_ROOT / "generator" / "oracle.py")],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=str(parent),
            env=env,
        )
        found = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        assert found, proc.stdout[-2000:] + proc.stderr[-2000:]
        res = json.loads(found[0][len("RESULT ") :])
        assert res["error"] is None, res["error"]
        if os.geteuid() == 0:  # the walls went up (as in CI): the fix is not "no walls"
            assert res["held"]["hidden_paths"] and res["held"]["private_tmp"]
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_kept_paths_never_swallow_what_must_stay_hidden(monkeypatch, tmp_path):
    """sys.path entries with installed packages are kept, but never the project, a home or /tmp itself."""
    lib = tmp_path / "libs"  # e.g. `pip install --target` on PYTHONPATH
    (lib / "somepkg-1.0.dist-info").mkdir(parents=True)
    plain = tmp_path / "plain"  # a folder of the user's own scripts: nothing installed
    plain.mkdir()
    monkeypatch.setattr(
        sys, "path", [str(PROJECT_ROOT), "", "/", "/tmp", str(Path.home()), str(lib), str(plain), *sys.path]
    )
    keep = interpreter_paths()
    assert os.path.realpath(lib) in keep
    assert os.path.realpath(plain) not in keep
    for never in ("/", "/tmp", "/root", "/home", str(Path.home()), str(PROJECT_ROOT)):
        assert not any(never == k or never.startswith(k.rstrip("/") + "/") for k in keep), (never, keep)
    assert os.path.realpath(sys.base_prefix) in keep and os.path.realpath(sys.prefix) in keep
