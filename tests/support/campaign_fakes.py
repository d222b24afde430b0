"""A deterministic fake LLM reply and a fake evaluation, shared by the campaign tests (the fixtures that use
them, `server` and `make_config`, are in conftest.py)."""

import hashlib
import re

from generator.scoring.fitness import CandidateError, Fitness, TaskFitness

FAKE_KEY = "sk-fake-campaign-key-0123456789"


def reply_for(body: dict, sizes: int = 40) -> str:
    """A reply that depends only on the prompt, like a deterministic LLM: a sampler of batch size n
    (one of `sizes`) whose loop structure (one to three sampling loops, each forwards or reversed)
    varies too, so that replies are not all copies of one algorithm with other constants."""
    prompt = body["messages"][-1]["content"]
    h = int(hashlib.sha256(f"{prompt}{body.get('seed')}".encode()).hexdigest()[:8], 16)
    n = h % sizes + 1
    op = re.search(r"operator: (\w+)", prompt).group(1)
    loops = "".join(
        f"            for c in {'reversed(' if (h >> (8 + k)) & 1 else '('}searchspace.get_random_sample({n})):\n"
        "                func(c)\n"
        for k in range(1 + (h >> 16) % 3)
    )
    return (
        f"# Sampler{n}: {op} gives random batches of {n}\n```python\nclass Sampler{n}:\n"
        f"    hyperparameters = {{}}\n\n    def __init__(self, budget=5000):\n        self.budget = budget\n\n"
        f"    def __call__(self, func, searchspace):\n        while True:\n{loops}```\n"
    )


def fake_evaluate(code, tasks, repeats, seed, timeout, workers):
    """Deterministic stand-in for the sandbox: a score from the code's hash; some candidates fail."""
    h = int(hashlib.sha256(code.encode()).hexdigest()[:8], 16)
    if h % 5 == 0:
        return Fitness(None, {}, 0.0, CandidateError("exception", "ZeroDivisionError", "Traceback ...", "x = 1 / 0", 9))
    s = (h % 1000) / 1000
    return Fitness(s, {t.name: TaskFitness(s, 0.0, 50.0) for t in tasks}, 0.01)
