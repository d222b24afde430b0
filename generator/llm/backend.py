"""The LLM backend interface: how the models of one prefix (`synth/`, `replay/`, `local/`, a litellm
provider) are made ready, checked and asked.

`LLMClient` owns what every model shares (retries, caps, accounting, the record); a backend says only what
differs. The registry (`generator.registry`, kind "llm_backend") maps the prefix before '/' in `llm.model`
to a backend; a prefix it does not hold is a litellm provider (`openai/...`, `anthropic/...`, `ollama/...`),
served by `LITELLM`. A user's own backend subclasses `LLMBackend` and is added with
`generator.register("llm_backend", PREFIX, "module:attribute")`.
"""

from __future__ import annotations

import re

from generator import registry
from generator.errors import TunesmithError


def _litellm():
    # the package __init__ has already set LITELLM_LOCAL_MODEL_COST_MAP: litellm reads no cost map from the network
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class MissingKey(TunesmithError):
    """The model's provider needs an API key that the environment does not hold."""


class LLMBackend:
    """A family of model strings `PREFIX/NAME`. The defaults are litellm's: a hosted or local provider whose
    API key comes from the environment."""

    def missing_key(self, settings) -> str | None:
        """A one-line message when the provider needs an API key the environment lacks, else None. Called by
        the preflight checks and when a client is opened, before anything is sent or written; litellm knows
        each provider's variable names, and nothing is sent to find out."""
        model = settings.model
        litellm = _litellm()
        try:
            found = litellm.validate_environment(model=model, api_base=settings.api_base)
        except Exception:  # a provider litellm cannot check: the first call will tell
            return None
        # only credentials: a missing *_API_BASE (ollama, ...) has a default, the call finds the server
        names = [k for k in found.get("missing_keys") or [] if re.search(r"KEY|TOKEN|SECRET", k)]
        if found.get("keys_in_environment") or not names:
            return None
        which = names[0] if len(names) == 1 else f"one of {', '.join(names)}"
        local = " (a local server that checks no key takes any value)" if settings.api_base else ""
        return (
            f"llm.model = {model!r}: {which} is not set; the provider's API key comes from the environment "
            f"only: export {names[0]}=...{local}, then run again"
        )

    def check(self, settings, keys: bool = True) -> None:
        """Refuse a model that cannot answer (unknown name, not installed, missing key) with a one-line
        TunesmithError. Called by the preflight checks (`check_model`) before anything is written; `keys` is
        False when the caller brings its own completion function."""
        if keys:
            problem = self.missing_key(settings)
            if problem:
                raise MissingKey(problem)

    def open(self, settings, own_completion: bool = False):
        """Make the model answerable. Called when an `LLMClient` is made for it (and when a client makes a
        twin for another model of [llm] models), before its first request. Returns a replayer,
        `(messages, ref) -> Exchange`, that answers from records instead of asking; None to ask the model."""
        if not own_completion:
            self.check(settings)
        return None

    def request(self, settings, kwargs: dict) -> dict:
        """The keyword arguments of one `litellm.completion` request. Called before each request, retries
        included; a backend that serves the model itself points them at its server."""
        return kwargs


LITELLM = LLMBackend()


def backend_for(model: str) -> LLMBackend:
    """The backend of a model string: the registry's entry for its prefix, else litellm's."""
    prefix = model.split("/", 1)[0] if "/" in model else ""
    name = prefix if prefix in registry.names("llm_backend") else "litellm"
    backend = registry.load("llm_backend", name)
    if not isinstance(backend, LLMBackend):
        raise TunesmithError(f"llm backend {name!r}: {backend!r} is not an LLMBackend; subclass it")
    return backend
