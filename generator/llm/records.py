"""What an LLM call leaves behind: the recorded Exchange, the campaign's Usage, and reading a run's
exchanges.jsonl back (for resume, replay and review)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from generator.jsonl import read_lines


@dataclass
class Exchange:
    """One LLM call as recorded in the run directory."""

    id: str
    purpose: str  # e.g. "generate:refine", "llm_guided"
    model: str
    messages: list[dict]
    reply: str | None = None
    ref: str | None = None  # the candidate (or other object) this call served
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1  # requests sent (each one counts toward llm.caps.max_calls)
    estimated_prompt_tokens: int = 0  # of prompt_tokens: estimated for timed-out requests (no usage came back)
    error: str | None = None  # "ErrorClass: message" when no reply came
    fatal: bool = False  # the error stopped the campaign (not retryable)
    finish_reason: str | None = None
    prompt_hash: str = ""
    created: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.reply is not None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Exchange:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Usage:
    """What the campaign has spent on LLM calls so far."""

    calls: int = 0  # requests sent, retries included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    estimated_prompt_tokens: int = 0  # of prompt_tokens: requests that timed out, estimated

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, ex: Exchange) -> None:
        self.calls += max(1, ex.attempts)
        self.estimated_prompt_tokens += ex.estimated_prompt_tokens
        self.prompt_tokens += ex.prompt_tokens
        self.completion_tokens += ex.completion_tokens
        self.cost_usd += ex.cost_usd

    def add_usage(self, other: Usage, sign: int = 1) -> None:
        """Add (or with sign -1 take away) another Usage: reservations of calls in flight."""
        self.calls += sign * other.calls
        self.prompt_tokens += sign * other.prompt_tokens
        self.completion_tokens += sign * other.completion_tokens
        self.cost_usd += sign * other.cost_usd

    def to_dict(self) -> dict:
        return {**asdict(self), "tokens": self.tokens}


def prompt_hash(messages: list[dict]) -> str:
    """Stable hash of a prompt, to check that a recorded reply answers the same question."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


EXCHANGES_FILE = "exchanges.jsonl"  # in a run directory, one JSON object per call


def read_exchanges(run_dir) -> list[Exchange]:
    """The exchanges recorded in RUN_DIR/exchanges.jsonl, in call order."""
    return read_lines(Path(run_dir) / EXCHANGES_FILE, Exchange.from_dict)
