"""`synth/NAME`: the offline synthesizer as an LLM backend (registry "llm_backend", name "synth")."""

from __future__ import annotations

from generator.errors import TunesmithError
from generator.llm.backend import LLMBackend


class SynthBackend(LLMBackend):
    """Answered in this process by a litellm custom provider, at zero cost; no key, no network."""

    def missing_key(self, settings) -> str | None:
        return None

    def check(self, settings, keys: bool = True) -> None:
        from generator.llm.synth.provider import MODELS, PROVIDER

        if settings.model.split("/", 1)[1] not in MODELS:
            names = ", ".join(f"{PROVIDER}/{m}" for m in MODELS)
            raise TunesmithError(f"llm.model = {settings.model!r}: no such offline synthesizer; use {names}")

    def open(self, settings, own_completion: bool = False):
        from generator.llm.synth import register

        register()
        return None


BACKEND = SynthBackend()
