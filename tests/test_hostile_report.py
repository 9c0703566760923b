"""Hostile text from real Kafka through the incident report, checked as text and in a browser.

The ``hostile`` scenario (:mod:`peer.scenarios.hostile`) puts HTML, script, a ``</script>``,
quotes, a right-to-left override and zero-width characters into every field real Kafka keeps as
free text: consumer group ids, consumer and producer client ids, a transactional id, record keys,
values and header values, a group config's resource name, a client metrics resource's config
value and a client quota's entity name. Topic names cannot be hostile on a real cluster (Kafka
allows ``[a-zA-Z0-9._-]`` only); ``tests/browser/test_report_browser.py`` covers an HTML topic
name in a synthetic metadata log.

The report is run once, with :func:`workbench.report.run_report` on the composed incident
report, which is every section notebook's cells (overview, quorum, ISR, consumer lag, mirror
and tier) in one notebook: one run takes the corpus through every notebook's code in report
mode. Then:

* the HTML text: no record key, value or header value appears (no view shows record payloads,
  and no notebook has a parameter that would show them); no payload's HTML appears raw outside
  scripts, and none appears inside a script (plotly's figure JSON) other than JSON-escaped, so
  no ``</script>`` can end a figure's script early;
* the page in Debian's Chromium, offline (every http(s) request refused and recorded): no
  payload ran (``window.__pwned`` undefined, no dialog), the title is the one the report was
  written with, no element a payload would create exists and the page has exactly the scripts
  of the report's own structure; the visible text holds no bidirectional or zero-width
  character (the views show them as ``⟨U+202E⟩``), and names every hostile group in that
  readable form.

Of the hostile ids, the report shows the consumer groups (findings, chains, tables and the lag
figures); no section shows client ids, transactional ids, config values or quota entities, so for
those the check is that they never appear raw.
"""

from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

import pytest

from peer.scenarios.hostile import (
    GROUPS,
    HEADER_MARKER,
    KEY_MARKER,
    PAYLOADS,
    PRODUCER_CLIENT_ID,
    TXN_GROUP,
    TXN_ID,
    VALUE_MARKER,
)
from widgets._frames import visible_text

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

pytestmark = [
    pytest.mark.spark,
    pytest.mark.kafka,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]

#: Every id the scenario gives Kafka that holds a payload.
HOSTILE_IDS = (*GROUPS, TXN_GROUP, TXN_ID, PRODUCER_CLIENT_ID,
               *(f"peer-consumer-{g}" for g in GROUPS), f"peer-txn-{TXN_ID}")
#: Elements only a payload brings (the report's own markup has none of them); a payload's attributes
#: (``onerror``, ``onload``) matter only inside such an element, or after a quote that ends an
#: attribute, which the browser test looks for in the DOM.
PAYLOAD_MARKUP = ("<script>window.__pwned", "</script><script>window", "<img src=x", "<svg onload")
#: Bidirectional controls, zero-width characters and the byte order mark.
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
#: A script element as the browser's tokenizer cuts it: its text ends at the first ``</script``.
SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)


@pytest.fixture(scope="module")
def hostile_report(kafka_bundle, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The ``hostile`` bundle (built once, cached) and its composed incident report."""
    from workbench.report import run_report

    started = time.monotonic()
    bundle = Path(kafka_bundle("hostile"))
    bundle_s = time.monotonic() - started
    out = tmp_path_factory.mktemp("hostile-report") / "report.html"
    started = time.monotonic()
    result = run_report(bundle, out)
    report_s = time.monotonic() - started
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    print(f"\nhostile bundle: {bundle} ({bundle_s:.1f} s here; built in {manifest.get('build_seconds')} s of "
          f"cluster run); report: {report_s:.1f} s, exit code {result.exit_code}")
    return {"bundle": bundle, "result": result, "html": out.read_text(encoding="utf-8")}


def _split_scripts(text: str) -> tuple[list[str], str]:
    """(the text of every script element, the document with those elements cut out)."""
    return SCRIPT.findall(text), SCRIPT.sub("", text)


def test_report_runs_on_hostile_input(hostile_report: dict) -> None:
    result = hostile_report["result"]
    assert result.exit_code in (0, 1)
    assert result.summary is not None
    # the consumer-lag area found the hostile groups (their findings name them)
    subjects = {f.get("subject") for f in result.summary.get("findings", [])}
    assert set(GROUPS) <= subjects, sorted(map(repr, subjects))


def test_no_payload_and_no_raw_markup_in_the_html(hostile_report: dict) -> None:
    from workbench.report import COMPOSED_NOTEBOOK, declared_parameters, notebook_path

    # no notebook parameter shows record payloads (a ``show_payloads``): should one be added, this
    # test must also run the report with it set and find the payloads there, escaped
    assert not [p for p in declared_parameters(notebook_path(COMPOSED_NOTEBOOK)) if "payload" in p]
    text = hostile_report["html"]
    # record payloads are redacted: no key, value or header value reaches the report
    for marker in (KEY_MARKER, VALUE_MARKER, HEADER_MARKER):
        assert marker not in text, f"a record field ({marker}...) reached the report"
    assert not any(p in text for p in PAYLOADS[:4]), [p for p in PAYLOADS[:4] if p in text]
    for hostile in HOSTILE_IDS:
        if "<" in hostile:
            assert hostile not in text, f"{hostile!r} appears raw"
    scripts, outside = _split_scripts(text)
    for piece in PAYLOAD_MARKUP:
        assert piece.lower() not in outside.lower(), f"{piece!r} outside scripts"
    for body in scripts:  # figure JSON: payload text JSON-escaped (no '<' at all), never raw
        for piece in PAYLOAD_MARKUP:
            assert piece.lower() not in body.lower(), f"{piece!r} inside a script: {body[:200]!r}"
    # the report does show the hostile groups: escaped in tables and text, JSON-escaped in figures
    shown = [g for g in GROUPS if any(html.escape(visible_text(g), quote=q) in outside for q in (False, True))]
    assert shown == list(GROUPS), [g for g in GROUPS if g not in shown]


def test_hostile_report_in_chromium(hostile_report: dict, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    text = hostile_report["html"]
    path = hostile_report["result"].path
    title = html.unescape(re.search(r"<title>(.*?)</title>", text, re.DOTALL).group(1))
    assert title == f"Kafka incident report: {hostile_report['bundle'].name}"
    scripts = len(re.findall(r"<script\b", text, re.IGNORECASE)) - len(re.findall(r"<script>window\.__pwned", text))
    figures = len(re.findall(r"Plotly\.newPlot\(", text))
    requested: list[str] = []
    dialogs: list[str] = []
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.route("http*://**", lambda route: (requested.append(route.request.url), route.abort()))
            page.goto(path.as_uri())
            page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {figures}",
                                   timeout=60_000)
            page.wait_for_timeout(500)  # an onerror/onload a payload brought would have fired
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.title() == title
            assert page.locator("img[src=x]").count() == 0
            assert page.locator("svg[onload]").count() == 0
            handlers = page.evaluate("""() => [...document.querySelectorAll('*')].filter(
                e => [...e.attributes].some(a => /^on/i.test(a.name))).map(e => e.outerHTML.slice(0, 200))""")
            assert handlers == []
            assert page.evaluate("document.scripts.length") == scripts
            # the figures' scripts hold the payloads' text, escaped: none is a payload's script
            assert page.evaluate(r"""[...document.scripts].filter(
                s => /^\s*window\.__pwned|<(script|img|svg)\b[^<]*__pwned/i.test(s.text)).length""") == 0
            visible = page.evaluate("document.body.innerText")
            page.screenshot(path=str(tmp_path / "hostile-report.png"), full_page=True)
        finally:
            browser.close()
    browser_s = time.monotonic() - started
    print(f"browser: {browser_s:.1f} s, {figures} figures, {scripts} scripts; "
          f"screenshot {tmp_path / 'hostile-report.png'}")
    assert requested == []
    assert dialogs == []
    assert not INVISIBLE.search(visible), sorted({f"U+{ord(c):04X}" for c in INVISIBLE.findall(visible)})
    for group in (*GROUPS, TXN_GROUP):
        assert visible_text(group) in visible, f"group {group!r} not visible as {visible_text(group)!r}"
