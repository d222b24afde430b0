"""Hostile candidates (tests/hostile/*.py): each must be contained.

For every one: the evaluating process survives, the candidate gets a clear error of an expected
kind or an honest score, nothing outside its own directory changes, no process it started
survives, the secret and the network stay out of reach, and no cheat scores better than honest
random search. Each file says what to expect in its first lines (`# expect: kind|kind`,
`# cheat: yes`). Short timeouts, one task, one repeat: the suite stays fast.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path

import pytest
from support.paths import HOSTILE_DIR

from generator.evaluation.evaluate import evaluate_source
from generator.sandbox.jobs import PROJECT_ROOT, SandboxConfig

CANDIDATES = sorted(p.stem for p in HOSTILE_DIR.glob("*.py"))
SECRET = "sk-tunesmith-hostile-" + uuid.uuid4().hex[:12]
TOKEN = uuid.uuid4().hex[:10]
SLEEP = f"{3000 + int(TOKEN[:4], 16) % 997}.{int(TOKEN[4:8], 16) % 1000:03d}"  # a unique `sleep` argument
CONFIG = SandboxConfig(timeout_s=3.0, memory_mb=256, startup_s=120)

HONEST = """
class RandomSearch:
    def __call__(self, func, searchspace):
        while True:
            for cfg in searchspace.get_random_sample(10):
                func(cfg)
"""


def _header(source: str) -> tuple[set[str], bool]:
    expect, cheat = set(), False
    for line in source.splitlines()[:4]:
        if line.startswith("# expect:"):
            expect = set(line.split(":", 1)[1].strip().split("|"))
        if line.startswith("# cheat:"):
            cheat = line.split(":", 1)[1].strip() == "yes"
    return expect, cheat


class _Listener:
    """A TCP server on the host's loopback that records whether anyone reached it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.hits += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory, conv_task):
    """Sentinels the candidates aim at, a secret in the environment, a listening socket."""
    tmp = tmp_path_factory.mktemp("hostile")
    sentinel_tmp = tmp / "sentinel.txt"
    sentinel_tmp.write_text("keep me")
    sentinel_project = PROJECT_ROOT / f".hostile-sentinel-{TOKEN}"
    sentinel_project.write_text("keep me")
    sentinel_dir = PROJECT_ROOT / f".hostile-dir-{TOKEN}"
    sentinel_dir.mkdir()
    (sentinel_dir / "a.txt").write_text("keep me")
    old = {k: os.environ.get(k) for k in ("OPENAI_API_KEY", "TUNESMITH_TEST_SECRET")}
    os.environ["OPENAI_API_KEY"] = SECRET
    os.environ["TUNESMITH_TEST_SECRET"] = SECRET
    listener = _Listener()
    hub_file = Path(conv_task.source)
    subst = {
        "@@TOKEN@@": TOKEN,
        "@@SLEEP@@": SLEEP,
        "@@SECRET@@": SECRET,
        "@@PORT@@": str(listener.port),
        "@@PROJECT@@": str(PROJECT_ROOT),
        "@@HOME@@": str(Path.home()),
        "@@HUB@@": str(hub_file.parents[2]),
        "@@HUB_FILE@@": str(hub_file),
        "@@SENTINEL_PROJECT@@": str(sentinel_project),
        "@@SENTINEL_TMP@@": str(sentinel_tmp),
        "@@SENTINEL_DIR@@": str(sentinel_dir),
    }
    honest = evaluate_source(HONEST, [conv_task], repeats=1, seed=0, config=CONFIG)
    assert honest.ok, honest.error
    yield {
        "subst": subst,
        "listener": listener,
        "honest": honest.score,
        "task": conv_task,
        "sentinels": [sentinel_tmp, sentinel_project, sentinel_dir / "a.txt"],
        "hub_file": hub_file,
    }
    listener.close()
    sentinel_project.unlink(missing_ok=True)
    for p in sentinel_dir.glob("*"):
        p.unlink()
    sentinel_dir.rmdir()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _leftover_files() -> list[Path]:
    places = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), PROJECT_ROOT, Path.home()]
    return [p for d in places if d.is_dir() for p in d.glob(f"tunesmith-hostile-{TOKEN}*")]


def _survivors() -> list[str]:
    """Host processes still running a command the hostile candidates started."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmd = (Path("/proc") / pid / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if SLEEP in cmd:
            found.append(f"{pid}: {cmd}")
    return found


@pytest.mark.parametrize("name", CANDIDATES)
def test_hostile_candidate_is_contained(name, world):
    source = (HOSTILE_DIR / f"{name}.py").read_text()
    expect, cheat = _header(source)
    assert expect, f"{name}.py: first lines must say '# expect: ...'"
    for key, value in world["subst"].items():
        source = source.replace(key, value)
    hub_before = world["hub_file"].stat()
    repeats = 2 if name == "memo_across_repeats" else 1

    fit = evaluate_source(source, [world["task"]], repeats=repeats, seed=0, config=CONFIG)

    outcome = "ok" if fit.error is None else fit.error.kind
    assert outcome in expect, f"{name}: got {outcome} ({fit.error}), expected one of {sorted(expect)}"
    if fit.error is not None:
        assert fit.error.message, f"{name}: an error needs a message"
        assert fit.score is None
    else:
        assert fit.score is not None
    assert SECRET not in str(fit.to_dict()), f"{name}: the secret reached the candidate"
    message = fit.error.message if fit.error else ""
    for alarm in ("LEAKED", "REACHED", "ESCAPED", "MEMORY CARRIED OVER"):
        assert alarm not in message, f"{name}: {fit.error}"
    assert world["listener"].hits == 0, f"{name}: reached the host's network"
    for sentinel in world["sentinels"]:
        assert sentinel.read_text() == "keep me", f"{name}: changed {sentinel}"
    assert world["hub_file"].stat().st_mtime == hub_before.st_mtime
    assert not _leftover_files(), f"{name}: wrote outside its directory: {_leftover_files()}"
    assert not _survivors(), f"{name}: processes survived the run: {_survivors()}"
    if cheat and fit.score is not None:
        assert fit.score <= world["honest"], f"{name}: a cheat scored {fit.score} > random search {world['honest']}"


def test_expected_messages_are_clear(world):
    """The errors an LLM would see say what happened, on which line."""
    fit = evaluate_source((HOSTILE_DIR / "deep_recursion.py").read_text(), [world["task"]], repeats=1, config=CONFIG)
    assert fit.error.kind == "exception" and "RecursionError" in fit.error.message
    assert fit.error.line == "return down(n + 1) + 1" and fit.error.lineno == 6
    fit = evaluate_source(
        (HOSTILE_DIR / "infinite_loop.py").read_text(),
        [world["task"]],
        repeats=1,
        config=SandboxConfig(timeout_s=1.0, startup_s=120),
    )
    assert fit.error.kind == "timeout" and "1 s" in fit.error.message
    assert fit.error.task == world["task"].name and fit.error.repeat == 0


def test_at_least_twenty_hostile_candidates():
    assert len(CANDIDATES) >= 20
