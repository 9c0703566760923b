"""The HTML incident report in a real browser, offline: the plots are drawn, nothing is fetched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_report import INCIDENT_EVENTS, write_incident_bundle
from workbench.report import build_report

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE_TOPIC = '<img src=x onerror="window.__pwned=1">'
HOSTILE_ID = "SG9zdGlsZUhvc3RpbGVIbw"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.spark,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The incident report of the small ISR incident, plus a topic whose name is HTML."""
    hostile = [
        (3, ("TopicRecord", {"name": HOSTILE_TOPIC, "topicId": HOSTILE_ID})),
        (
            3,
            (
                "PartitionRecord",
                {
                    "partitionId": 0,
                    "topicId": HOSTILE_ID,
                    "replicas": [1, 2],
                    "isr": [1, 2],
                    "leader": 1,
                    "removingReplicas": [],
                    "addingReplicas": [],
                    "leaderEpoch": 0,
                    "partitionEpoch": 0,
                },
            ),
        ),
        (40, ("PartitionChangeRecord", {"partitionId": 0, "topicId": HOSTILE_ID, "isr": [1], "leader": -2})),
    ]
    events = sorted(INCIDENT_EVENTS + hostile, key=lambda e: e[0])
    root = tmp_path_factory.mktemp("browser")
    bundle = write_incident_bundle(root / "incident", events)
    return build_report(bundle, root / "report.html")


def test_report_renders_offline_with_the_incident_visible(report_html: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.route("http*://**", lambda route: (requested.append(route.request.url), route.abort()))
            page.goto(report_html.as_uri())
            page.wait_for_selector(".js-plotly-plot .barlayer path", timeout=30_000)
            page.wait_for_selector(".js-plotly-plot .scatterlayer path.js-line", timeout=30_000)

            plots = page.locator(".js-plotly-plot")
            assert plots.count() >= 2
            titles = page.locator(".js-plotly-plot .gtitle").all_text_contents()
            assert titles == ["Partition ISR state over time", "UnderMinIsrPartitionCount per leader broker"]
            # every state interval is a drawn bar with a real extent
            bar_widths = page.eval_on_selector_all(
                ".js-plotly-plot .barlayer path", "els => els.map(e => e.getBBox().width)"
            )
            assert len(bar_widths) == 16 and all(w > 0 for w in bar_widths)
            line_paths = page.eval_on_selector_all(
                ".js-plotly-plot .scatterlayer path.js-line", "els => els.map(e => e.getAttribute('d') || '')"
            )
            assert len(line_paths) == 3 and all("H" in d for d in line_paths)  # hv steps
            # the incident is named on the rows and in the legend; the HTML topic name as text
            rows = page.locator(".js-plotly-plot .yaxislayer-above text").all_text_contents()
            assert sorted(rows[:4]) == sorted(["payments-0", "orders-1", "orders-0", f"{HOSTILE_TOPIC}-0"])
            legend = page.locator(".js-plotly-plot .legendtext").all_text_contents()
            assert legend == ["offline", "under min ISR", "at min ISR", "healthy", "broker 1", "broker 2", "broker 3"]
            assert page.evaluate("window.__pwned") is None
            assert page.locator("img[src=x]").count() == 0
            # hovering the under-min-ISR bar of payments-0 tells leader, ISR, replicas, min ISR
            under_min = page.locator(".js-plotly-plot .barlayer .trace").nth(1).locator("path")
            boxes = [under_min.nth(i).bounding_box() for i in range(under_min.count())]
            bottom = max(boxes, key=lambda b: b["y"])  # rows are sorted top down: payments-0 is last
            page.mouse.move(bottom["x"] + bottom["width"] / 2, bottom["y"] + bottom["height"] / 2)
            page.wait_for_selector(".hoverlayer .hovertext", timeout=5_000)
            hover = " ".join(page.locator(".hoverlayer .hovertext").all_text_contents())
            for text in ("payments", "under min ISR", "leader: 1", "ISR: [1]", "replicas: [3, 1, 2]", "min ISR: 2"):
                assert text in hover, hover
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requested == []
    assert dialogs == []
    print(f"screenshot: {tmp_path / 'report.png'}")
