"""The declared interface between the campaign and its generation maker: `Campaign` satisfies
`CampaignPort`, and `InFlight` (with `Speculation`) uses nothing of the campaign outside it."""

import ast
import inspect
from pathlib import Path

import pytest
from support.campaign_fakes import FAKE_KEY, fake_evaluate, reply_for
from support.fake_llm_server import FakeLLMServer

from generator.archive import Archive
from generator.campaign import inflight, speculation
from generator.campaign.loop import Campaign
from generator.campaign.port import CampaignPort


def port_members() -> set[str]:
    methods = {n for n, v in vars(CampaignPort).items() if inspect.isfunction(v) and not n.startswith("_")}
    return methods | set(CampaignPort.__annotations__)


def test_the_port_names_the_members_the_generation_maker_needs():
    assert port_members() == {
        "cfg",
        "train",
        "archive",
        "existing",
        "recorded",
        "messages",
        "llm_for",
        "evaluate",
        "evaluated",
        "candidate",
        "recorded_one",
    }
    for name in port_members():  # each says when it is called
        doc = getattr(CampaignPort, name).__doc__ if name in vars(CampaignPort) else None
        assert doc or name in CampaignPort.__annotations__, name


def test_campaign_has_every_port_method_with_a_compatible_signature():
    for name, proto in vars(CampaignPort).items():
        if not inspect.isfunction(proto) or name.startswith("_"):
            continue
        impl = inspect.signature(getattr(Campaign, name))
        for param in inspect.signature(proto).parameters.values():
            assert param.name in impl.parameters, f"Campaign.{name} lacks {param.name}"
            assert impl.parameters[param.name].default == param.default, f"Campaign.{name}({param.name}=...)"
        extra = [p for n, p in impl.parameters.items() if n not in inspect.signature(proto).parameters]
        assert all(p.default is not inspect.Parameter.empty for p in extra), f"Campaign.{name}: {extra}"
    init = inspect.getsource(Campaign.__init__)
    for attribute in CampaignPort.__annotations__:
        assert f"self.{attribute} = " in init, attribute


def test_the_generation_maker_source_names_only_port_members():
    """Every `self.c.<member>` in inflight.py and speculation.py, on paths a test may not reach too."""
    used = set()
    for module in (inflight, speculation):
        for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "c"
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
            ):
                used.add(node.attr)
    assert used and used <= port_members(), used - port_members()
    campaign_param = inspect.signature(inflight.InFlight.__init__).parameters["campaign"]
    assert campaign_param.annotation in ("CampaignPort", CampaignPort)


class PortOnly:
    """The campaign seen through its port: any other member is refused (and the refusal recorded)."""

    def __init__(self, campaign):
        object.__setattr__(self, "_campaign", campaign)
        object.__setattr__(self, "refused", [])

    def __getattr__(self, name):
        if name in port_members():
            return getattr(self._campaign, name)
        self.refused.append(name)
        raise AttributeError(f"InFlight used Campaign.{name}, which CampaignPort does not declare")

    def __setattr__(self, name, value):
        self.refused.append(f"{name}=")
        raise AttributeError(f"InFlight set Campaign.{name}")


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer(lambda body: reply_for(body, sizes=3)) as srv:
        yield srv


def _config(tmp_path, server, name):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'''name = "{name}"
[llm]
model = "openai/fake"
api_base = "{server.base_url}"
retries = 1
backoff = 0.01
seed = 5
timeout = 10
concurrency = 3
[evolution]
n_parents = 2
n_offspring = 4
budget = 10
seed = 3
planning = "generation"
edit = "diff"
[evolution.operators]
new = 0.3
refine = 0.4
fix = 0.6
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
timeout = 30
[novelty]
max_similarity = 0.8
[output]
run_dir = "{tmp_path / name}"
''')
    return path


def test_inflight_runs_a_campaign_through_the_port_alone(server, tmp_path, hub_dir, monkeypatch):
    """Copies, near-copies (re-asks), diff edits and speculation all run against a port that refuses
    every other member, and make the same run as the campaign itself."""
    from generator.campaign.run import run_campaign

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))

    def digest(run_dir):  # exchange ids follow arrival order: only whether a re-ask happened counts
        return [
            (c.id, c.operator, tuple(c.parent_ids), c.code_hash, c.score, c.duplicate_of)
            + (c.novelty and {k: v for k, v in c.novelty.items() if k != "reasked"},)
            + (bool(c.novelty and c.novelty.get("reasked")),)
            for c in Archive.open(run_dir).candidates()
        ]

    run_campaign(_config(tmp_path, server, "direct"), evaluate=fake_evaluate, progress=False)
    ports = []

    def produce_generation(self, plans):
        if self._inflight is None:
            ports.append(PortOnly(self))
            self._inflight = inflight.InFlight(ports[-1])
        return self._inflight.make(plans)

    monkeypatch.setattr(Campaign, "produce_generation", produce_generation)
    summary = run_campaign(_config(tmp_path, server, "port"), evaluate=fake_evaluate, progress=False)
    assert summary.state == "finished" and ports and all(p.refused == [] for p in ports)
    assert digest(tmp_path / "port") == digest(tmp_path / "direct")
    made = Archive.open(tmp_path / "port").candidates()
    assert any(c.duplicate_of for c in made) and any(c.novelty and c.novelty.get("reasked") for c in made)
