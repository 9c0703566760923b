"""Write the README's pictures of an incident report (``docs/images/``) with Debian's chromium.

Usage: ``python docs/pictures.py REPORT.html`` on the demo bundle's report (``make demo`` prints
its path). The page is opened with every network request refused (the report is self-contained),
and two views are kept: the top of the report (the overview: chains of findings, findings over
time, findings by area) and the ISR timeline section.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

IMAGES = Path(__file__).resolve().parent / "images"
WIDTH = 1280


def pictures(report: Path, chromium: str = "/usr/bin/chromium") -> list[Path]:
    """Screenshots of ``report``: its first screen and the ISR timeline section; their paths."""
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 1500})
            page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:")
                       else route.continue_())
            page.goto(report.resolve().as_uri())
            page.wait_for_selector(".plotly .main-svg")
            written.append(IMAGES / "report-overview.png")
            page.screenshot(path=written[-1])
            heading = page.locator("h3#ISR-timeline").element_handle()
            top = page.evaluate("(e) => e.getBoundingClientRect().top + window.scrollY", heading)
            written.append(IMAGES / "report-isr.png")
            page.screenshot(path=written[-1], full_page=True,
                            clip={"x": 0, "y": top - 10, "width": WIDTH, "height": 1100})
        finally:
            browser.close()
    return written


if __name__ == "__main__":
    for path in pictures(Path(sys.argv[1])):
        print(path)
