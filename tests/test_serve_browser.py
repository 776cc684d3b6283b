"""``kgsearch serve`` in a real browser: headless Chromium (the distribution's package) driven by
selenium (test extra) through the system chromedriver, at a phone's screen size. Search, open a
result, follow an edge; a screenshot of each page (to $KGSEARCH_SCREENSHOTS when set: the
committed ones in docs/screenshots/ come from that). Without the browser the test is skipped,
or fails under KGSEARCH_REQUIRE_ORACLES=1 (CI installs it: .ci/run)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import conftest
from conftest import need, serving
from kgsearch.config import shipped_data_dir
from kgsearch.indexer import index_paths
from kgsearch.serve import Holder

PHONE = (412, 915)          # CSS pixels of a common Android phone
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--hide-scrollbars"]


def test_a_missing_browser_skips_or_fails_loudly(monkeypatch):
    """The "browser missing" path of the test below: skipped with how to install it, or failed
    when the oracles are required (CI)."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(conftest.sys, "executable", "/nonexistent/python")
    monkeypatch.delenv(conftest.REQUIRE_ORACLES, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"chromedriver is not installed .*apt-get install chromium"):
        need("chromedriver")
    monkeypatch.setenv(conftest.REQUIRE_ORACLES, "1")
    with pytest.raises(pytest.fail.Exception, match="KGSEARCH_REQUIRE_ORACLES=1 but chromium is not installed"):
        need("chromium")


@pytest.fixture(scope="module")
def site():
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="kg-"))            # short paths in the screenshots
    demo = tmp / "demo"
    shutil.copytree(shipped_data_dir() / "demo", demo)
    db = tmp / "demo.db"
    index_paths(db, [str(demo)])
    h = Holder(str(db))
    with serving({"demo": h}) as url:
        yield url
    h.close()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = need("selenium.webdriver")
    chromium, driver_path = need("chromium"), need("chromedriver")
    os.environ.setdefault("SE_OFFLINE", "true")            # selenium must not look for drivers online
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for f in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('profile')}"]:
        opts.add_argument(f)
    # a phone's viewport (a desktop window cannot be made narrower than 500 px)
    opts.add_experimental_option("mobileEmulation", {"deviceMetrics": {"width": PHONE[0], "height": PHONE[1],
                                                                       "pixelRatio": 1.0, "mobile": True}})
    drv = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    drv.set_page_load_timeout(120)
    yield drv
    drv.quit()


def shot(drv, name: str, tmp_path: Path) -> Path:
    out = Path(os.environ.get("KGSEARCH_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    p = out / f"serve-{name}.png"
    assert drv.save_screenshot(str(p))
    assert p.stat().st_size > 5_000                         # a page was drawn, not a blank
    return p


def test_search_open_a_result_follow_an_edge(site, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 120)
    browser.get(site + "/")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("how do I back up my notes")
    box.submit()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "ol.hits li")))
    hits = browser.find_elements(By.CSS_SELECTOR, "ol.hits > li")
    assert len(hits) == 10
    first = hits[0].find_element(By.CSS_SELECTOR, "a")
    name = first.text
    assert name == "Back up the vault"
    hits[0].find_element(By.TAG_NAME, "summary").click()             # the score's breakdown opens
    assert hits[0].find_element(By.CSS_SELECTOR, "details table").is_displayed()
    shot(browser, "search", tmp_path)

    first.click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), name))
    assert "/node?node=md%3Avault%2Fhowto%2Fbackup-vault" in browser.current_url
    assert browser.find_element(By.CSS_SELECTOR, "svg.hood").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "svg.hood a")       # neighbours are links
    assert "Back up the vault" in browser.find_element(By.TAG_NAME, "pre").text
    shot(browser, "node", tmp_path)

    edge = browser.find_elements(By.CSS_SELECTOR, "section.edges li a")[0]
    target, href = edge.text, edge.get_attribute("href")
    edge.click()
    wait.until(ec.url_to_be(href))
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), target))
    assert browser.find_element(By.TAG_NAME, "h1").text == target
    shot(browser, "edge", tmp_path)

    # the page fits a phone: nothing wider than the screen
    assert browser.execute_script("return window.innerWidth") == PHONE[0]
    assert browser.execute_script("return document.documentElement.scrollWidth") <= PHONE[0]
