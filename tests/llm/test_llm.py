"""LLM layer: retries, recording, caps, reuse and replay; a local fake server and litellm mock_response."""

import pytest
from support.fake_llm_server import FakeLLMServer

from generator.archive import Archive
from generator.config import LLMConfig
from generator.llm.client import CapReached, LLMClient, StopCampaign
from generator.llm.records import Exchange

MSG = [{"role": "system", "content": "You write code."}, {"role": "user", "content": "## Task\nWrite code."}]
FAKE_KEY = "sk-fake-0123456789abcdef"


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer() as srv:
        yield srv


def _client(srv, **kw):
    cfg = LLMConfig(
        model="openai/fake",
        api_base=srv.base_url,
        retries=kw.pop("retries", 2),
        backoff=0.01,
        timeout=kw.pop("timeout", 5.0),
        **kw,
    )
    recorded = []
    return LLMClient(cfg, on_exchange=recorded.append), recorded


def mock_completion(replies):
    """litellm.completion answering from a list with litellm's own offline mock_response."""
    import litellm

    it = iter(replies)

    def completion(**kw):
        return litellm.completion(**{**kw, "mock_response": next(it)})

    return completion


def test_mock_response_is_recorded_with_tokens_and_cost():
    seen = []
    client = LLMClient(
        LLMConfig(model="openai/gpt-4o-mini"),
        on_exchange=seen.append,
        completion=mock_completion(["# A\n```python\nclass A: pass\n```"]),
    )
    ex = client.complete(MSG, "generate:new", ref="c0001")
    assert ex.ok and "class A" in ex.reply and ex.ref == "c0001" and ex.id == "x0001"
    assert ex.prompt_tokens > 0 and ex.completion_tokens > 0 and ex.cost_usd > 0
    assert seen == [ex] and client.usage.calls == 1 and client.usage.cost_usd == ex.cost_usd
    assert ex.messages == MSG and ex.prompt_hash


def test_retries_on_429_500_and_timeout_then_succeeds(server):
    client, recorded = _client(server, timeout=0.5)
    server.push(("status", 429), ("status", 500))
    ex = client.complete(MSG, "t")
    assert ex.ok and ex.attempts == 3 and len(server.requests) == 3
    server.push(("slow", 2.0, "late"), ("reply", "on time"))
    ex = client.complete(MSG, "t")
    assert ex.ok and ex.reply == "on time" and ex.attempts == 2
    assert len(recorded) == 2  # one record per call, retries inside it


def test_persistent_server_error_is_recorded_not_raised(server):
    client, recorded = _client(server, retries=1)
    server.push(("status", 500), ("status", 503))
    ex = client.complete(MSG, "t")
    assert not ex.ok and ex.attempts == 2 and len(server.requests) == 2
    assert "Error" in ex.error and recorded == [ex] and not ex.fatal


def test_auth_error_stops_cleanly_and_is_recorded(server):
    client, recorded = _client(server)
    server.push(("status", 401))
    with pytest.raises(StopCampaign, match="AuthenticationError"):
        client.complete(MSG, "t")
    assert len(server.requests) == 1 and recorded[0].fatal and FAKE_KEY not in str(recorded[0].to_dict())


def test_empty_reply_and_dropped_connection(server):
    client, _ = _client(server)
    server.push(("empty",))
    assert client.complete(MSG, "t").reply == ""
    server.push(("drop",), ("reply", "after drop"))
    ex = client.complete(MSG, "t")
    assert ex.reply == "after drop" and ex.attempts == 2


def test_key_sent_to_server_but_never_recorded(server):
    client, recorded = _client(server)
    server.push(("reply", f"your key is {FAKE_KEY}"))
    ex = client.complete(MSG, "t")
    assert server.headers[-1]["Authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in str(ex.to_dict()) and "***" in ex.reply


def test_max_calls_cap_holds():
    client = LLMClient(
        LLMConfig(model="openai/gpt-4o-mini", caps={"max_calls": 2}), completion=mock_completion(["a", "b", "c"])
    )
    client.complete(MSG, "t")
    client.complete(MSG, "t")
    with pytest.raises(CapReached, match="llm.caps.max_calls = 2"):
        client.complete(MSG, "t")
    assert client.usage.calls == 2


def test_token_and_usd_caps_never_exceeded():
    # worst case per call: prompt + max_tokens reply; the cap refuses a call that could pass it
    cfg = LLMConfig(model="openai/gpt-4o-mini", max_tokens=100, caps={"max_tokens": 250})
    client = LLMClient(cfg, completion=mock_completion(["x"] * 10))
    with pytest.raises(CapReached, match="max_tokens = 250"):
        for _ in range(10):
            client.complete(MSG, "t")
    assert 0 < client.usage.tokens <= 250
    cfg = LLMConfig(model="openai/gpt-4o-mini", max_tokens=1000, caps={"max_usd": 0.001})
    client = LLMClient(cfg, completion=mock_completion(["x"] * 100))
    with pytest.raises(CapReached, match="max_usd"):
        for _ in range(100):
            client.complete(MSG, "t")
    assert 0 < client.usage.cost_usd <= 0.001


def test_recorded_answer_is_reused_not_asked_again():
    old = Exchange(
        id="x0001",
        purpose="t",
        model="openai/gpt-4o-mini",
        messages=MSG,
        reply="kept",
        ref="c0001",
        prompt_hash=__import__("generator.llm.client", fromlist=["prompt_hash"]).prompt_hash(MSG),
    )

    def fail(**kw):
        raise AssertionError("the LLM must not be asked again")

    client = LLMClient(LLMConfig(model="openai/gpt-4o-mini"), recorded=[old], completion=fail)
    assert client.complete(MSG, "t", ref="c0001").reply == "kept"


def test_replay_serves_a_run_in_order_then_stops(tmp_path):
    archive = Archive.create(tmp_path / "run", {"x": 1})
    for i, ref in enumerate(["c0001", "c0002", None], 1):
        archive.append_exchange(
            Exchange(
                id=f"x{i:04d}",
                purpose="t",
                model="m",
                messages=MSG,
                reply=f"r{i}",
                ref=ref,
                prompt_tokens=5,
                completion_tokens=7,
                cost_usd=0.5,
            )
        )
    client = LLMClient(LLMConfig(model=f"replay/{tmp_path / 'run'}"))
    assert client.complete(MSG, "t", ref="c0002").reply == "r2"  # by candidate id
    assert client.complete(MSG, "t").reply == "r1"  # the rest in order
    assert client.complete(MSG, "t").reply == "r3"
    assert client.usage.cost_usd == 0 and client.usage.completion_tokens == 21
    with pytest.raises(StopCampaign, match="all 3 recorded exchanges"):
        client.complete(MSG, "t")
