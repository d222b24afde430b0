"""`local/NAME`: a pinned code model served by llama.cpp on loopback (registry "llm_backend", name "local")."""

from __future__ import annotations

from generator.errors import TunesmithError
from generator.llm.backend import LLMBackend


class LocalBackend(LLMBackend):
    """Our own OpenAI-compatible server (generator/llm/local_server.py), started on the first request."""

    def missing_key(self, settings) -> str | None:
        return None

    def check(self, settings, keys: bool = True) -> None:
        from generator.llm.local_models import require_installed

        try:
            require_installed(settings.model)
        except TunesmithError as exc:
            raise TunesmithError(f"llm.model = {settings.model!r}: {exc}") from None

    def open(self, settings, own_completion: bool = False):
        from generator.llm.local_models import get_model

        get_model(settings.model)  # an unknown name fails now, with the names there are; the server starts on first use
        return None

    def request(self, settings, kwargs: dict) -> dict:
        from generator.llm.local_server import server_for

        loc = settings.local
        server = server_for(settings.model, loc.threads, loc.context, loc.startup_timeout)
        return {
            **kwargs,
            "model": f"openai/{server.model.alias}",
            "api_base": server.api_base,
            "api_key": "local-no-key",
        }


BACKEND = LocalBackend()
