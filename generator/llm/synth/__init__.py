"""The offline synthesizer: writes optimizer code from a library of components, served through litellm.

It is not an LLM. It reads a generation prompt as an LLM would (operator, parents' code, error
feedback, search-space statistics), composes an optimizer from readable building blocks
(components.py, variation.py), and answers with a description line and one Python block.

    import generator.llm.synth, litellm
    generator.llm.synth.register()
    litellm.completion(model="synth/components", messages=[...], seed=1)
"""

from __future__ import annotations

MODEL = "synth/components"
_HANDLER = None


def register() -> None:
    """Make `synth/...` model strings answer in litellm.completion (idempotent), at zero cost."""
    global _HANDLER
    import litellm

    from generator.llm.synth.provider import MODELS, PROVIDER, SynthLLM

    if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
        _HANDLER = _HANDLER or SynthLLM()
        # append, never replace: other custom providers may be registered already
        litellm.custom_provider_map = list(litellm.custom_provider_map) + [
            {"provider": PROVIDER, "custom_handler": _HANDLER}
        ]
    # zero prices, so litellm's own cost accounting records $0 instead of "model not mapped"
    litellm.register_model(
        {
            f"{PROVIDER}/{m}": {
                "litellm_provider": PROVIDER,
                "mode": "chat",
                "max_tokens": 32768,
                "max_input_tokens": 1_000_000,
                "max_output_tokens": 32768,
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
            }
            for m in MODELS
        }
    )


def synthesize(prompt: str, seed: int | None = None, repeat: int = 0) -> str:
    """The reply the synthesizer gives to a prompt text (without going through litellm)."""
    from generator.llm.synth.provider import synthesize as _synthesize

    return _synthesize(prompt, seed, repeat)
