"""Stand-in for `python -m llama_cpp.server`: the same command line, an OpenAI-compatible answer.

Used by tests/test_local_llm.py to exercise Tunesmith's server lifecycle (start, readiness, litellm
calls, stop, dying with its parent) without building llama.cpp. It records its arguments and pid in
$FAKE_ENGINE_RECORD (JSON) so the test can check them and find the process.
"""

import argparse
import json
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
for flag in ("--model", "--model_alias", "--host", "--port", "--n_threads", "--n_threads_batch", "--n_ctx",
             "--logits_all"):
    parser.add_argument(flag, required=flag in ("--model", "--port"))
args = parser.parse_args()
if not os.path.isfile(args.model):
    raise SystemExit(f"model not found: {args.model}")
if os.environ.get("FAKE_ENGINE_RECORD"):
    with open(os.environ["FAKE_ENGINE_RECORD"], "w") as fh:
        json.dump({"pid": os.getpid(), "args": vars(args)}, fh)
REPLY = "# Random search\n```python\nclass RandomSearch:\n    def __init__(self, budget=5000):\n        self.budget = budget\n\n    def __call__(self, func, searchspace):\n        for c in searchspace.get_random_sample(10):\n            func(c)\n```\n"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, payload):
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self._send({"object": "list", "data": [{"id": args.model_alias, "object": "model"}]})

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send({"id": "x", "object": "chat.completion", "created": int(time.time()), "model": args.model_alias,
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": REPLY}}],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 54, "total_tokens": 375}})


time.sleep(0.3)  # a real engine takes a while to load its model; readiness polling must cope
ThreadingHTTPServer((args.host, int(args.port)), Handler).serve_forever()
