"""`tunesmith serve` in a real browser (Debian's headless Chromium through Selenium, as test_report_browser).

The page follows a run that grows while it is open: candidates land, a line is half-written for a
moment, and the page shows the new candidates, leaderboard and best path without a reload. Text an
LLM wrote shows as text and never runs; the console stays clean.
"""

import threading

import pytest
from support.run_fixture import SPEC, XSS, build_run, grow_run

from generator.serve.server import make_server


@pytest.fixture
def live(tmp_path):
    """The tiny run's first 3 candidates, served with a fast poll."""
    run = build_run(tmp_path, torn_tail=False, upto=3)
    server = make_server([run, run], port=0, poll_ms=200)  # the same run twice: the run switcher has two
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield run, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _ids(driver, selector="#graph svg g.node"):
    """The data-id of every element the selector finds, read in one step (the page redraws as the run grows)."""
    script = "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.getAttribute('data-id'))"
    return driver.execute_script(script, selector)


def test_live_view_follows_a_growing_run(browser, live):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    run, url = live
    browser.get(url)
    wait = WebDriverWait(browser, 15, ignored_exceptions=(StaleElementReferenceException,))  # the page redraws
    wait.until(lambda d: sorted(_ids(d)) == ["c0001", "c0002", "c0003"])
    browser.execute_script("window.__sameDocument = 1")  # gone if the page were reloaded
    wait.until(lambda d: _ids(d, "#leaderboard tr.pick") == ["c0003", "c0001"])
    first = browser.find_element(By.CSS_SELECTOR, "#leaderboard tr.pick").text
    assert "0.450" in first and "0.450 ± " not in first  # no SE in this run: none shown
    assert "synthesizer calls (no llm)" in browser.find_element(By.ID, "summary").text.lower()

    # a candidate line is half-written: the page keeps what it has and stays live
    with open(run / "candidates.jsonl", "a") as fh:
        fh.write('{"id": "c0004", "generation": 1, "oper')
    wait.until(lambda d: "live: looked" in d.find_element(By.ID, "live").text)
    assert sorted(_ids(browser)) == ["c0001", "c0002", "c0003"]
    (run / "candidates.jsonl").write_text((run / "candidates.jsonl").read_text().rsplit("\n", 1)[0] + "\n")

    grow_run(run)  # the rest of the campaign lands while the page is open
    wait.until(lambda d: sorted(_ids(d)) == [s[0] for s in SPEC])
    assert browser.execute_script("return window.__sameDocument") == 1
    wait.until(lambda d: _ids(d, "#leaderboard tr.pick")[:1] == ["c0005"])
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph svg path.edge.best")) == 2
    failures = browser.find_element(By.ID, "failures").text
    assert "runtime" in failures and "timeout" in failures
    assert browser.find_elements(By.CSS_SELECTOR, "#best-candidates svg path.best-line")
    assert browser.find_elements(By.CSS_SELECTOR, "#best-time svg path.best-line")

    # a click shows a candidate's code, scores and diff to its parent; LLM text stays text
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-id="c0003"] circle').click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#panel h2").text == "c0003")
    assert browser.find_element(By.CSS_SELECTOR, "#panel pre.code").text.startswith("class Search:")
    added = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#panel pre.diff span.add")]
    assert "+        for cfg in searchspace.get_random_sample(20):" in added
    browser.find_element(By.CSS_SELECTOR, '#leaderboard tr.pick[data-id="c0005"]').click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#panel h2").text == "c0005")
    assert browser.find_element(By.CSS_SELECTOR, "#panel .desc").text == XSS
    assert browser.execute_script("return window.__pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#panel script, #panel img, #panel b")

    # the second run of the view is a click away
    browser.find_element(By.CSS_SELECTOR, '#runs button[data-index="1"]').click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '#runs button[data-index="1"]').get_attribute("class") == "on")
    problems = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert problems == []
