"""A screenshot of a built report (the README shows one): the top of its index page, in Debian's Chromium.

Playwright drives the OS's Chromium (:data:`CHROMIUM`, ``apt-get install chromium``); no browser is ever
downloaded, and the page is read from disk (it asks nothing from the network). The page tests launch the browser
with the same :data:`CHROMIUM_ARGS`.
"""

from __future__ import annotations

from pathlib import Path

from hf_neuron.errors import InputError

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "screenshot"]

CHROMIUM = Path("/usr/bin/chromium")
#: Headless, and none of Chromium's own network traffic (updates, sync, first-run pages).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def screenshot(site: Path, out: Path, *, width: int = 1280, height: int = 1000) -> Path:
    """Save the top ``width`` x ``height`` pixels of ``site/index.html`` as a PNG at ``out``; return ``out``.

    Raises :class:`InputError` when there is no report in ``site`` or no Chromium on this machine.
    """
    index = (site / "index.html").resolve()
    if not index.is_file():
        raise InputError(f"{index}: no report here; build one with `hf-neuron report build`")
    if not CHROMIUM.exists():
        raise InputError(f"{CHROMIUM}: Chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise InputError("the playwright package is not installed (pip install 'hf-neuron[dev]')") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(index.as_uri())
            page.screenshot(path=str(out))
        finally:
            browser.close()
    return out
