"""The [llm] section: which model writes the code, how it is called, its caps and local server."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from generator.config.base import Section, marks


class LLMCaps(Section):
    """Hard limits over the whole campaign; the campaign stops cleanly before passing one."""

    max_calls: int | None = Field(
        None,
        ge=0,
        strict=True,
        description="requests sent in the whole run, retries included; a request that could pass it is not sent and the campaign stops cleanly (raise it and resume)",
    )
    max_tokens: int | None = Field(
        None,
        ge=0,
        strict=True,
        description="tokens in the whole run; each request is counted as its prompt plus a full-length reply before it is sent, so the cap is never exceeded",
    )
    max_usd: float | None = Field(
        None,
        ge=0,
        strict=True,
        description="US dollars in the whole run, priced by litellm; counted like max_tokens (worst case before sending), so it is never exceeded. Set it for every hosted model",
    )


class LocalLLMConfig(Section):
    """The llama.cpp server Tunesmith starts for `model = "local/NAME"` (see `tunesmith llm install`)."""

    threads: int = Field(
        1,
        ge=1,
        le=256,
        strict=True,
        description="CPU threads of the llama.cpp server, for generation and prompt batches (on 2 loaded cores two threads were slower than one)",
    )
    context: int = Field(
        8192, ge=512, strict=True, description="tokens of context (prompt plus reply) the server keeps"
    )
    startup_timeout: float = Field(
        600.0, gt=0, strict=True, description="seconds to load the model and answer a first request"
    )


LOCAL_TIMEOUT_S = 900.0  # a CPU model takes minutes for a long prompt; a hosted model's 120 s would cut it off


class ModelChoice(Section):
    """One of several models ([[llm.models]]): drawn by weight, or by the bandit with its price."""

    model: str = Field(description="a litellm model string, as [llm] model")
    weight: float = Field(1.0, ge=0, description="relative share of requests when the bandit is off")
    price: float = Field(1.0, gt=0, description="relative cost per token (the bandit's reward is gain per cost)")


class LLMConfig(Section):
    """Which model writes the code and how it is called (any litellm model string)."""

    model: str = Field(
        "synth/components",
        description="any litellm model string: 'openai/gpt-4o-mini', 'anthropic/claude-...', 'ollama/llama3', 'openai/NAME' with api_base for vLLM or any OpenAI-compatible server; 'synth/components' = the offline synthesizer (not an LLM); 'local/NAME' = a local code model Tunesmith starts; 'replay/RUN_DIR' = the recorded replies of an earlier run",
    )
    api_base: str | None = Field(
        None,
        description="server URL for self-hosted models (vLLM, Ollama, any OpenAI-compatible server)",
        json_schema_extra=marks(resumable=True),
    )
    temperature: float = Field(0.8, ge=0, le=2, strict=True, description="sampling temperature of each request")
    max_tokens: int = Field(4096, gt=0, strict=True, description="longest reply per request, in tokens")
    timeout: float = Field(
        120.0,
        gt=0,
        strict=True,
        description="seconds per request (900 for local/ models unless set)",
        json_schema_extra=marks(resumable=True),
    )
    retries: int = Field(
        3,
        ge=0,
        le=20,
        strict=True,
        description="retries of a request after a rate limit (429), server error (5xx), connection error or timeout; other errors (bad key, unknown model) stop the campaign at once",
        json_schema_extra=marks(resumable=True),
    )
    backoff: float = Field(
        2.0,
        ge=0,
        strict=True,
        description="seconds before the first retry, doubled each time",
        json_schema_extra=marks(resumable=True),
    )
    seed: int | None = Field(
        None,
        strict=True,
        description="passed to providers that take one, plus the candidate number (so repeated prompts differ)",
    )
    max_consecutive_errors: int = Field(
        3,
        ge=1,
        strict=True,
        description="stop cleanly (resumable) after this many requests in a row got no answer even after retries; an unanswered request costs no budget",
    )
    concurrency: int = Field(
        4,
        ge=1,
        le=64,
        strict=True,
        description="requests in flight together (1 for local/ models unless set); the run is the same at any value; 1 = one candidate at a time",
        json_schema_extra=marks(resumable=True),
    )
    params: dict = Field(
        default_factory=dict,
        description="extra keyword arguments for litellm.completion, passed as they are (never API keys)",
    )
    caps: LLMCaps = Field(default_factory=LLMCaps, json_schema_extra=marks(resumable=True))
    local: LocalLLMConfig = Field(default_factory=LocalLLMConfig)
    models: list[ModelChoice] = Field(
        default_factory=list,
        description="several models ([[llm.models]] tables: model, weight, price), drawn by weight or by the bandit; empty: `model` alone",
        json_schema_extra=marks(legacy=[]),
    )

    @model_validator(mode="after")
    def _local_timeout(self):
        if self.model.startswith("local/") and "timeout" not in self.model_fields_set:
            self.timeout = LOCAL_TIMEOUT_S
        if self.model.startswith("local/") and "concurrency" not in self.model_fields_set:
            self.concurrency = 1  # the local server answers one request at a time; queued ones would time out
        return self

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        if "/" not in v and not v.startswith(("gpt", "o1", "o3", "o4", "claude")):
            raise ValueError(
                "give a litellm model string such as 'openai/gpt-4o-mini', 'ollama/llama3', "
                "'synth/components', 'local/qwen2.5-coder-1.5b' or 'replay/RUN_DIR'"
            )
        return v

    @field_validator("params")
    @classmethod
    def _no_keys_in_file(cls, v: dict) -> dict:
        bad = [k for k in v if re.search(r"key|token|secret|password", k, re.I) and k != "max_completion_tokens"]
        if bad:
            raise ValueError(
                f"{bad} look like credentials; API keys come from the environment only "
                "(e.g. OPENAI_API_KEY), never from the campaign file"
            )
        return v

    @property
    def timeout_s(self) -> float:
        return self.timeout

    @property
    def backoff_s(self) -> float:
        return self.backoff
