"""Shared fixtures: where the benchmark hub is, and the tasks loaded from it (once per session)."""

import os
import shutil
import signal
from pathlib import Path

import pytest
from support.campaign_fakes import FAKE_KEY, reply_for
from support.fake_llm_server import FakeLLMServer
from support.paths import ROOT


def pytest_sessionstart(session):
    """Ctrl-C tests send SIGINT to the tunesmith processes they start. A shell that starts pytest in the
    background (`pytest &` in a script) starts it with SIGINT ignored, and an ignored signal stays ignored
    in every child: those tests would then fail for the shell's reason, not the code's. Restore it."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _hub_path() -> Path:
    return Path(os.environ.get("TUNESMITH_BENCHMARK_HUB", ROOT.parent / "shared" / "data" / "benchmark_hub"))


@pytest.fixture(scope="session")
def hub_dir() -> Path:
    """The benchmark-hub directory; skips with a reason when absent, fails in CI."""
    hub = _hub_path()
    if not (hub / "cachefiles").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"benchmark hub missing at {hub}; CI needs ../shared/data/benchmark_hub")
        pytest.skip(f"benchmark hub not found at {hub}; set TUNESMITH_BENCHMARK_HUB")
    return hub


@pytest.fixture(scope="session")
def hub_tasks(hub_dir):
    """All six benchmark-hub tasks, loaded once."""
    from generator.tasks.entries import load_tasks

    return load_tasks(hub_dir)


@pytest.fixture(scope="session")
def conv_task(hub_tasks):
    """The convolution A100 task: small, with failed configurations."""
    return next(t for t in hub_tasks if t.name == "convolution_milo/A100")


# A campaign against a local fake LLM server: `server` serves campaign_fakes.reply_for, `make_config(server, ...)`
# writes a small campaign file for it.
@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer(reply_for) as srv:
        yield srv


@pytest.fixture()
def make_config(tmp_path, hub_dir, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))

    def make(server, name="run", budget=6, caps="", model="openai/fake", repeats=1, extra="", concurrency=4):
        path = tmp_path / f"{name}.toml"
        path.write_text(f'''name = "{name}"
[llm]
model = "{model}"
api_base = "{server.base_url}"
retries = 1
backoff = 0.01
seed = 11
timeout = 10
max_consecutive_errors = 2
concurrency = {concurrency}
{caps}
[evolution]
n_parents = 2
n_offspring = 3
budget = {budget}
seed = 3
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = {repeats}
timeout = 30
[novelty]
max_similarity = 1.0  # these tests count requests: no re-asks of replies that differ in a constant
[output]
run_dir = "{tmp_path / name}"
{extra}''')
        return path

    return make


# A real browser for the tests of pages (report, serve): Debian's headless Chromium through Selenium.
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def _need(condition: bool, reason: str) -> None:
    if not condition:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; .ci/run installs it before the tests")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    _need(
        CHROMIUM is not None and CHROMEDRIVER is not None,
        "chromium/chromedriver not installed (apt-get install chromium chromium-driver)",
    )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (pip install -e '.[test]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # no sandbox as root; no background networking: the machine's closed network refuses it loudly
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        "--hide-scrollbars",
    ):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
