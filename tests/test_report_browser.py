"""The built site in a real browser: Debian's Chromium, headless, driven by Playwright (never a downloaded browser).

Sorts and filters the architecture table, follows a link to an architecture page, checks that a record's markup
shows as text, that the page asks nothing from the network, and saves a screenshot of the index; the run has
checkpoint cases too, which leave the architecture table as it is and make a table of their own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _helpers_report import a_catalog

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.ranking import Ranking
from hf_neuron.report.screenshot import CHROMIUM, CHROMIUM_ARGS
from hf_neuron.report.site import build_site

pytestmark = pytest.mark.browser

RECORDS = Path(__file__).parent / "fixtures" / "records"
BASELINE = Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json"
CATALOG = a_catalog(llama="decoder", qwen3="encoder-decoder", gemma3="decoder")
RANKING = Ranking({"llama": 1, "mistral": 2, "qwen3": 3, "gemma3": 4}, "hub downloads")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("browser")
    common = {"baseline": load_baseline(BASELINE), "catalog": CATALOG, "ranking": RANKING,
              "history_dir": work / "history", "top_n": 3}
    build_site([RECORDS / "run-1"], work / "previous", **common)
    build_site([RECORDS / "run-2", RECORDS / "checkpoints"], work / "site", **common)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(work / "site")))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright python package is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def _visible_names(page) -> list[str]:
    return page.eval_on_selector_all("#matrix tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.name)")


def test_sort_filter_follow_and_screenshot(browser, site_url: str, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    outside: list[str] = []
    page.route("**/*", lambda route: (route.continue_() if route.request.url.startswith(site_url)
                                      else (outside.append(route.request.url), route.abort())))
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(site_url + "index.html")

    assert page.locator("#filters").is_visible()  # the script ran and showed the controls
    assert page.inner_text("#row-count") == "Showing 9 of 9 architectures"
    assert _visible_names(page) == ["llama", "mistral", "qwen3", "gemma3", "bert", "falcon", "gpt2", "phi3", "xglm"]

    def sort_by(column: str) -> None:
        page.locator("#matrix thead").get_by_role("button", name=column, exact=True).click()

    sort_by("Architecture")
    assert _visible_names(page) == ["bert", "falcon", "gemma3", "gpt2", "llama", "mistral", "phi3", "qwen3", "xglm"]
    assert page.get_attribute("#matrix thead th:has(button:text-is('Architecture'))", "aria-sort") == "ascending"
    sort_by("Architecture")
    assert _visible_names(page)[0] == "xglm"
    sort_by("generate")  # best status first; ties keep the ranking order
    assert _visible_names(page) == ["llama", "qwen3", "gpt2", "bert", "falcon", "xglm", "mistral", "phi3", "gemma3"]

    page.select_option("#filter-outcome", "error")
    assert sorted(_visible_names(page)) == ["mistral", "phi3"]
    assert page.inner_text("#row-count") == "Showing 2 of 9 architectures"
    page.select_option("#filter-outcome", "unmodified")
    assert sorted(_visible_names(page)) == ["bert", "gpt2", "llama", "qwen3"]
    page.check("#filter-changed")
    assert sorted(_visible_names(page)) == ["bert", "gpt2"]
    page.uncheck("#filter-changed")
    page.select_option("#filter-outcome", "verdict:fails-on-cpu-too")
    assert _visible_names(page) == ["xglm"]
    page.select_option("#filter-outcome", "fallbacks")
    assert _visible_names(page) == ["llama"]
    page.check("#filter-changed")
    page.select_option("#filter-outcome", "")
    page.uncheck("#filter-changed")
    page.select_option("#filter-group", "decoder")
    assert "qwen3" in _visible_names(page) and "gemma3" in _visible_names(page)
    page.select_option("#filter-group", "")
    page.check("#filter-top")
    assert sorted(_visible_names(page)) == ["llama", "mistral", "qwen3"]
    page.uncheck("#filter-top")
    page.fill("#filter-text", "gp")
    assert _visible_names(page) == ["gpt2"]
    page.fill("#filter-text", "")

    screenshot = tmp_path / "index.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 10_000

    page.click("#matrix a:text-is('mistral')")
    page.wait_for_url("**/arch/mistral.html")
    assert page.inner_text("h1").startswith("mistral")
    assert "bad token <script>alert('x')</script> in prompt & more" in page.inner_text("#detail-generate")
    page.screenshot(path=str(tmp_path / "mistral.png"), full_page=True)
    page.click("text=← All architectures")
    page.wait_for_url("**/index.html")

    assert dialogs == []  # the record's <script> never ran
    assert outside == []  # no request left the site
    page.close()


def test_the_table_reads_without_javascript(browser, site_url: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site_url + "index.html")
    assert page.locator("#filters").is_hidden()
    assert page.locator("#matrix tbody tr").count() == 9
    assert page.inner_text("#headline-count") == "4 of 8"
    context.close()


def test_the_checkpoints_table_beside_the_architectures(browser, site_url: str) -> None:
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(site_url + "index.html")
    assert page.eval_on_selector_all("#checkpoints tbody tr", "rows => rows.map(r => r.dataset.checkpoint)") == [
        "meta-llama/Llama-3.2-1B", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B-AWQ",
        "facebook/xglm-564M", "openai/whisper-tiny", "Qwen/Qwen3-30B-A3B"]  # by rank (qwen3_moe unranked), then id
    assert page.locator("#checkpoints").is_visible()
    assert page.inner_text("#checkpoints-passing") == "3 of 7"
    assert page.inner_text("#checkpoints tr[data-checkpoint='Qwen/Qwen3-30B-A3B'] th") == "Qwen/Qwen3-30B-A3B"
    page.click("#checkpoints tr[data-checkpoint='Qwen/Qwen3-0.6B'] a:text-is('qwen3')")
    page.wait_for_url("**/arch/qwen3.html")
    assert page.locator("#arch-checkpoints tbody tr").count() == 2
    assert page.inner_text("#tiny-beside-checkpoints").startswith("The tiny model: fails on neuron.")
    page.close()
