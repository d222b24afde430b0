"""The llama.cpp server behind `model = "local/NAME"`: started on demand, stopped on every way out.

Tunesmith starts `llama_cpp.server` (the optional `local` extra) on 127.0.0.1 at a free port, waits
until it answers, and talks to it through litellm like any OpenAI-compatible server. One server
per model and settings per process. It is stopped at interpreter exit (normal end, an exception,
Ctrl-C, SIGTERM handled as Ctrl-C) and, because nothing runs at exit after `kill -9`, a watchdog
thread inside the server process ends it as soon as its parent is gone.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from generator.llm.local_models import LocalModel, LocalModelError, require_installed

ENGINE = "llama_cpp"
ENGINE_PIN = "llama-cpp-python[server]==0.3.36"
# Runs in the server process: exit when the parent changes (it died, even by SIGKILL), then hand
# over to llama_cpp.server as if it were started with `python -m llama_cpp.server ARGS`.
WATCHDOG = """\
import os, runpy, sys, threading, time
parent = int(sys.argv[1])
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ["llama_cpp.server"] + sys.argv[2:]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_engine() -> None:
    """The llama.cpp engine must be installed (an optional extra: CI never builds it)."""
    if importlib.util.find_spec(ENGINE) is None:
        raise LocalModelError(
            f'the local LLM engine is not installed; run `pip install -e ".[local]"` '
            f"(it builds {ENGINE_PIN} from source, about 20 minutes on 2 cores)"
        )


class LocalServer:
    """One llama.cpp server process serving one model on loopback."""

    def __init__(self, model: LocalModel, threads: int = 1, context: int = 8192, startup_timeout: float = 600.0):
        self.model, self.threads, self.context, self.startup_timeout = model, threads, context, startup_timeout
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log_path: Path | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-c",
            WATCHDOG,
            str(os.getpid()),
            "--model",
            str(self.model.path),
            "--model_alias",
            self.model.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_threads",
            str(self.threads),
            # the prompt batch too: llama.cpp 0.3.36 defaults it to 2 threads, slower on 2 loaded cores
            "--n_threads_batch",
            str(self.threads),
            "--n_ctx",
            str(min(self.context, self.model.context_length)),
            "--logits_all",
            "false",
        ]

    def start(self) -> LocalServer:
        """Start the server and wait until it lists its model; a failure says why, with its log."""
        require_engine()
        self.port = free_port()
        fd, log = tempfile.mkstemp(prefix=f"tunesmith-{self.model.alias}-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "w") as out:
            # a session of its own: Ctrl-C in the terminal reaches Tunesmith, which then stops it in order
            self.proc = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, "OMP_NUM_THREADS": str(self.threads)},
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelError(
                    f"the local server for {self.model.id} exited with code {self.proc.returncode} "
                    f"at start ({self.log_tail()}); see {self.log_path}"
                )
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise LocalModelError(
            f"the local server for {self.model.id} did not answer within {self.startup_timeout:.0f} s; "
            f"raise [llm.local] startup_timeout or see {self.log_path}"
        )

    def log_tail(self) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "no log"
        return lines[-1][:200] if lines else "empty log"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM to its process group, then SIGKILL after 10 s; safe to call twice."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.proc = None


_SERVERS: dict[tuple, LocalServer] = {}
_LOCK = threading.Lock()


def server_for(model_id: str, threads: int = 1, context: int = 8192, startup_timeout: float = 600.0) -> LocalServer:
    """The process's running server for a model and settings (started on first use)."""
    key = (model_id, threads, context)
    with _LOCK:  # concurrent requests share one start
        server = _SERVERS.get(key)
        if server is None or not server.running():
            model = require_installed(model_id)
            server = LocalServer(model, threads, context, startup_timeout).start()
            _SERVERS[key] = server
        return server


@atexit.register
def stop_all() -> None:
    """Stop every server this process started (also called by tests and the CLI on the way out)."""
    for server in list(_SERVERS.values()):
        server.stop()
    _SERVERS.clear()
