"""The incident report in a real browser: the offline HTML report, and the notebook in JupyterLab."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from peer.cluster import free_ports
from tests.binder_env import write_lab_settings
from tests.conftest import DEMO_REPORT_TIMEOUT_S
from tests.incident import HOSTILE_EVENTS, HOSTILE_TOPIC, INCIDENT_EVENTS, LONG_TOPIC, write_incident_bundle

REPO = Path(__file__).resolve().parents[2]
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.spark,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def incident_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small ISR incident, plus a topic whose name is HTML."""
    events = sorted(INCIDENT_EVENTS + HOSTILE_EVENTS, key=lambda e: e[0])
    return write_incident_bundle(tmp_path_factory.mktemp("bundle") / "incident", events)


@pytest.mark.timeout(DEMO_REPORT_TIMEOUT_S)
def test_demo_report_draws_every_plot_offline(demo_report, tmp_path: Path) -> None:
    """`make demo`'s report, with the network blocked: every figure the HTML holds is drawn with
    data, one per area's view and the findings timeline (one lane per area), and nothing is fetched."""
    import re

    from playwright.sync_api import sync_playwright

    html = demo_report.path.read_text(encoding="utf-8")
    figures = len(re.findall(r"Plotly\.newPlot\(", html))
    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.route("http*://**", lambda route: (requested.append(route.request.url), route.abort()))
            page.goto(demo_report.path.as_uri())
            page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {figures}",
                                   timeout=60_000)
            plots = page.locator(".js-plotly-plot")
            assert plots.count() == figures >= 8
            drawn = plots.evaluate_all(
                "els => els.map(e => e.querySelectorAll('.trace, .point, .barlayer path, .scatterlayer path').length)")
            assert all(n > 0 for n in drawn), drawn
            lanes = plots.nth(0).locator(".yaxislayer-above text").all_text_contents()
            assert len(lanes) >= 5, lanes  # the findings timeline: a lane per area with findings
            page.screenshot(path=str(tmp_path / "demo-report.png"))  # the top: summary, chains, timeline
            plots.nth(0).screenshot(path=str(tmp_path / "demo-overview.png"))
        finally:
            browser.close()
    assert requested == []
    print(f"screenshots: {tmp_path / 'demo-report.png'}, {tmp_path / 'demo-overview.png'}")


@pytest.fixture(scope="module")
def report_html(incident_report: dict) -> Path:
    """The HTML incident report of the small incident with its HTML, right-to-left and endless topic names."""
    return incident_report["html"]


def test_report_renders_offline_with_the_incident_visible(report_html: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.route("http*://**", lambda route: (requested.append(route.request.url), route.abort()))
            page.goto(report_html.as_uri())
            page.wait_for_selector(".js-plotly-plot .barlayer path", timeout=30_000)
            # attached, not visible: a flat line (the batch sizes' of a quiet log) has an empty box
            page.wait_for_selector(".js-plotly-plot .scatterlayer path.js-line", state="attached", timeout=30_000)

            plots = page.locator(".js-plotly-plot")
            assert plots.count() >= 2
            titles = page.locator(".js-plotly-plot .gtitle").all_text_contents()
            assert titles == ["Findings over time, by area",
                              "Quorum offset divergence: each node's lag behind the leader's log",
                              "Records per metadata batch: the log's figure and the brokers' reports",
                              "Partition ISR state over time", "UnderMinIsrPartitionCount per leader broker"]
            # the overview draws one bar per finding: 6 partitions under min ISR (orders-0, orders-1,
            # payments-0, the three named ones), orders-1 offline; all critical
            overview = page.locator(".js-plotly-plot").nth(0)
            assert overview.locator(".barlayer path").count() == 7
            # every state interval is a drawn bar with a real extent
            isr_plot = plots.nth(3)  # after the overview and the quorum section's two figures
            counts_plot = plots.nth(4)
            bar_widths = isr_plot.locator(".barlayer path").evaluate_all("els => els.map(e => e.getBBox().width)")
            # 16 intervals of the incident and the HTML-named partition, 3 of each of the other two names'
            assert len(bar_widths) == 16 + 6 and all(w > 0 for w in bar_widths)
            line_paths = counts_plot.locator(".scatterlayer path.js-line").evaluate_all(
                "els => els.map(e => e.getAttribute('d') || '')")
            assert len(line_paths) == 3 and all("H" in d for d in line_paths)  # hv steps
            # the incident is named on the rows and in the legend; the HTML topic name as text
            rows = isr_plot.locator(".yaxislayer-above text").all_text_contents()
            assert len(rows) == 6 and {"payments-0", "orders-1", "orders-0", f"{HOSTILE_TOPIC}-0"} <= set(rows), rows
            legend = [t for i in (0, 3, 4) for t in plots.nth(i).locator(".legendtext").all_text_contents()]
            assert legend == ["critical", "offline", "under min ISR", "at min ISR", "healthy", "broker 1", "broker 2",
                              "broker 3"]
            assert page.evaluate("window.__pwned") is None
            assert page.locator("img[src=x]").count() == 0
            # hovering the under-min-ISR bar of payments-0 tells leader, ISR, replicas, min ISR
            isr_plot.scroll_into_view_if_needed()
            under_min = isr_plot.locator(".barlayer .trace").nth(1).locator("path")
            boxes = [under_min.nth(i).bounding_box() for i in range(under_min.count())]
            row = isr_plot.locator(".yaxislayer-above text").filter(has_text=re.compile(r"^payments-0$")).bounding_box()
            bar = min(boxes, key=lambda b: abs(b["y"] + b["height"] / 2 - row["y"] - row["height"] / 2))
            page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
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


# --------------------------------------------------------------------------------------------
# names that would make a report unreadable: a right-to-left override and 5,000 characters

_INVISIBLE = "[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\u2028\u2029]"


def test_bidi_override_and_endless_names_leave_findings_readable_and_timeline_usable(
        report_html: Path, tmp_path: Path) -> None:
    """Offline, in Chromium: no bidirectional or invisible character reaches the page's text (each is
    shown as ``⟨U+202E⟩``), the findings about both topics read in order (name, then "partition 0 was
    under min ISR") on a line or two, the page does not scroll sideways, and the findings timeline and
    the ISR timeline keep their plot area and answer a hover."""
    import html
    import re

    from playwright.sync_api import sync_playwright

    text = report_html.read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", text, re.S).group(1)
    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.route("http*://**", lambda route: (requested.append(route.request.url), route.abort()))
            page.goto(report_html.as_uri())
            page.wait_for_selector(".js-plotly-plot .barlayer path", timeout=30_000)
            page.screenshot(path=str(tmp_path / "names-report.png"), full_page=True)
            assert page.evaluate("document.title") == html.unescape(title)

            body = page.evaluate("document.body.innerText")
            assert not re.search(_INVISIBLE, body), "a bidirectional or invisible character reached the page"
            assert LONG_TOPIC not in body and "n" * 400 not in body
            # the findings about both topics: name shown, then the rest of the sentence in reading order
            items = page.locator("ul.wb-findings li")
            rlo = items.filter(has_text="pay⟨U+202E⟩stnemyap partition 0 was under min ISR")
            endless = items.filter(has_text=re.compile(r"long-n+…⟨5,000 characters #[0-9a-f]{6}⟩…n+-name partition 0"))
            assert rlo.count() >= 1 and endless.count() >= 1
            line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight) || 20")
            for item in (rlo.first, endless.first):
                box = item.bounding_box()
                assert box["height"] <= 3 * line and box["x"] + box["width"] <= 1300, box
            assert page.evaluate("document.documentElement.scrollWidth") <= 1300

            plots = page.locator(".js-plotly-plot")
            overview = plots.nth(0)
            assert overview.locator(".barlayer path").count() == 7  # 6 partitions under min ISR, 1 offline
            isr_plot = plots.nth(3)  # after the overview and the quorum section's two figures
            rows = isr_plot.locator(".yaxislayer-above text").all_text_contents()
            assert "pay⟨U+202E⟩stnemyap-0" in rows
            assert any("5,002 characters" in r for r in rows) and max(map(len, rows)) < 100, rows
            for plot in (overview, isr_plot):
                plot.scroll_into_view_if_needed()
                area = plot.locator(".nsewdrag").first.bounding_box()
                whole = plot.bounding_box()
                lanes = plot.locator(".yaxislayer-above text").all_text_contents()
                assert area["width"] >= 0.5 * whole["width"], (area, whole, lanes)  # labels did not eat the plot
                bar = plot.locator(".barlayer path").last.bounding_box()
                page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
                page.wait_for_selector(".hoverlayer .hovertext", timeout=5_000)
                hover = page.locator(".hoverlayer .hovertext").first.bounding_box()
                assert hover["width"] <= 1300, hover
                page.mouse.move(5, 5)
        finally:
            browser.close()
    assert requested == []
    print(f"screenshot: {tmp_path / 'names-report.png'}")


# --------------------------------------------------------------------------------------------
# the same notebook, interactive, in JupyterLab



@pytest.fixture
def lab(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, incident_bundle: Path) -> Iterator[str]:
    """JupyterLab on loopback serving the incident notebook prepared with ``report=False``."""
    import nbformat
    import papermill

    prepared = tmp_path / "isr.ipynb"
    papermill.execute_notebook(
        str(REPO / "notebooks" / "02_isr.ipynb"),
        str(prepared),
        parameters={"bundle": str(incident_bundle), "report": False},
        prepare_only=True,
        kernel_name="python3",
        progress_bar=False,
    )
    nb = nbformat.read(str(prepared), as_version=4)
    nb.metadata.pop("jupytext", None)  # no paired .py written next to it by the Lab extension
    nbformat.write(nb, str(prepared))

    port = free_ports(1)[0]
    # the kernel imports this checkout's workbench and widgets, whatever is installed
    config = tmp_path_factory.mktemp("jupyter-config")   # outside Lab's root
    write_lab_settings(config, REPO)   # Binder's JupyterLab settings (binder/overrides.json)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "JUPYTER_CONFIG_DIR": str(config)}
    # as binder/postBuild does: no question about fetching Jupyter's news from the internet
    subprocess.run([sys.executable, "-m", "jupyter", "labextension", "disable", "--level=user", ANNOUNCEMENTS],
                   env=env, check=True, capture_output=True, timeout=120)
    args = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", "--ServerApp.token=", "--ServerApp.password=",
        "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={tmp_path}",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    with open(tmp_path / "lab.log", "wb") as log:
        server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None:
                        pytest.fail(f"JupyterLab exited: {(tmp_path / 'lab.log').read_text()[-2000:]}")
                    time.sleep(0.3)
            yield f"http://127.0.0.1:{port}/lab/tree/{prepared.name}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


#: JupyterLab's plugin that offers to fetch Jupyter's news (binder/postBuild turns it off).
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"

KERNEL_IDLE = """() => {
    const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = widget && widget.sessionContext && widget.sessionContext.session
        && widget.sessionContext.session.kernel;
    return Boolean(kernel) && kernel.status === 'idle';
}"""


def _bar_count(page) -> int:
    return page.locator(".jp-OutputArea .js-plotly-plot .barlayer path").count()


@pytest.mark.full   # make test-full, beside the notebooks in JupyterLab (test_notebooks_lab)
def test_incident_notebook_widgets_filter_in_jupyterlab(lab: str, tmp_path: Path) -> None:
    """The ISR notebook on the small incident with an HTML topic name: the name is an option's text."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(lab, timeout=60_000)
            page.wait_for_function(KERNEL_IDLE, timeout=90_000)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            # running every cell starts Spark in the kernel: minutes on a loaded 2-core machine (a
            # readiness bound, not a speed check; pytest's own timeout is 900 s)
            page.wait_for_selector(".jp-OutputArea .js-plotly-plot .barlayer path", timeout=600_000)
            assert _bar_count(page) == 16  # every interval of the four partitions

            topics = page.locator(".jp-OutputArea .widget-select-multiple select").nth(0)
            options = [o.replace("\xa0", " ") for o in topics.locator("option").all_text_contents()]  # nbsp
            assert options == sorted(["orders", "payments", HOSTILE_TOPIC])  # the HTML name as text
            topics.select_option(["payments"])
            page.wait_for_function(
                "() => document.querySelectorAll('.jp-OutputArea .js-plotly-plot .barlayer path').length === 4",
                timeout=120_000,
            )
            rows = page.locator(".jp-OutputArea .js-plotly-plot .yaxislayer-above text").all_text_contents()
            assert rows[0] == "payments-0"

            states = page.locator(".jp-OutputArea .widget-select-multiple select").nth(1)
            states.select_option(label="under min ISR")
            page.wait_for_function(
                "() => document.querySelectorAll('.jp-OutputArea .js-plotly-plot .barlayer path').length === 1",
                timeout=120_000,
            )
            status = page.locator(".jp-OutputArea .widget-html-content", has_text="interval(s) on")
            status.filter(has_text="1 interval(s) on 1 partition(s) shown").wait_for(timeout=120_000)
            page.locator(".jp-OutputArea .js-plotly-plot").first.scroll_into_view_if_needed()
            assert page.get_by_text("official Jupyter news").count() == 0  # the announcements plugin is off
            page.screenshot(path=str(tmp_path / "lab.png"))
        finally:
            browser.close()
    print(f"screenshot: {tmp_path / 'lab.png'}")
