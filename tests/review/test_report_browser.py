"""The report in a real browser: Debian's headless Chromium, driven by Selenium through chromedriver.

Checks that the lineage graph renders, that a click shows a candidate's code and diff, that text
an LLM wrote (`<script>`, `onerror=`) shows as text and never runs, and that the console stays clean.
`.ci/run` installs chromium and chromium-driver; elsewhere the test skips when they are absent.
"""

from support.run_fixture import XSS, build_run, write_hpo

from generator.review.report import build_report


def test_report_in_headless_chromium(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    run = build_run(tmp_path)
    write_hpo(run)
    html = build_report(run).html
    browser.get(html.as_uri())
    wait = WebDriverWait(browser, 10)

    # the graph renders: one SVG node per candidate, the best path drawn
    nodes = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#graph svg g.node"))
    assert sorted(n.get_attribute("data-id") for n in nodes) == [f"c000{i}" for i in range(1, 8)]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph svg path.edge.best")) == 2

    # the best candidate is shown first; its description is text, and nothing it holds has run
    panel = browser.find_element(By.ID, "panel")
    assert panel.find_element(By.TAG_NAME, "h2").text.startswith("c0005")
    assert panel.find_element(By.CSS_SELECTOR, ".desc").text == XSS
    assert browser.execute_script("return window.__pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#panel script, #panel img, #panel b")

    # a click on a node shows its code and the diff to its parent
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-id="c0003"] circle').click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#panel h2").text.startswith("c0003"))
    code = browser.find_element(By.CSS_SELECTOR, "#panel pre.code").text
    assert "get_random_sample(20)" in code and code.startswith("class Search:")
    added = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#panel pre.diff span.add")]
    assert "+        for cfg in searchspace.get_random_sample(20):" in added
    assert "selected" in browser.find_element(By.CSS_SELECTOR, 'g.node[data-id="c0003"]').get_attribute("class")

    # the tables drew, a heatmap row selects its candidate, and the console stayed clean
    assert len(browser.find_elements(By.CSS_SELECTOR, "#heatmap tr.pick")) == 4
    assert "improved on parent" in browser.find_element(By.ID, "operators").text
    summary = browser.find_element(By.ID, "summary").text.lower()  # the offline synthesizer is no LLM
    assert "synthesizer calls (no llm)" in summary and "llm calls" not in summary
    hpo = browser.find_element(By.ID, "hpo").text
    assert "0.520 → 0.610" in hpo and "0.400 → 0.470" in hpo and "restarts=4" in hpo
    browser.find_element(By.CSS_SELECTOR, "#heatmap tr.pick").click()
    assert browser.find_element(By.CSS_SELECTOR, "#panel h2").text.startswith("c0005")
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-id="c0007"] circle').click()
    assert "Error: timeout" in browser.find_element(By.ID, "panel").text
    problems = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert problems == []
    assert browser.execute_script("return window.__pwned") is None
    browser.save_screenshot(str(tmp_path / "report.png"))
    assert (tmp_path / "report.png").stat().st_size > 10000
