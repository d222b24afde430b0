"""SEARCH/REPLACE diff edits: the shapes real replies take, and the ways a diff fails to apply."""

import pytest

from generator.llm.edits import DiffError, apply_blocks, apply_reply, make_blocks, parse_blocks

PARENT = """class Greedy:
    hyperparameters = {}

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        best = None
        for config in searchspace.get_random_sample(100):
            value = func(config)
            if best is None or value < best:
                best = value
        return best
"""


def block(search, replace, lt="<<<<<<<", gt=">>>>>>>"):
    return f"{lt} SEARCH\n{search}\n=======\n{replace}\n{gt} REPLACE"


def test_one_block_in_a_python_fence_applies():
    reply = (
        "# Larger sample\n\n```python\n"
        + block(
            "        for config in searchspace.get_random_sample(100):",
            "        for config in searchspace.get_random_sample(500):",
        )
        + "\n```\n"
    )
    out = apply_reply(reply, PARENT)
    assert out.blocks == 1 and out.error is None
    assert "get_random_sample(500)" in out.code and "get_random_sample(100)" not in out.code


def test_crlf_several_blocks_odd_markers_and_an_unclosed_fence():
    reply = (
        "# two changes\r\n```diff\r\n"
        + block(
            "    def __init__(self, budget=5000):\n        self.budget = budget",
            "    def __init__(self, budget=5000, n=200):\n        self.budget = budget\n        self.n = n",
            lt="<<<<<<<<",
            gt=">>>>>>>>",
        ).replace("\n", "\r\n")
        + "\r\n\r\n"
        + block(
            "        for config in searchspace.get_random_sample(100):",
            "        for config in searchspace.get_random_sample(self.n):",
        ).replace("\n", "\r\n")
    )
    out = apply_reply(reply, PARENT)  # the ```diff fence is never closed
    assert out.error is None and out.blocks == 2
    assert "self.n = n" in out.code and "get_random_sample(self.n)" in out.code and "\r" not in out.code


def test_whitespace_differences_are_tolerated_and_reindented():
    # the SEARCH lost its indentation and gained trailing spaces; the replacement follows the parent's
    reply = block(
        "if best is None or value < best:   \n    best = value", "if best is None or value <= best:\n    best = value"
    )
    out = apply_reply(reply, PARENT)
    assert out.error is None
    assert "            if best is None or value <= best:\n                best = value" in out.code
    compile(out.code, "child", "exec")


@pytest.mark.parametrize(
    "reply, why",
    [
        (block("        for cfg in space:", "        pass"), "not in the parent"),
        (block("", "        pass"), "empty SEARCH"),
        (block("        self.budget = budget", "        self.budget = budget"), "change nothing"),
        ("<<<<<<< SEARCH\n        best = None\n=======\n        best = 0\n", "not closed"),
    ],
)
def test_a_diff_that_does_not_apply_says_why(reply, why):
    out = apply_reply(reply, PARENT)
    assert out.code is None and why in out.error


def test_an_ambiguous_search_is_refused():
    parent = PARENT + "\n\nclass Other:\n    def __init__(self, budget=5000):\n        self.budget = budget\n"
    with pytest.raises(DiffError, match="occurs 2 times"):
        apply_blocks(parent, parse_blocks(block("        self.budget = budget", "        self.budget = 2 * budget")))


def test_a_reply_without_blocks_is_no_diff():
    assert apply_reply("# full\n```python\nclass A:\n    pass\n```", PARENT).blocks == 0


def test_made_blocks_round_trip():
    child = PARENT.replace("get_random_sample(100)", "get_random_sample(400)").replace("value < best", "value <= best")
    text = make_blocks(PARENT, child)
    assert text.count("<<<<<<< SEARCH") >= 1
    assert apply_reply(text, PARENT).code.rstrip() == child.rstrip()
    assert make_blocks(PARENT, PARENT) is None


def test_a_piece_of_the_class_without_blocks_is_refused_with_a_reason():
    # a local Qwen2.5-Coder 1.5B's real answer to a fix prompt in diff mode (benchmarks/bench_search_local.py):
    # a method, no blocks; read as full code it failed as "no top-level class"
    reply = (
        "# Replace `self.budget = budget` with `self.budget = budget / 2`\n\n```python\n"
        "def __init__(self, budget=5000, pop_size=16):\n    self.budget = budget / 2\n    self.pop_size = pop_size\n"
        "```\nThis change halves the budget, which should help in finding better configurations faster.\n"
    )
    outcome = apply_reply(reply, PARENT)
    assert outcome.blocks == 0 and outcome.code is None
    assert "only a piece of the class" in outcome.error and "def __init__" in outcome.error
    assert apply_reply("# full\n```python\nclass A:\n    pass\n```", PARENT).error is None
    assert apply_reply("I cannot help with that.", PARENT).error is None  # no code: read as any reply


def test_status_counts_a_piece_of_the_class_with_the_fallbacks():
    from generator.archive import Candidate
    from generator.campaign.printing import edit_lines

    edits = [
        {"mode": "diff", "blocks": 1, "applied": True},
        {
            "mode": "diff",
            "blocks": 1,
            "applied": False,
            "reason": "block 1: its SEARCH text is not in the parent's code",
        },
        {"mode": "diff", "blocks": 0, "applied": False, "reason": "it has no SEARCH/REPLACE block, and its code ..."},
        {"mode": "diff", "blocks": 0, "applied": False},
    ]
    cands = [Candidate(f"c000{i}", 1, "refine", edit=e) for i, e in enumerate(edits, 1)]
    assert edit_lines(cands) == [
        "diff edits: 4 asked, 1 applied, 2 did not apply and were asked again for full code, 1 answered with full code"
    ]
