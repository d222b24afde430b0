"""Prompts follow the heading contract; reply extraction survives prose, several blocks and missing fences."""

import re

import numpy as np
import pytest

from generator.config import PromptsConfig
from generator.llm.prompts import ParentView, PromptBuilder, extract_reply, normalise_code
from generator.tasks.cache import AnswerKey, Objective, SpaceSpec, Task

CLASS = """class Walk:
    hyperparameters = {}

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        for c in searchspace.get_random_sample(5):
            func(c)"""


@pytest.fixture(scope="module")
def tiny_task():
    """A 3x3 space, one restriction removing a corner, one failed configuration."""
    params = {"x": [1, 2, 4], "y": [1, 2, 4]}
    valid = np.array([(i, j) for i in range(3) for j in range(3) if (i, j) != (2, 2)], dtype=np.int32)
    values = np.array([9.0, 8, 7, 6, 5, 4, 3, np.nan])
    key = AnswerKey(values, np.isnan(values), np.full(8, 0.5))
    return Task(
        "tiny/GPU",
        SpaceSpec(params, ("x*y<16",), valid),
        key,
        Objective(),
        {"kernel_name": "tiny_kernel", "device_name": "GPU", "application": {"Language": "CUDA"}},
    )


def test_headings_follow_the_contract(tiny_task):
    b = PromptBuilder([tiny_task], PromptsConfig(), statistics={"tiny/GPU": {"size": "8", "budget_fevals": "12"}})
    parent = ParentView("c0003", 0.25, CLASS, "Walk: random", {"tiny/GPU": 0.25})
    system, user = b.messages("refine", parents=[parent])
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    heads = re.findall(r"^## .*$", text, re.M)
    assert heads == [
        "## Task",
        "## Search-space statistics",
        "## Interface",
        "## Parent 1 (id: c0003, score: 0.2500)",
        "## Instruction (operator: refine)",
    ]
    assert "- size: 8" in text and "- budget_fevals: 12" in text
    assert "`x*y<16`" in text and "x: [1, 2, 4]" in text and "Language: CUDA" in text
    parent_part = text.split("## Parent 1", 1)[1].split("## Instruction", 1)[0]
    assert parent_part.count("```python") == 1 and "- tiny/GPU: 0.2500" in parent_part


def test_fix_and_new_parts(tiny_task):
    b = PromptBuilder(
        [tiny_task],
        PromptsConfig(include_statistics=False, include_application_info=False),
        statistics={"tiny/GPU": {}},
    )
    failed = ParentView("c0002", None, CLASS, "broken", {})
    text = b.messages(
        "fix",
        parents=[failed],
        error={
            "kind": "exception",
            "message": "ZeroDivisionError: x",
            "line": "a = 1 / 0",
            "lineno": 7,
            "traceback": "Traceback...",
        },
    )[1]["content"]
    assert "## Parent 1 (id: c0002, score: failed)" in text
    assert "## Error feedback\n- kind: exception\n- message: ZeroDivisionError: x\n- line: 7: a = 1 / 0" in text
    assert "## Search-space statistics" not in text and "Language: CUDA" not in text
    text = b.messages("new", existing=[ParentView("c0001", 0.5, "", "GA with restarts")])[1]["content"]
    assert "## Existing algorithms\n- c0001 (score 0.5000): GA with restarts" in text
    assert text.rstrip().splitlines()[-2] == "## Instruction (operator: new)"


def test_statistics_computed_from_the_task(tiny_task, monkeypatch):
    import generator.scoring.statistics as stats

    monkeypatch.setattr(stats, "_budget", lambda task: (10.0, 20))
    text = PromptBuilder([tiny_task], PromptsConfig()).messages("new")[1]["content"]
    assert "- size: 8" in text and "- cartesian_size: 9" in text and "- failed_fraction: 0.125" in text


def test_template_dir_overrides_one_part(tiny_task, tmp_path):
    (tmp_path / "op_new.j2").write_text("## Instruction (operator: new)\nBe bold.")
    b = PromptBuilder([tiny_task], PromptsConfig(template_dir=str(tmp_path)), statistics={"tiny/GPU": {}})
    assert b.messages("new")[1]["content"].rstrip().endswith("Be bold.")


@pytest.mark.parametrize(
    "reply, description",
    [
        (f"# Walk: random walk\n```python\n{CLASS}\n```\n", "Walk: random walk"),
        (
            f"Here is my algorithm.\n\n```python\nimport numpy as np\n```\nAnd the class:\n```python\n{CLASS}\n```\nHope it helps!",
            "Here is my algorithm.",
        ),
        (f"**Walk**: a walk\n```\n{CLASS}\n```", "Walk: a walk"),
        (f"{CLASS}\n\nThis algorithm samples randomly.", "Walk"),
        (f"# Walk: truncated fence\n```python\n{CLASS}\n", "Walk: truncated fence"),
        (f"```python\n# Walk: from the code comment\n{CLASS}\n```", "Walk: from the code comment"),
    ],
)
def test_extraction_is_robust(reply, description):
    r = extract_reply(reply)
    assert r.code is not None and "class Walk" in r.code and "def __call__" in r.code
    compile(r.code, "<reply>", "exec")
    assert r.description == description


@pytest.mark.parametrize("reply", ["", None, "I cannot do that.", "```text\nno python here\n```"])
def test_no_code_is_none(reply):
    assert extract_reply(reply).code is None


def test_truncated_code_is_kept_for_the_fix_operator():
    r = extract_reply(f"# W\n```python\n{CLASS[:120]}")
    assert r.code is not None and r.code.startswith("class Walk")


def test_normalised_code_ignores_comments_docstrings_and_layout():
    a = CLASS
    b = CLASS.replace("class Walk:", 'class Walk:\n    """A walk."""\n    # comment').replace("(5)", "( 5 )")
    assert normalise_code(a) == normalise_code(b)
    assert normalise_code(a) != normalise_code(CLASS.replace("(5)", "(6)"))


# Shapes of real replies (tests/data/real_replies/ holds real ones; these are minimal synthetic cases).
@pytest.mark.parametrize(
    "reply, description",
    [
        # no opening fence, a closing one, then prose (a local 1.5B model, 2 of 8 campaign replies)
        (f"import random\n\n{CLASS}\n```\n\nThis algorithm samples 5 configurations.\n", "Walk"),
        (
            f"Here is the optimizer:\n{CLASS}\n```\nExplanation:\n1. It samples.\n- It stops.\n",
            "Here is the optimizer:",
        ),
        # several blocks: imports, the class, a usage example; the class wins
        (
            f"# Walk\n```python\nimport numpy as np\n```\n```py\n{CLASS}\n```\nUsage:\n```python\nw = Walk()\nw(f, s)\n```\n",
            "Walk",
        ),
        (f"# Walk\n```python3\n{CLASS}\n```\n", "Walk"),
        (f"# Walk\r\n```Python\r\n{CLASS}\r\n```\r\nDone.\r\n".replace("\n", "\r\n").replace("\r\r", "\r"), "Walk"),
        (f"~~~python\n{CLASS}\n~~~\n", "Walk"),
        # a class wrapped in prose, no fences; prose lines that start like code ("from ...")
        (
            f"from my experience random walks do well.\nSure! Here it is:\n\nimport random\n{CLASS}\n\nThis walks.\n",
            "from my experience random walks do well.",
        ),
        (f"import math\n\nNow the class itself:\n\n{CLASS}\n", "Walk"),
    ],
)
def test_extraction_survives_real_reply_shapes(reply, description):
    r = extract_reply(reply)
    assert r.code is not None and "class Walk" in r.code and "def __call__" in r.code, r.code
    compile(r.code, "<reply>", "exec")
    assert not r.truncated and "\r" not in r.code
    assert "This" not in r.code and "Explanation" not in r.code and "w = Walk()" not in r.code
    assert r.description == description


@pytest.mark.parametrize(
    "reply, finish_reason",
    [
        (f"# Walk\n```python\n{CLASS[:150]}", None),  # unclosed block that does not parse
        (f"Here:\n{CLASS[:160]}", None),  # unfenced, cut mid-statement
        (f"# Walk\n```python\n{CLASS}", "length"),  # the API said so
    ],
)
def test_truncated_replies_are_flagged(reply, finish_reason):
    r = extract_reply(reply, finish_reason)
    assert r.truncated and r.code.startswith("class Walk")


def test_diff_prompts_the_full_code_fallback_crossover_and_an_override(tiny_task, tmp_path):
    b = PromptBuilder([tiny_task], PromptsConfig(), statistics={"tiny/GPU": {"size": "8", "budget_fevals": "12"}})
    parent = ParentView("c0003", 0.25, CLASS, "Walk: random", {"tiny/GPU": 0.25})
    for op in ("refine", "simplify", "fix"):
        error = {"kind": "exception", "message": "boom"} if op == "fix" else None
        diff = b.messages(op, parents=[parent], error=error, edit="diff")[1]["content"]
        assert f"## Instruction (operator: {op}, answer: diff)" in diff and "<<<<<<< SEARCH" in diff
        again = b.messages(op, parents=[parent], error=error, edit="diff", edit_error="block 1: not found")[1][
            "content"
        ]
        assert "## Diff not applied" in again and "block 1: not found" in again
        assert f"## Instruction (operator: {op})" in again and "<<<<<<< SEARCH" not in again.split("## Instruction")[1]
    assert "answer: diff" not in b.messages("new", edit="diff")[1]["content"]
    other = ParentView("c0004", 0.5, CLASS.replace("Walk", "Jump"), "Jump", {"tiny/GPU": 0.5})
    cross = b.messages("crossover", parents=[parent, other], edit="diff")[1]["content"]
    assert "## Parent 2 (id: c0004" in cross and "## Instruction (operator: crossover)" in cross
    (tmp_path / "edit_diff.j2").write_text("Answer with blocks, please.")
    mine = PromptBuilder([tiny_task], PromptsConfig(template_dir=str(tmp_path)), statistics=b.statistics())
    assert "Answer with blocks, please." in mine.messages("refine", parents=[parent], edit="diff")[1]["content"]


def test_a_literal_too_long_to_print_does_not_break_duplicate_or_novelty_checks():
    """Issue 39: ast.unparse/ast.dump raise on an int of more than 4,300 decimal digits (a 3,700-digit hex
    literal compiles fine), which ended `tunesmith run` and every resume in a traceback."""
    from generator.campaign.novelty import Shape

    huge = CLASS.replace("(5)", "(0x" + "f" * 3700 + ")")
    other = CLASS.replace("(5)", "(0x" + "e" * 3700 + ")")
    assert huge != CLASS and normalise_code(huge) != normalise_code(other)
    assert normalise_code(huge) == normalise_code(huge.replace("    ", "  "))
    assert Shape.of(huge) is not None  # (it was None: ast.dump raised, so the novelty check skipped it)
