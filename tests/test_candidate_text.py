"""Issue 23, what a candidate writes is text, never a crash or a command: code nested too deeply to
compile is a `syntax` failure (item 8), what it says is shown with control characters escaped
(item 11) and capped before it is recorded, printed or put into a prompt (item 14)."""

from __future__ import annotations

import pytest

from fake_llm_server import FakeLLMServer  # noqa: F401 (the campaign fixtures below need it)
from generator.archive import Archive
from generator.campaign.loop import run_campaign
from generator.campaign.novelty import Shape
from generator.llm.prompts import extract_reply, normalise_code
from generator.sandbox.checks import inspect_source
from generator.scoring.fitness import CandidateError, Fitness
from test_campaign import fake_evaluate, make_config, reply_for, server  # noqa: F401 (fixtures)

DEEP = 3000  # unary minus signs: compile() and ast.parse() raise RecursionError
NESTED = 1000  # parses and compiles, but recursive visitors (ast.unparse, NodeVisitor) fail


def checked_evaluate(code, tasks, repeats, seed, timeout, workers):
    """The real static checks, then the campaign tests' deterministic stand-in for the sandbox."""
    found = inspect_source(code)
    if isinstance(found, CandidateError):
        return Fitness(None, {}, 0.0, found)
    return fake_evaluate(code, tasks, repeats, seed, timeout, workers)


def _optimizer(expr: str) -> str:
    return ("class Deep:\n    def __call__(self, func, searchspace):\n"
            f"        x = {expr}\n        func(searchspace.get_random_sample(1)[0])\n")


def test_code_too_deep_to_compile_is_a_syntax_failure():
    """Item 8: RecursionError in compile() is the candidate's syntax error, not a traceback."""
    found = inspect_source(_optimizer("-" * DEEP + "1"))
    assert isinstance(found, CandidateError) and found.kind == "syntax"
    assert "nested too deeply" in found.message


def test_deep_hyperparameter_literal_is_an_interface_failure():
    source = ("class Deep:\n    hyperparameters = {'a': {'type': 'int', 'low': 0, 'high': 9, 'default': "
              + "-" * NESTED + "1}}\n    def __init__(self, a=1):\n        self.a = a\n"
              "    def __call__(self, func, searchspace):\n        pass\n")
    found = inspect_source(source)
    assert isinstance(found, CandidateError) and found.kind == "interface"


@pytest.mark.parametrize("depth", [NESTED, DEEP])
def test_reply_extraction_and_fingerprints_survive_deep_code(depth):
    """Item 8: reply extraction, duplicate detection and novelty do not crash on deep code."""
    code = _optimizer("-" * depth + "1")
    reply = extract_reply(f"# Deep: minus signs\n```python\n{code}```\n")
    assert reply.code is not None and "class Deep" in reply.code
    assert isinstance(normalise_code(reply.code), str)
    Shape.of(reply.code)  # a shape or None, never an exception


def test_campaign_records_deep_code_as_syntax_and_goes_on(server, make_config):  # noqa: F811
    """Item 8: a reply with 3,000 unary minus signs fails that candidate; the campaign finishes."""
    cfg = make_config(server, budget=4, concurrency=1)
    deep = f"# Deep: minus signs\n```python\n{_optimizer('-' * DEEP + '1')}```\n"
    nested = f"# Nested: minus signs\n```python\n{_optimizer('-' * NESTED + '1')}```\n"
    server.push(("reply", deep), ("reply", nested))
    summary = run_campaign(cfg, progress=False, evaluate=checked_evaluate)
    assert summary.state == "finished" and summary.candidates == 4
    cands = Archive.open(cfg.parent / "run").candidates()
    assert cands[0].error["kind"] == "syntax" and "nested too deeply" in cands[0].error["message"]
    assert cands[1].code_path and cands[1].error is None  # compiles: it is evaluated like any other
