"""Prompts as Tunesmith writes them, for the synthesizer tests, and what its replies hold."""

import re

from generator.llm.synth.compose import Composition, read_composition, render

STATS = """## Search-space statistics

### convolution_milo/A100
- size: 4362
- constraint_density: 0.574
- fdc: 0.1056
- local_optima_share: 0.002856
- budget_fevals: 994

### convolution_milo/MI250X
- size: 4362
- constraint_density: 0.574
- fdc: -0.3612
- local_optima_share: 0.006419
- budget_fevals: 42
"""


def prompt(operator: str, parents=(), error=None, existing=()) -> str:
    """A prompt following the heading contract (as the campaign's templates render it)."""
    parts = ["## Task\nTune GPU kernels.\n", STATS, "## Interface\nOne class.\n"]
    for i, (pid, score, code) in enumerate(parents, 1):
        parts.append(
            f"## Parent {i} (id: {pid}, score: {score})\nPer-task scores:\n"
            f"- convolution_milo/A100: 0.7\n- convolution_milo/MI250X: 0.1\n\n```python\n{code}\n```\n"
        )
    if error:
        parts.append("## Error feedback\n" + "".join(f"- {k}: {v}\n" for k, v in error.items()))
    if existing:
        parts.append("## Existing algorithms\n" + "".join(f"- {e}\n" for e in existing))
    parts.append(f"## Instruction (operator: {operator})\nDo it.\n")
    return "\n".join(parts)


def reply_parts(reply: str) -> tuple[str, str]:
    """(description line, code) of a reply."""
    assert reply.startswith("# ")
    code = re.search(r"```python\n(.*?)```", reply, re.S).group(1)
    return reply.splitlines()[0], code


def composition_of(reply: str) -> Composition:
    comp = read_composition(reply_parts(reply)[1])
    assert comp is not None
    return comp


def parent_code(comp: Composition) -> str:
    return render(comp)[2]


BASE = Composition(
    "trajectory",
    {
        "init": "spread",
        "neighbourhood": "Hamming",
        "screening": "knn",
        "acceptance": "late",
        "memory": "tabu",
        "jump": "none",
        "restart": "perturb",
    },
)


# ----------------------------------------------------------------------------- operators
def slot_changes(a: Composition, b: Composition) -> int:
    """Structural and default changes from a to b (a scheme change counts once)."""
    if a.scheme != b.scheme:
        return 1
    slots = sum(a.slots.get(s) != b.slots.get(s) for s in set(a.slots) | set(b.slots))
    hps = sum(a.hp[h] != b.hp[h] for h in set(a.hp) & set(b.hp))
    return slots + hps
