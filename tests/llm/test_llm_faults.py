"""The LLM layer under faults (issue 15): caps count every request sent, retries included (item 7);
a missing API key is named before anything is sent or written (item 11)."""

from __future__ import annotations

import pytest
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import FAKE_KEY, write_campaign

from generator.config import LLMConfig
from generator.llm.client import CapReached, LLMClient

MSG = [{"role": "system", "content": "You write code."}, {"role": "user", "content": "## Task\nWrite code. " * 50}]


@pytest.fixture()
def hanging(monkeypatch):
    """A server that answers every request too late (a hung provider)."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer(delay=3.0) as srv:
        yield srv


def test_retries_count_toward_max_calls_and_timeouts_toward_tokens(hanging):
    cfg = LLMConfig(
        model="openai/fake", api_base=hanging.base_url, retries=3, backoff=0.01, timeout=0.3, caps={"max_calls": 3}
    )
    seen = []
    client = LLMClient(cfg, on_exchange=seen.append)
    with pytest.raises(CapReached, match=r"max_calls = 3 reached \(3 requests sent"):
        for _ in range(3):  # as a campaign does: three failed calls in a row stop it
            client.complete(MSG, "t")
    assert len(hanging.requests) == 3  # not 3 calls x 4 attempts = 12
    assert client.usage.calls == 3 and sum(ex.attempts for ex in seen) == 3
    ex = seen[0]
    assert "Timeout" in ex.error and "not retried: llm.caps.max_calls" in ex.error
    # the server may have read (and billed) each prompt it never answered: counted, and marked as estimated
    assert ex.prompt_tokens > 0 and ex.estimated_prompt_tokens == ex.prompt_tokens
    assert client.usage.prompt_tokens == ex.prompt_tokens and client.usage.estimated_prompt_tokens == ex.prompt_tokens


def test_campaign_with_a_hung_server_sends_no_more_requests_than_max_calls(hanging, tmp_path, hub_dir, monkeypatch):
    from generator.campaign.printing import format_summary
    from generator.campaign.run import run_campaign

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    cfg = write_campaign(
        tmp_path / "c.toml",
        hanging.base_url,
        tmp_path / "run",
        budget=6,
        retries=3,
        timeout=0.3,
        llm="[llm.caps]\nmax_calls = 3\n",
    )
    summary = run_campaign(cfg, progress=False)
    assert summary.state == "stopped" and len(hanging.requests) == 3, summary.reason
    assert "3 calls" in format_summary(summary) and "estimated" in format_summary(summary)


def test_missing_api_key_is_named_before_anything_is_sent_or_written(tmp_path, hub_dir, monkeypatch, capsys):
    from generator.cli import main
    from generator.errors import TunesmithError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    with pytest.raises(TunesmithError, match=r"openai/gpt-4o-mini.*OPENAI_API_KEY is not set"):
        LLMClient(LLMConfig(model="openai/gpt-4o-mini"))
    cfg = write_campaign(tmp_path / "c.toml", "", tmp_path / "run", budget=2)
    cfg.write_text(
        cfg.read_text().replace('model = "openai/fake"', 'model = "openai/gpt-4o-mini"').replace('api_base = ""\n', "")
    )
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "OPENAI_API_KEY" in err and "export OPENAI_API_KEY=" in err, err
    assert not (tmp_path / "run").exists()
    # models that need no key are not refused
    LLMClient(LLMConfig(model="synth/components"))
    LLMClient(LLMConfig(model="ollama/llama3"))
