"""The offline synthesizer served as a litellm custom provider: prompt in, optimizer code out.

`litellm.completion(model="synth/components", messages=[...], seed=N)` reaches `SynthLLM.completion`,
which reads the prompt (parse.py), applies the operator it asks for (operators.py), writes the
code (compose.py) and answers like an LLM: a one-line description and one fenced Python block.

Determinism: the answer is a function of (seed, prompt, how many times this process was already
asked exactly this), so a campaign replays identically, while asking the same prompt twice (two
refinements of one parent in a generation) still gives two different answers.
Tokens are counted approximately (4 characters per token, the usual rule of thumb for
OpenAI-style tokenizers on English and code); the cost is zero.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections import Counter

from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError
from litellm.types.utils import ModelResponse, Usage

from generator.llm.edits import make_blocks
from generator.llm.synth.compose import render
from generator.llm.synth.operators import apply
from generator.llm.synth.parse import parse_prompt
from generator.llm.synth.proposals import is_proposal_prompt, propose

PROVIDER = "synth"
MODELS = ("components",)  # model strings: synth/components
CHARS_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """Approximate token count of a text (4 characters per token)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_text(messages: list[dict]) -> str:
    """The prompt as one text: every message's content, in order."""
    parts = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
        if isinstance(content, list):  # OpenAI-style content parts
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(content or "")
    return "\n\n".join(parts)


def synthesize(text: str, seed: int | None = None, repeat: int = 0) -> str:
    """The synthesizer's reply to a prompt: '# Name: description' and one ```python block."""
    if is_proposal_prompt(text):  # an llm_guided prompt asks for configurations as JSON, not for code
        return propose(text, seed, repeat)
    request = parse_prompt(text)
    made: set[str] = set()
    for r in range(repeat + 1):  # the designs of earlier repeats, so that this one differs from them
        digest = hashlib.sha256(f"{seed}|{r}|{text}".encode()).digest()
        design = apply(request, random.Random(int.from_bytes(digest[:8], "big")), avoid=made)
        made.add(design.composition.normalised().to_json())
    if design.source is not None:  # foreign code, patched in place
        head, source = f"# Patched parent code: {'; '.join(design.notes)}", design.source
    else:
        name, description, source = render(design.composition, design.rationale, design.notes)
        head = f"# {name}: {description}" + (f" ({'; '.join(design.notes)})" if design.notes else "")
    if request.answer == "diff" and request.parents:  # asked for SEARCH/REPLACE blocks on Parent 1
        blocks = make_blocks(request.parents[0].code, source)
        if blocks is not None and len(blocks) < len(source):  # a rewrite (new scheme) is answered in full
            return f"{head}\n\n{blocks}\n"
    return f"{head}\n\n```python\n{source.rstrip()}\n```\n"


class SynthLLM(CustomLLM):
    """litellm's view of the offline synthesizer."""

    def __init__(self) -> None:
        super().__init__()
        self._asked: Counter = Counter()
        self._lock = threading.Lock()

    def _answer(
        self, model: str, messages: list, model_response: ModelResponse, optional_params: dict
    ) -> ModelResponse:
        variant = model.split("/", 1)[-1]
        if variant not in MODELS:
            raise CustomLLMError(
                status_code=400,
                message=f"unknown offline synthesizer model {model!r}; "
                f"use one of {[f'{PROVIDER}/{m}' for m in MODELS]}",
            )
        seed = (optional_params or {}).get("seed")
        text = prompt_text(messages)
        with self._lock:
            key = (seed, hashlib.sha256(text.encode()).hexdigest())
            repeat = self._asked[key]
            self._asked[key] += 1
        reply = synthesize(text, seed, repeat)
        model_response.choices[0].message.content = reply
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{variant}"
        model_response.created = int(time.time())
        prompt_tokens, completion_tokens = approx_tokens(text), approx_tokens(reply)
        model_response.usage = Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )
        return model_response

    def completion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        logger_fn=None,
        headers={},  # noqa: B006 (litellm's signature)
        timeout=None,
        client=None,
    ):
        """Answer a chat completion request."""
        return self._answer(model, messages, model_response, optional_params)

    async def acompletion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        logger_fn=None,
        headers={},  # noqa: B006 (litellm's signature)
        timeout=None,
        client=None,
    ):
        """Answer an async chat completion request (the work is CPU-only and quick)."""
        return self._answer(model, messages, model_response, optional_params)
