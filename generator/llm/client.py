"""LLM calls through litellm: retries, token and cost accounting, hard caps, record and replay.

`LLMClient.complete(messages, purpose, ref)` returns an `Exchange`: the prompt, the reply (or the
error), tokens, cost and latency. Every exchange goes to `on_exchange` (the archive) before the
caller sees it. Any litellm model string works (`openai/gpt-4o-mini`, `anthropic/...`,
`ollama/...`, `openai/<name>` with `api_base` for vLLM or any OpenAI-compatible server);
`local/NAME` is a pinned code model served by llama.cpp on loopback (generator/llm/local_server.py);
`synth/components` is the offline synthesizer; `replay/RUN_DIR` re-serves the exchanges of an
earlier run in order. API keys are read by litellm from the environment and never recorded.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable

from generator.errors import TunesmithError
from generator.llm.backend import MissingKey, _litellm, backend_for
from generator.llm.records import Exchange, Usage, prompt_hash

# litellm exception classes worth another try: the provider is busy, down or slow. Anything else
# (bad key, unknown model, prompt too long) will fail again the same way, so it stops the campaign.
RETRYABLE = (
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "APIConnectionError",
    "Timeout",
    "APIError",
)


def _retryable(litellm, exc: Exception) -> bool:
    return isinstance(exc, tuple(getattr(litellm, n) for n in RETRYABLE)) and not isinstance(
        exc, litellm.BadRequestError
    )


class StopCampaign(TunesmithError):
    """The campaign must stop cleanly (a cap is reached, the LLM refuses us, the replay ran out)."""


class CapReached(StopCampaign):
    """A token, cost or call cap of [llm.caps] would be exceeded by the next call."""


def _secrets() -> list[str]:
    """Values of environment variables that look like credentials (to scrub from records)."""
    pat = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)
    return [v for k, v in os.environ.items() if pat.search(k) and len(v) >= 8]


def scrub(text: str | None) -> str | None:
    """Replace any credential from the environment that appears in a string by '***'."""
    if not text:
        return text
    for secret in _secrets():
        text = text.replace(secret, "***")
    return text


def _prompt_tokens(litellm, model: str, messages: list[dict]) -> int:
    """The prompt's size in tokens, by the model's tokenizer where litellm knows it (else ~3 chars a token)."""
    try:
        return int(litellm.token_counter(model=model, messages=messages))
    except Exception:
        return sum(len(m.get("content") or "") for m in messages) // 3


def _cost(litellm, model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD for a token count; 0 for models without a known price (local servers, synth)."""
    try:
        p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return float(p + c)
    except Exception:  # unknown model: litellm raises; a local server costs nothing we can know
        return 0.0


def missing_key(settings) -> str | None:
    """A one-line message when the model's provider needs a key the environment lacks, else None."""
    return backend_for(settings.model).missing_key(settings)


def check_key(settings) -> None:
    """Refuse a model whose API key is missing, before anything is sent or written."""
    problem = missing_key(settings)
    if problem:
        raise MissingKey(problem)


def check_model(settings, keys: bool = True) -> None:
    """Refuse a model that cannot answer (unknown synth/ name, local/ model not installed, missing key),
    before anything is sent or written; `keys=False` when the caller brings its own completion."""
    backend_for(settings.model).check(settings, keys)


class LLMClient:
    """Asks the configured model, with retries, caps and recording; reusable by any room."""

    def __init__(
        self,
        settings,
        on_exchange: Callable[[Exchange], None] | None = None,
        recorded: list[Exchange] | None = None,
        usage: Usage | None = None,
        completion: Callable | None = None,
        first_id: int = 1,
    ):
        self.settings = settings  # generator.config.LLMConfig
        self.on_exchange = on_exchange
        self.usage = usage or Usage()
        # answers already recorded for a ref (resume): reused instead of asking again
        self.recorded = {ex.ref: ex for ex in (recorded or []) if ex.ref and ex.ok}
        self._completion = completion  # tests inject litellm.completion with mock_response
        self._ids = [first_id]  # one counter for this client and its for_model twins
        self._replay = None
        self._sleep = time.sleep
        self._held = Usage()  # worst cases of the calls in flight (see reserve)
        self._lock = threading.RLock()
        self._id_lock = threading.Lock()
        self._replay = backend_for(settings.model).open(settings, own_completion=completion is not None)
        self._cap_stop: CapReached | None = None  # a cap cut a call's retries short: stop after recording it

    def reserve(self, messages: list[dict], ref: str | None = None) -> Usage:
        """Hold the worst case of one call (a full-length reply) against the caps until it completes.

        Calls in flight together each hold their worst case, so no interleaving of replies can take
        the campaign past a cap; raises CapReached when the call could pass one. Free (nothing held)
        for replays and for a question answered before a crash."""
        old = self.recorded.get(ref) if ref else None
        if self._replay is not None or (old is not None and old.prompt_hash == prompt_hash(messages)):
            return Usage(calls=0)
        with self._lock:
            hold = self._check_caps(messages)
            self._held.add_usage(hold)
        return hold

    def complete(
        self,
        messages: list[dict],
        purpose: str,
        ref: str | None = None,
        seed: int | None = None,
        reservation: Usage | None = None,
    ) -> Exchange:
        """Ask the model once (with retries); the exchange is recorded before it is returned.

        `seed` (default [llm] seed) goes to providers that take one; vary it per call so that a
        deterministic model (the synthesizer, temperature 0) does not answer a repeated prompt alike.
        `reservation` is what `reserve` returned for this call (threads may call concurrently);
        without one the caps are checked here.
        """
        phash = prompt_hash(messages)
        if reservation is None:
            reservation = self.reserve(messages, ref)
        try:
            old = self.recorded.get(ref) if ref else None
            if old is not None and old.prompt_hash == phash:
                return old  # answered before a crash: never pay twice for the same question
            if self._replay is not None:
                with self._lock:  # the replay serves recorded exchanges in order
                    ex = self._replayed(messages, purpose, ref, phash)
            else:
                ex = self._ask(messages, purpose, ref, phash, seed if seed is not None else self.settings.seed)
            with self._lock:
                self._held.add_usage(reservation, -1)
                reservation = None
                self.usage.add(ex)
                if self.on_exchange:
                    self.on_exchange(ex)
        finally:
            if reservation is not None:
                with self._lock:
                    self._held.add_usage(reservation, -1)
        if ex.fatal:
            raise StopCampaign(f"llm ({self.settings.model}): {ex.error}")
        if self._cap_stop is not None:
            stop, self._cap_stop = self._cap_stop, None
            raise stop
        return ex

    def _new_id(self) -> str:
        with self._id_lock:
            xid = f"x{self._ids[0]:04d}"
            self._ids[0] += 1
        return xid

    def for_model(self, model: str) -> LLMClient:
        """A client that asks `model` ([llm] models) and shares this one's caps, usage, ids and record."""
        import copy

        if model == self.settings.model:
            return self
        twin = copy.copy(self)  # shallow: usage, holds, locks, recorded answers and the id counter are shared
        twin.settings = self.settings.model_copy(update={"model": model})
        if self._replay is None:  # a twin asks its own model (synth/ registers its provider)
            backend_for(model).open(twin.settings, own_completion=True)
        return twin

    def _replayed(self, messages, purpose, ref, phash) -> Exchange:
        old = self._replay(messages, ref)
        return Exchange(
            id=self._new_id(),
            purpose=purpose,
            model=self.settings.model,
            messages=messages,
            reply=old.reply,
            ref=ref,
            prompt_tokens=old.prompt_tokens,
            completion_tokens=old.completion_tokens,
            cost_usd=0.0,
            attempts=1,
            error=old.error,
            fatal=old.fatal,
            finish_reason=old.finish_reason,
            prompt_hash=phash,
            created=time.time(),
        )

    def _check_caps(self, messages: list[dict], pending: Exchange | None = None) -> Usage:
        """Refuse a request that could take the campaign past a cap (worst case: a full-length reply),
        counting the worst cases held by calls in flight; returns this call's worst case.

        `pending` is a call in progress that wants to retry: the requests it has sent count too (a
        retry is a request), and its own reservation, already held, is not counted twice.
        """
        caps, s = self.settings.caps, self.settings
        u = Usage(**{k: v for k, v in self.usage.__dict__.items()})
        held = Usage(**{k: v for k, v in self._held.__dict__.items()})
        if pending is not None:
            u.add(pending)
            held.calls -= max(1, pending.attempts)  # this call's reservation and retries, counted in `u` now
        hold = Usage(calls=1)
        if caps.max_calls is not None and u.calls + held.calls >= caps.max_calls:
            raise CapReached(
                f"llm.caps.max_calls = {caps.max_calls} reached ({u.calls} requests sent, retries "
                "included"
                + (f", {held.calls} calls in flight" if held.calls else "")
                + "); raise it in [llm.caps] and resume the run"
            )
        if caps.max_tokens is None and caps.max_usd is None:
            return hold
        litellm = _litellm()
        prompt = _prompt_tokens(litellm, s.model, messages)
        worst = prompt + s.max_tokens
        hold.prompt_tokens, hold.completion_tokens = prompt, s.max_tokens
        if pending is not None:  # the call's own reservation is this same worst case
            held.prompt_tokens -= prompt
            held.completion_tokens -= s.max_tokens
        used = u.tokens + held.tokens
        if caps.max_tokens is not None and used + worst > caps.max_tokens:
            raise CapReached(
                f"llm.caps.max_tokens = {caps.max_tokens} would be exceeded ({u.tokens} used"
                + (f", {held.tokens} held by calls in flight" if held.tokens else "")
                + f", next call up to {worst}); raise it in [llm.caps] and resume the run"
            )
        if caps.max_usd is not None:
            worst_usd = _cost(litellm, s.model, prompt, s.max_tokens)
            hold.cost_usd = worst_usd
            if pending is not None:
                held.cost_usd -= worst_usd
            if u.cost_usd + held.cost_usd + worst_usd > caps.max_usd:
                raise CapReached(
                    f"llm.caps.max_usd = {caps.max_usd} would be exceeded ({u.cost_usd:.4f} USD spent"
                    + (f", {held.cost_usd:.4f} held by calls in flight" if held.cost_usd else "")
                    + f", next call up to {worst_usd:.4f}); raise it in [llm.caps] and resume the run"
                )
        return hold

    def _kwargs(self, messages: list[dict], seed: int | None) -> dict:
        s = self.settings
        kw = dict(
            model=s.model,
            messages=messages,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            timeout=s.timeout_s,
            num_retries=0,
            drop_params=True,
        )
        if s.api_base:
            kw["api_base"] = s.api_base
        kw = backend_for(s.model).request(s, kw)  # local/: our own llama.cpp server, OpenAI-compatible, on loopback
        if seed is not None:
            kw["seed"] = seed
        kw.update(s.params)
        return kw

    def _ask(self, messages, purpose, ref, phash, seed) -> Exchange:
        litellm = _litellm()
        completion = self._completion or litellm.completion
        s = self.settings
        ex = Exchange(
            id=self._new_id(),
            purpose=purpose,
            model=s.model,
            messages=messages,
            ref=ref,
            prompt_hash=phash,
            created=time.time(),
        )
        start = time.monotonic()
        try:
            self._attempts(ex, completion, litellm, messages, seed)
        finally:
            with self._lock:  # the retries this call held against the caps are in its exchange now
                self._held.calls -= max(0, ex.attempts - 1)
        ex.latency_s = time.monotonic() - start
        return ex

    def _attempts(self, ex: Exchange, completion, litellm, messages, seed) -> None:
        s = self.settings
        delay = s.backoff_s
        for attempt in range(1, s.retries + 2):
            if attempt > 1:  # a retry is a request like any other: the caps decide whether it is sent
                try:
                    with self._lock:  # a consistent view of what was spent and what calls in flight hold
                        self._check_caps(messages, pending=ex)
                        self._held.calls += 1  # other calls in flight see this request before it is sent
                except CapReached as cap:
                    ex.error = f"{ex.error}; not retried: {cap}"
                    self._cap_stop = cap
                    break
            ex.attempts = attempt
            try:
                response = completion(**self._kwargs(messages, seed))
            except Exception as exc:  # litellm maps every provider's errors onto its own classes
                name = type(exc).__name__
                ex.error = scrub(f"{name}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500])
                if isinstance(exc, litellm.Timeout):
                    # the provider may have read (and billed) the prompt; no usage came back: estimate it
                    tokens = _prompt_tokens(litellm, s.model, messages)
                    ex.prompt_tokens += tokens
                    ex.estimated_prompt_tokens += tokens
                    ex.cost_usd += _cost(litellm, s.model, tokens, 0)
                retryable = _retryable(litellm, exc)
                if retryable and attempt <= s.retries:
                    self._sleep(min(delay, 60.0))
                    delay *= 2
                    continue
                ex.fatal = not retryable
                break
            else:
                self._fill(ex, litellm, response)
                break

    def _fill(self, ex: Exchange, litellm, response) -> None:
        ex.error = None
        choice = response.choices[0]
        ex.reply = scrub(choice.message.content or "")
        ex.finish_reason = getattr(choice, "finish_reason", None)
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ex.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if cost is None:
            cost = _cost(litellm, ex.model, prompt, ex.completion_tokens)
        # on top of what earlier timed-out attempts of this call were estimated to cost
        ex.prompt_tokens += prompt
        ex.cost_usd += float(cost or 0.0)
