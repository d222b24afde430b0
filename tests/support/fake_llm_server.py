"""A tiny OpenAI-compatible chat server on 127.0.0.1 for the LLM-layer tests.

Each request takes the next scripted behaviour from a queue (then the default reply, a string or
a function of the request body, so that a reply can depend on the prompt):
("reply", text), ("status", code), ("slow", seconds, text), ("empty",), ("drop",) (closes the
connection without answering). It records every request body, so tests can check what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chat_response(text: str | None, model: str = "fake") -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
    }


class FakeLLMServer:
    """Start with `with FakeLLMServer(default_reply) as srv:`; `srv.base_url` goes to api_base."""

    def __init__(self, default_reply="# Nothing\n```python\nclass A:\n    pass\n```\n", delay: float = 0.0):
        self.script: deque = deque()
        self.default_reply = default_reply
        self.delay = delay
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    step = server.script.popleft() if server.script else None
                if step is None:
                    default = server.default_reply
                    step = ("reply", default(body) if callable(default) else default)
                    time.sleep(server.delay)
                kind = step[0]
                if kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if kind == "status":
                    self._send(
                        step[1], {"error": {"message": f"scripted {step[1]}", "type": "server_error", "code": step[1]}}
                    )
                    return
                if kind == "slow":
                    time.sleep(step[1])
                    self._send(200, chat_response(step[2], body.get("model", "fake")))
                    return
                text = "" if kind == "empty" else step[1]
                self._send(200, chat_response(text, body.get("model", "fake")))

            def _send(self, code: int, payload: dict):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def push(self, *steps) -> None:
        """Queue behaviours for the next requests."""
        self.script.extend(steps)

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
