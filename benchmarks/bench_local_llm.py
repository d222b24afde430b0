"""Speed of the local code models as Tunesmith runs them: time to first token and tokens per second.

Starts each model's server exactly as a campaign does (`generator.llm.local_server`: one thread,
`logits_all` off, 8192 tokens of context), sends the quickstart campaign's three generation prompts
(new, refine, fix; as `tunesmith prompt` renders them) as streaming chat requests, and reads the
server's own timing lines (prompt eval, eval) from its log. Prints a table and writes JSON.

    python -m benchmarks.bench_local_llm --models local/smollm2-135m local/qwen2.5-coder-0.5b \
        local/qwen2.5-coder-1.5b --out benchmarks/results/local_llm_speed.json

Needs the engine (`pip install -e ".[local]"`) and the models (`tunesmith llm install ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import urllib.request
from pathlib import Path

from benchmarks._lib.paths import ROOT
from generator.campaign.run import render_prompt
from generator.llm.local_server import server_for, stop_all

OPERATORS = ("new", "refine", "fix")


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stream(api_base: str, alias: str, messages: list[dict], max_tokens: int) -> dict:
    """One streaming request: seconds to the first token and in all, and the text."""
    body = json.dumps(
        {"model": alias, "messages": messages, "max_tokens": max_tokens, "temperature": 0.7, "stream": True}
    ).encode()
    req = urllib.request.Request(
        f"{api_base}/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    start, first, pieces = time.monotonic(), None, []
    with urllib.request.urlopen(req, timeout=3600) as r:
        for raw in r:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = (json.loads(line[6:]).get("choices") or [{}])[0].get("delta") or {}
            if delta.get("content"):
                first = first or time.monotonic()
                pieces.append(delta["content"])
    end = time.monotonic()
    return {
        "ttft_s": round(first - start, 2) if first else None,
        "total_s": round(end - start, 2),
        "text": "".join(pieces),
    }


def server_timings(log_text: str) -> dict:
    """llama.cpp's own counts from the last request in its log (prompt eval and generation)."""
    out = {}
    for key, pat in (
        ("prompt", r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens"),
        ("gen", r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs"),
    ):
        found = re.findall(pat, log_text)
        if found:
            ms, n = float(found[-1][0]), int(found[-1][1])
            out[f"{key}_tokens"], out[f"{key}_tok_s"] = n, round(n / (ms / 1000), 2) if ms else None
    return out


def bench_model(model_id: str, prompts: dict, max_tokens: int) -> dict:
    start = time.monotonic()
    server = server_for(model_id)
    result = {"model": model_id, "ready_s": round(time.monotonic() - start, 1), "requests": []}
    for op, messages in prompts.items():
        load = os.getloadavg()[0]
        at = server.log_path.stat().st_size
        rec = stream(server.api_base, server.model.alias, messages, max_tokens)
        time.sleep(0.3)
        with open(server.log_path) as fh:
            fh.seek(at)
            rec.update(server_timings(fh.read()))
        rec.update(operator=op, load_1min=round(load, 2), rss_mb=round(rss_mb(server.proc.pid)))
        rec["reply_chars"] = len(rec.pop("text"))
        result["requests"].append(rec)
        print(json.dumps({"model": model_id, **rec}), flush=True)
    stop_all()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models", nargs="+", default=["local/smollm2-135m", "local/qwen2.5-coder-0.5b", "local/qwen2.5-coder-1.5b"]
    )
    ap.add_argument("--config", default="campaigns/quickstart.toml", help="campaign whose prompts are sent")
    ap.add_argument("--max-tokens", type=int, default=600)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    prompts = {op: render_prompt(ROOT / args.config, op) for op in OPERATORS}  # what `tunesmith prompt` shows
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cores": os.cpu_count(),
        "config": args.config,
        "max_tokens": args.max_tokens,
        "models": [bench_model(m, prompts, args.max_tokens) for m in args.models],
    }
    print(
        "\n| model | ready (s) | operator | prompt tokens | TTFT (s) | prompt tok/s | generated | gen tok/s | RSS (MB) | load |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for m in results["models"]:
        for r in m["requests"]:
            print(
                f"| {m['model']} | {m['ready_s']} | {r['operator']} | {r.get('prompt_tokens', '?')} | {r['ttft_s']} | "
                f"{r.get('prompt_tok_s', '?')} | {r.get('gen_tokens', '?')} | {r.get('gen_tok_s', '?')} | "
                f"{r['rss_mb']} | {r['load_1min']} |"
            )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
