"""The live view's HTTP server: the standard library's, on loopback unless told otherwise.

Routes (nothing else is served; no path ever names a file):
  /                          the page (templates/serve.html.j2)
  /serve.js                  its script (review/templates/dom.js, then templates/serve.js)
  /api/runs                  the run directories being shown: [{"index", "dir"}]
  /api/run/N?since=V         run N's overview (serve.data.overview) with its version; {"unchanged": true}
                             when V is still its version, so polling costs a stat() per file
  /api/run/N/candidate/ID    one candidate's code, scores and diffs

Everything the runs hold (code and descriptions an LLM wrote) goes out as JSON and is put on screen
by the script with textContent only; the Content-Security-Policy admits the page's own script and
nothing inline. An error while reading a run being written answers 503 with the reason, and the
page keeps what it showed and asks again.
"""

from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from generator.review.report import page_script
from generator.serve import data

TEMPLATES = Path(__file__).with_name("templates")
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_RUN = re.compile(r"^/api/run/(\d+)$")
_CANDIDATE = re.compile(r"^/api/run/(\d+)/candidate/([A-Za-z0-9_.-]{1,40})$")


def clean(value):
    """JSON has no NaN or infinity: they go out as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


class LiveView:
    """The runs on show and a cache of each one's overview by version."""

    def __init__(self, run_dirs: list[Path], poll_ms: int = 2000):
        self.run_dirs = [Path(d) for d in run_dirs]
        self.poll_ms = poll_ms
        self._cache: dict[int, tuple[str, dict]] = {}
        self._lock = threading.Lock()

    def overview(self, index: int, since: str | None) -> dict:
        run_dir = self.run_dirs[index]
        v = data.version(run_dir)
        if since == v:
            return {"unchanged": True, "version": v}
        with self._lock:
            cached = self._cache.get(index)
        if cached is None or cached[0] != v:
            cached = (v, clean(data.overview(run_dir)))
            with self._lock:
                self._cache[index] = cached
        return {"version": v, **cached[1]}

    def page(self) -> str:
        import jinja2

        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
        return env.get_template("serve.html.j2").render(runs=[str(d) for d in self.run_dirs], poll_ms=self.poll_ms)


class Handler(BaseHTTPRequestHandler):
    server_version = "tunesmith-serve"
    view: LiveView  # set on the subclass made for each server

    def do_GET(self) -> None:  # noqa: N802  (the name http.server calls)
        path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
        try:
            if path == "/":
                return self._send(200, self.view.page().encode(), "text/html; charset=utf-8")
            if path == "/serve.js":
                script = page_script(TEMPLATES / "serve.js").encode()
                return self._send(200, script, "text/javascript; charset=utf-8")
            if path == "/api/runs":
                return self._json(200, [{"index": i, "dir": str(d)} for i, d in enumerate(self.view.run_dirs)])
            if m := _RUN.match(path):
                index = self._index(m.group(1))
                if index is not None:
                    self._json(200, self.view.overview(index, (query.get("since") or [None])[0]))
                return None
            if m := _CANDIDATE.match(path):
                index = self._index(m.group(1))
                if index is not None:
                    found = data.candidate(self.view.run_dirs[index], m.group(2))
                    if found is None:
                        return self._json(404, {"error": f"no candidate {m.group(2)} in this run (yet)"})
                    self._json(200, clean(found))
                return None
            return self._json(404, {"error": "no such page"})
        except Exception as exc:  # noqa: BLE001  (a run being written can read badly for an instant: ask again)
            return self._json(
                503, {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
            )

    def _index(self, text: str) -> int | None:
        index = int(text)
        if index >= len(self.view.run_dirs):
            self._json(404, {"error": f"no run {index}; this view shows {len(self.view.run_dirs)}"})
            return None
        return index

    def _json(self, code: int, payload) -> None:
        body = json.dumps(payload, allow_nan=False, default=str).encode()
        self._send(code, body, "application/json")

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # the page polls every few seconds: no line per request
        return None


def make_server(run_dirs: list[Path], host: str = "127.0.0.1", port: int = 8765, poll_ms: int = 2000):
    """A server for these runs (not started); port 0 picks a free one (server.server_address says which)."""
    handler = type("LiveHandler", (Handler,), {"view": LiveView(run_dirs, poll_ms)})
    return ThreadingHTTPServer((host, port), handler)
