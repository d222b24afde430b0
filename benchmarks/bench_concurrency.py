"""Wall time of a campaign whose LLM answers slowly, at `[llm] concurrency` 1, 4 and 8 (issue 18, part 3a).

    python -m benchmarks.bench_concurrency [--config campaigns/quickstart.toml] [--budget 48]
        [--delay 20] [--concurrency 1 4 8] [--replies RUN_DIR] [--out /tmp/tunesmith-concurrency]
        [--json out.json]

1. Recorded replies: --replies RUN_DIR serves the replies of that run; without it, the campaign
   is first run once with the offline synthesizer (`--out/recorded`) and its replies are served.
2. A local OpenAI-compatible server (threads, 127.0.0.1) answers every request with the recorded
   reply of the same candidate after a fixed delay: the candidate is known from the request's
   seed (`[llm] seed` + candidate number), a re-ask from the prompt's `## Near-copy of` section.
   Token counts are the recorded ones. The delay stands in for an LLM's latency (10-60 s for a
   hosted model), the replies for its answers.
3. The campaign (the config with `model = "openai/recorded"` and the server as `api_base`) runs
   in a fresh process at each concurrency; the script reports wall time, speed-up over the first
   concurrency, and whether the archive (candidates, operators, parents, code, scores,
   duplicates, errors) is the same as the first run's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks._lib.paths import ROOT

KEY = "sk-bench-not-a-real-key-0000"


class RecordedLLM:
    """The recorded replies of a run, by candidate number and re-ask, served after a delay."""

    def __init__(self, run_dir: Path, seed: int, delay: float):
        from generator.archive import Archive

        self.seed, self.delay = seed, delay
        self.replies = {}
        for ex in Archive.open(run_dir).exchanges():
            m = re.fullmatch(r"c(\d+)(:reask)?", ex.ref or "")
            if m and ex.ok:
                self.replies[(int(m.group(1)), bool(m.group(2)))] = ex
        self.lock = threading.Lock()
        self.in_flight = self.most = self.served = 0

    def answer(self, body: dict) -> dict:
        n = int(body.get("seed", 0)) - self.seed
        reask = "## Near-copy of" in (body.get("messages") or [{}])[-1].get("content", "")
        ex = self.replies.get((n, reask)) or self.replies.get((n, False))
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
            self.served += 1
        text = ex.reply if ex else "I have no recorded reply for this candidate."
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "recorded"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {
                "prompt_tokens": ex.prompt_tokens if ex else 0,
                "completion_tokens": ex.completion_tokens if ex else 0,
                "total_tokens": (ex.prompt_tokens + ex.completion_tokens) if ex else 0,
            },
        }


def serve(llm: RecordedLLM) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802 - http.server's name for the POST handler
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            data = json.dumps(llm.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def campaign_file(
    base: Path, out: Path, name: str, model: str, api_base: str | None, concurrency: int, delay: float
) -> Path:
    text = base.read_text()
    text = re.sub(r"^model\s*=.*$", f'model = "{model}"', text, count=1, flags=re.M)
    extra = f"concurrency = {concurrency}\ntimeout = {max(120.0, 3 * delay)}\n"
    if api_base:
        extra += f'api_base = "{api_base}"\n'
    text = re.sub(r"^\[llm\]\s*$", "[llm]\n" + extra.rstrip(), text, count=1, flags=re.M)
    path = out / f"{name}.toml"
    path.write_text(text)
    return path


def run(config: Path, run_dir: Path, budget: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY}
    start = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "generator.cli",
            "run",
            str(config),
            "--run-dir",
            str(run_dir),
            "--budget",
            str(budget),
            "--no-progress",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - start


def digest(run_dir: Path) -> list:
    from generator.archive import Archive

    return [
        (c.id, c.operator, tuple(c.parent_ids), c.code_hash, c.score, c.duplicate_of, (c.error or {}).get("kind"))
        for c in Archive.open(run_dir).candidates()
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "campaigns" / "quickstart.toml"))
    p.add_argument("--budget", type=int, default=48)
    p.add_argument("--delay", type=float, default=20.0, help="seconds before each reply (default 20)")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--replies", help="serve the replies of this run directory (default: record a synthesizer run)")
    p.add_argument("--out", default="/tmp/tunesmith-concurrency")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    import tomllib

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(args.config)
    seed = tomllib.loads(base.read_text()).get("llm", {}).get("seed")
    if seed is None:
        raise SystemExit(f"{base}: [llm] seed must be set (the server finds the candidate from the request's seed)")
    recorded = Path(args.replies) if args.replies else out / "recorded"
    if not args.replies and not (recorded / "config.json").exists():
        wall = run(campaign_file(base, out, "recorded", "synth/components", None, 1, 0), recorded, args.budget)
        print(f"recorded the synthesizer's replies in {recorded} ({wall:.0f} s)")
    llm = RecordedLLM(recorded, seed, args.delay)
    httpd = serve(llm)
    api_base = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    results = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores (shared)",
        "config": str(base),
        "budget": args.budget,
        "delay_s": args.delay,
        "replies": str(recorded),
        "runs": [],
    }
    first = None
    try:
        for n in args.concurrency:
            run_dir, done = out / f"concurrency{n}", out / f"concurrency{n}.json"
            if done.exists():  # measured by an earlier call with the same --out: reuse it
                row = json.loads(done.read_text())
                wall, requests, most = row["wall_s"], row["requests"], row["most_in_flight"]
            elif run_dir.exists():
                raise SystemExit(f"{run_dir} exists without {done.name} (an interrupted run?); remove it first")
            else:
                llm.most = 0
                served = llm.served
                wall = run(
                    campaign_file(base, out, f"concurrency{n}", "openai/recorded", api_base, n, args.delay),
                    run_dir,
                    args.budget,
                )
                requests, most = llm.served - served, llm.most
            d = digest(run_dir)
            first = first or (wall, d)
            row = {
                "concurrency": n,
                "wall_s": round(wall, 1),
                "speedup": round(first[0] / wall, 2),
                "requests": requests,
                "most_in_flight": most,
                "candidates": len(d),
                "same_archive": d == first[1],
            }
            done.write_text(json.dumps(row) + "\n")
            results["runs"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        httpd.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
