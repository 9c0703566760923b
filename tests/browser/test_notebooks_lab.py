"""The shipped notebooks, interactive, in JupyterLab in a real browser, on the demo bundle.

One JupyterLab server on 127.0.0.1 serves copies of every section notebook (the overview and one per
area) with no parameter set (so each opens the shipped demo bundle, ``report = False``: interactive widgets).
Their kernel is the one Binder builds from ``binder/``'s files alone (``tests/binder_env.py``: Spark
on one core with 512 MiB, ``binder/start``), so these runs are also the check that the notebooks run
in a Binder visitor's environment (``tests/test_notebooks.py`` runs the other notebooks there with
papermill).
One browser opens them one after another: runs every cell, checks that no cell failed and that
every plot the kernel holds was drawn, then exercises the links and filters, keeps a screenshot and
shuts the notebook's kernel down (so one Spark JVM at a time is alive).

How "every plot rendered" is judged: each prepared copy ends with one more code cell that lists, as
JSON, the title and trace count of every plotly ``FigureWidget`` alive in the kernel (after a
garbage collection, closed widgets left out; the views' widgets, ``widgets._figure.FigureWidget``,
open their comm only when first shown, and one never shown counts too). In the notebooks'
interactive mode every figure is a ``FigureWidget`` inside a displayed view, so that list is what
the page must show: the sorted
(title, ``gd.data.length``) list of the notebook's ``.js-plotly-plot`` graphs must equal it, and
in each graph every trace plotly counts as visible (``gd._fullData``, ``visible === true``) must be
drawn as one ``g.trace`` group (scatter and bar traces, the only types these views use, are drawn
as one ``g.trace`` each) holding at least one drawn mark. A figure made but not displayed fails
the comparison; the overview makes an area's view only when a finding is clicked, so its census is
taken twice: after running every cell (only the findings timeline exists) and again, by rerunning
the census cell, after the click (the timeline and the opened view's figures). A static figure
(``fig.show()``, drawn beside a view) is not held by the kernel: the census adds each one the
kernel sent in a cell's outputs.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from peer.cluster import free_ports
from tests.binder_env import write_lab_settings
from tests.browser.test_report_browser import ANNOUNCEMENTS, CHROMIUM, LAUNCH_ARGS
from widgets._frames import short_time
from workbench.report import section_notebooks

REPO = Path(__file__).resolve().parents[2]
#: Every section notebook (the overview and one per area), in their order.
NOTEBOOKS = tuple(p.stem for p in section_notebooks(REPO / "notebooks"))
CENSUS_MARK = "PLOTLY FIGURES "

pytestmark = [
    pytest.mark.browser,
    pytest.mark.spark,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]

#: The last cell of every prepared copy: the figures the kernel holds (see the module docstring).
CENSUS_CELL = f"""\
import gc as _gc
import json as _json

import plotly.graph_objects as _go

_gc.collect()
_figures = [o for o in _gc.get_objects() if isinstance(o, _go.FigureWidget)
            and (getattr(o, "comm", None) is not None or getattr(o, "unopened", False))]
print({CENSUS_MARK!r} + _json.dumps(sorted([str(f.layout.title.text or ""), len(f.data)] for f in _figures)))
"""

#: Readiness bounds, not speed checks: every kernel starts Spark (on one core, Binder's), and the
#: overview computes every area's findings of the demo bundle; a loaded 2-core machine needs minutes.
RUN_ALL_MS = 900_000
VIEW_MS = 300_000



def _prepare(name: str, root: Path, kernel: str) -> None:
    import nbformat

    nb = nbformat.read(str(REPO / "notebooks" / f"{name}.ipynb"), as_version=4)
    nb.metadata.pop("jupytext", None)  # no paired .py written next to it by the Lab extension
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.cells.append(nbformat.v4.new_code_cell(CENSUS_CELL, metadata={"tags": ["census"]}))
    nbformat.write(nb, str(root / f"{name}.ipynb"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, binder_kernel) -> Iterator[str]:
    """JupyterLab on loopback serving the section notebooks, unchanged but for the census cell and
    their kernel, Binder's."""
    from workbench.demo import demo_bundle_path

    kernel, binder_env, _ = binder_kernel
    root = tmp_path_factory.mktemp("lab")
    for name in NOTEBOOKS:
        _prepare(name, root, kernel)
    demo_bundle_path()  # extracted once into the cache here, where every kernel finds it
    port = free_ports(1)[0]
    # the kernel imports this checkout's workbench and widgets, whatever is installed
    config = tmp_path_factory.mktemp("jupyter-config")   # outside Lab's root
    write_lab_settings(config, REPO)   # Binder's JupyterLab settings (binder/overrides.json)
    env = {**binder_env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "JUPYTER_CONFIG_DIR": str(config)}
    subprocess.run([sys.executable, "-m", "jupyter", "labextension", "disable", "--level=user", ANNOUNCEMENTS],
                   env=env, check=True, capture_output=True, timeout=120)
    args = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", "--ServerApp.token=", "--ServerApp.password=",
        "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    log_path = root.parent / f"{root.name}-lab.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None:
                        pytest.fail(f"JupyterLab exited: {log_path.read_text()[-2000:]}")
                    time.sleep(0.3)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@pytest.fixture(scope="module")
def lab_page(lab: str) -> Iterator[Any]:
    """One browser page on the Lab for the whole module (each test opens its notebook in it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            # the page's own errors, printed when a figure check fails (a view that never drew)
            pg.on("console", lambda m: (m.type in ("error", "warning") or "anywidget" in m.text)
                  and PAGE_ERRORS.append(f"console {m.type}: {m.text}"[:500]))
            pg.on("pageerror", lambda e: PAGE_ERRORS.append(f"pageerror: {e}"[:500]))
            pg.goto(f"{lab}/lab?reset", timeout=60_000)
            pg.wait_for_function("() => window.jupyterapp && window.jupyterapp.started !== undefined",
                                 timeout=60_000)
            pg.evaluate("() => window.jupyterapp.started")
            yield pg
        finally:
            browser.close()


# --------------------------------------------------------------------------------------------
# helpers: the current notebook, its cells and its plots

CURRENT = "window.jupyterapp.shell.currentWidget"
#: Errors the Lab page logged (console errors and uncaught exceptions), newest last.
PAGE_ERRORS: list[str] = []

RUN_DONE = f"""(name) => {{
    const nb = {CURRENT};
    if (!nb || !nb.context || nb.context.path !== name || !nb.sessionContext.session) return false;
    const kernel = nb.sessionContext.session.kernel;
    if (!kernel || kernel.status !== 'idle') return false;
    const cells = nb.content.widgets.filter(c => c.model.type === 'code');
    if (cells.some(c => (c.promptNode && c.promptNode.textContent || '').includes('*'))) return false;
    const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
    return failed || cells.every(c => c.model.executionCount !== null);
}}"""

ERRORS = f"""() => {{
    const nb = {CURRENT};
    const found = [];
    nb.content.widgets.forEach((c, i) => {{
        if (c.model.type !== 'code') return;
        for (const o of c.model.outputs.toJSON()) {{
            if (o.output_type === 'error') found.push(`cell ${{i}}: ${{o.ename}}: ${{o.evalue}}`);
        }}
    }});
    nb.node.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
        .forEach(e => {{ if (e.textContent.includes('Traceback')) found.push(e.textContent.slice(0, 2000)); }});
    return found;
}}"""

CENSUS = f"""(mark) => {{
    const nb = {CURRENT};
    const cells = nb.content.widgets;
    const last = cells[cells.length - 1];
    for (const o of last.model.outputs.toJSON()) {{
        const text = Array.isArray(o.text) ? o.text.join('') : (o.text || '');
        const at = text.indexOf(mark);
        if (o.output_type === 'stream' && at >= 0) return text.slice(at + mark.length).split('\\n')[0];
    }}
    return null;
}}"""

#: The static figures the kernel sent (``fig.show()``: a plotly mimetype bundle in a cell's outputs,
#: not a widget it holds), as (title, number of traces), to be drawn as well.
STATIC_FIGURES = f"""() => {{
    const out = [];
    for (const cell of {CURRENT}.content.widgets) {{
        for (const o of (cell.model.outputs ? cell.model.outputs.toJSON() : [])) {{
            const fig = o.data && o.data['application/vnd.plotly.v1+json'];
            if (!fig) continue;
            const title = fig.layout && fig.layout.title;
            out.push([typeof title === 'string' ? title : (title && title.text) || '', (fig.data || []).length]);
        }}
    }}
    return out;
}}"""

PLOTS = f"""() => Array.from({CURRENT}.node.querySelectorAll('.jp-OutputArea .js-plotly-plot')).map(gd => {{
    const title = gd.layout && gd.layout.title;
    const visible = (gd._fullData || []).filter(t => t.visible === true);
    const groups = Array.from(gd.querySelectorAll('g.trace'));
    const marked = groups.filter(g => Array.from(g.querySelectorAll('path')).some(p => {{
        const d = p.getAttribute('d');
        return d && d !== 'M0,0Z' && d.length > 3;
    }}) || g.querySelector('text'));
    return {{
        title: typeof title === 'string' ? title : (title && title.text) || '',
        data: (gd.data || []).length,
        visible: visible.length,
        drawn: groups.length,
        marked: marked.length,
        laidOut: Boolean(gd._fullLayout && gd._fullLayout._size),
        types: Array.from(new Set(visible.map(t => t.type))),
    }};
}})"""

LAB_PLOT = ".jp-OutputArea .js-plotly-plot"
#: Scroll the first figure the page has not drawn yet into view, as a reader scrolling to it does:
#: plotly's widget view lays a figure out once its output has been on screen, and one whose output
#: arrived while the notebook showed other cells stays an empty frame until then (CI: the quorum,
#: ISR and consumer-lag notebooks' figures, with JupyterLab's windowing off as well). Scrolling each
#: figure into view from Playwright first (:func:`_plots_match_kernel`) is what draws them. Not drawn
#: yet is also the view's placeholder: plotly's widget plots an empty frame (no title, no trace) when
#: its output is attached and the figure itself once the attachment completes (CI: both tier figures
#: of 04 were still placeholders after the first pass); every figure of ours has a title.
SHOW_UNDRAWN = f"""() => {{
    const undrawn = Array.from({CURRENT}.node.querySelectorAll('{LAB_PLOT}'))
        .find(gd => !(gd._fullLayout && gd._fullLayout._size) || !(gd.layout && gd.layout.title));
    if (undrawn) undrawn.scrollIntoView({{block: 'center'}});
    return !undrawn;
}}"""

XRANGES = f"""(title) => {{
    const out = [];
    for (const gd of {CURRENT}.node.querySelectorAll('.jp-OutputArea .js-plotly-plot')) {{
        const t = gd.layout && gd.layout.title;
        const text = typeof t === 'string' ? t : (t && t.text) || '';
        if (title !== null && !text.startsWith(title)) continue;
        const axes = Object.keys(gd._fullLayout).filter(k => /^xaxis\\d*$/.test(k)).sort();
        out.push({{title: text, ranges: axes.map(k => [k, gd.layout[k] && gd.layout[k].range,
                                                   gd._fullLayout[k].range, gd._fullLayout[k].type])}});
    }}
    return out;
}}"""


@contextlib.contextmanager
def _notebook(page: Any, lab: str, name: str, shot: Path) -> Iterator[None]:
    """Open ``name`` and run every cell; at the end (even a failed one) keep a screenshot and shut
    its kernel down, so that the next notebook's Spark is the only one alive."""
    try:
        _open_and_run(page, name)
        yield
    finally:
        _shutdown_and_close(page, lab, name, shot)
        print(f"screenshot: {shot}")


def _open_and_run(page: Any, name: str) -> None:
    path = f"{name}.ipynb"
    page.evaluate("async (path) => { await window.jupyterapp.commands.execute('docmanager:open', "
                  "{path, factory: 'Notebook'}); }", path)
    page.wait_for_function(
        f"""(path) => {{ const nb = {CURRENT}; return Boolean(nb && nb.context && nb.context.path === path
            && nb.sessionContext.session && nb.sessionContext.session.kernel
            && nb.sessionContext.session.kernel.status === 'idle'); }}""",
        arg=path, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_timeout(1_000)
    page.wait_for_function(RUN_DONE, arg=path, timeout=RUN_ALL_MS, polling=1_000)
    errors = page.evaluate(ERRORS)
    assert errors == [], errors


def _census(page: Any) -> list[list[Any]]:
    text = page.evaluate(CENSUS, CENSUS_MARK)
    assert text is not None, "the census cell printed nothing"
    return json.loads(text) + page.evaluate(STATIC_FIGURES)


LAST_COUNT = f"() => {{ const c = {CURRENT}.content.widgets; return c[c.length - 1].model.executionCount; }}"


def _rerun_census(page: Any, name: str) -> list[list[Any]]:
    """Run the census cell again (after the kernel has handled what the page sent it before)."""
    count = page.evaluate(LAST_COUNT)
    page.evaluate(f"""() => {{ const nb = {CURRENT}; nb.content.activeCellIndex = nb.content.widgets.length - 1;
        window.jupyterapp.commands.execute('notebook:run-cell'); }}""")
    page.wait_for_function(f"(n) => ({LAST_COUNT})() !== null && ({LAST_COUNT})() > n", arg=count,
                           timeout=VIEW_MS, polling=500)
    page.wait_for_function(RUN_DONE, arg=f"{name}.ipynb", timeout=VIEW_MS, polling=500)
    return _census(page)


def _plots_match_kernel(page: Any, census: list[list[Any]]) -> list[dict]:
    """Wait until the page shows every figure the kernel holds, each drawn; return the plots."""
    expected = sorted([str(t), int(n)] for t, n in census)
    frames = page.locator(LAB_PLOT)
    for i in range(frames.count()):   # each figure on screen once, as a reader scrolls past it
        frames.nth(i).scroll_into_view_if_needed()
        page.wait_for_timeout(500)
    try:
        page.wait_for_function(
            f"""(n) => {{ ({SHOW_UNDRAWN})(); const p = ({PLOTS})(); return p.length === n
                && p.every(g => g.laidOut && g.drawn === g.visible && g.marked === g.visible); }}""",
            arg=len(expected), timeout=VIEW_MS, polling=500)
    except Exception:  # noqa: BLE001  (the assertions below say what differs)
        pass
    plots = page.evaluate(PLOTS)
    shown = sorted([p["title"], p["data"]] for p in plots)
    assert shown == expected, f"page: {shown}\nkernel: {expected}\npage errors: {PAGE_ERRORS[-10:]}"
    for p in plots:
        assert p["laidOut"], p
        assert set(p["types"]) <= {"scatter", "bar"}, p  # g.trace per trace holds for these types
        assert p["drawn"] == p["visible"], p
        assert p["marked"] == p["visible"], p
    return plots


def _shutdown_and_close(page: Any, lab: str, name: str, shot: Path) -> None:
    page.screenshot(path=str(shot))
    page.evaluate(f"""async () => {{ const nb = {CURRENT};
        await nb.sessionContext.shutdown();
        nb.context.model.dirty = false;
        nb.close(); }}""")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{lab}/api/kernels", timeout=10) as r:
            if json.load(r) == []:
                break
        time.sleep(0.5)
    else:
        pytest.fail(f"{name}: the kernel is still running after its shutdown")


def _scroll_to(page: Any, title: str) -> Any:
    plot = page.locator(".jp-OutputArea .js-plotly-plot", has=page.locator(".gtitle", has_text=title)).first
    plot.scroll_into_view_if_needed()
    return plot


def _ts(value: str) -> pd.Timestamp:
    return pd.Timestamp(value)


# --------------------------------------------------------------------------------------------
# the tests, one per notebook, in the order of NOTEBOOKS


TIMELINE = "Findings over time, by area"


def _click_finding(page: Any, timeline: Any, lane: str | None) -> tuple[list, pd.Timestamp, pd.Timestamp]:
    """Click the first bar (of the first severity trace holding one) in ``lane`` (None: any lane);
    return the finding's hover data and the window the timeline moved to, checked against the
    finding: its span padded by half its length, at least 5 s, each side."""
    k, i = timeline.evaluate("""(gd, lane) => {
        for (let k = 0; k < gd.data.length; k++) {
            const i = lane === null ? 0 : Array.from(gd.data[k].y).indexOf(lane);
            if (i >= 0 && gd.data[k].y.length > i) return [k, i];
        }
        return [-1, -1]; }""", lane)
    assert k >= 0, f"no finding in the lane {lane!r}"
    finding = timeline.evaluate("(gd, ki) => gd.data[ki[0]].customdata[ki[1]]", [k, i])  # subject, kind, start, end
    bar = timeline.locator(".barlayer g.trace").nth(k).locator("g.point path").nth(i)
    bar.scroll_into_view_if_needed()
    bar_box = bar.bounding_box()
    area = timeline.locator(".draglayer .xy .nsewdrag").first.bounding_box()  # the plot area
    assert bar_box and area, (bar_box, area)
    left, right = max(bar_box["x"], area["x"]), min(bar_box["x"] + bar_box["width"], area["x"] + area["width"])
    top, bottom = max(bar_box["y"], area["y"]), min(bar_box["y"] + bar_box["height"], area["y"] + area["height"])
    assert left < right and top < bottom, f"the bar is not in the plot area: {bar_box}, {area}"
    page.mouse.click((left + right) / 2, (top + bottom) / 2)  # the middle of the bar's visible part
    f_start, f_end = _ts(finding[2]), _ts(finding[3])
    pad = max((f_end - f_start) * 0.5, pd.Timedelta(seconds=5))
    want = (f_start - pad, f_end + pad)
    deadline = time.monotonic() + VIEW_MS / 1000
    while (got := _typed_window(page)) != want and time.monotonic() < deadline:
        time.sleep(0.5)
    assert got == want, (got, want, finding)
    return finding, want[0], want[1]


def _time_box(page: Any, label: str) -> Any:
    return page.locator(".jp-OutputArea .widget-text").filter(has=page.locator("label", has_text=label)).first


def _typed_window(page: Any) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    values = [_time_box(page, label).locator("input").input_value() for label in ("From (UTC)", "To (UTC)")]
    return tuple(_ts(v) if v else None for v in values)  # type: ignore[return-value]


def _type_window(page: Any, lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> None:
    for label, value in (("From (UTC)", lo), ("To (UTC)", hi)):
        field = _time_box(page, label).locator("input")
        field.fill("" if value is None else value.strftime("%Y-%m-%d %H:%M:%S"))
        field.press("Enter")  # continuous_update=False: the value is sent on Enter


def _opened_view(page: Any, before: set[str], name: str) -> list[str]:
    """The view a click opened (the census is taken again until the kernel holds it): every
    figure the kernel holds is drawn, but those of views opened before, which the overview leaves
    open in the kernel when it replaces them; return its figures' titles."""
    deadline = time.monotonic() + VIEW_MS / 1000
    while True:  # the kernel may take the census before the click's callback has built the view
        census = _rerun_census(page, name)
        if any(t not in before and t != TIMELINE for t, _ in census) or time.monotonic() > deadline:
            break
        time.sleep(2)
    shown = [[t, n] for t, n in census if t not in before]
    _plots_match_kernel(page, shown)
    opened = [t for t, _ in shown if t != TIMELINE]
    assert opened, f"no view opened; the kernel holds {census}"
    return opened


#: pytest-timeout's limit for the first test of the module: its setup may build the Binder environment
#: (or wait for the other lane's build) and start JupyterLab, then its run waits up to RUN_ALL_MS and
#: VIEW_MS, each failing with its own message; on a loaded CI machine the default 900 s ran out
#: first, its signal interrupting Playwright's wait with no message of what was not ready.
LAB_TEST_TIMEOUT_S = 3600


@pytest.mark.full   # make test-full; make test runs the same notebooks in Binder's kernel as the demo report
@pytest.mark.timeout(LAB_TEST_TIMEOUT_S)
def test_overview_findings_timeline_opens_and_moves_the_area_view(lab_page: Any, lab: str, tmp_path: Path) -> None:
    """Run every cell (every plot drawn). Click the earliest critical finding: its area's view
    opens below the timeline with every plot drawn and every time axis at the window around the
    finding; type a range into From/To: the timeline's axis and the opened view's move to exactly
    it. (The opened view is the quorum's on the demo bundle.)"""
    page = lab_page
    with _notebook(page, lab, "00_overview", tmp_path / "00_overview.png"):
        census = _census(page)
        assert [t for t, _ in census] == [TIMELINE], census  # no area view before a click
        _plots_match_kernel(page, census)
        timeline = _scroll_to(page, TIMELINE)
        lanes = timeline.locator(".yaxislayer-above text").all_text_contents()
        assert len(set(lanes)) >= 5, lanes  # the demo bundle has findings in (at least) the five areas it stages
        names = timeline.evaluate("gd => gd.data.map(t => t.name)")
        assert names[0] == "critical", names
        # drawn area by area: nothing of the "computing" drawings is left on the page
        assert timeline.evaluate("gd => (gd.layout.annotations || []).map(a => a.text)") == []

        # the earliest critical finding
        finding, lo, hi = _click_finding(page, timeline, None)
        opened = _opened_view(page, set(), "00_overview")
        print(f"clicked {finding[1]} on {finding[0]} ({finding[2]} → {finding[3]}); opened: {opened}")
        _assert_views_at(page, opened, lo, hi, "the opened view after the click", timeout_s=VIEW_MS / 1000)
        _assert_slider_names(page, lo, hi, "the opened view after the click")
        # the screenshot shows the opened view, not wherever the page was (Lab draws cells as they scroll in)
        _scroll_to(page, opened[0]).wait_for(state="visible")
        page.wait_for_timeout(1000)
        page.screenshot(path=str(tmp_path / "overview-clicked.png"))
        new_lo, new_hi = (lo - pd.Timedelta(seconds=60)).floor("s"), (hi + pd.Timedelta(seconds=30)).ceil("s")
        _type_window(page, new_lo, new_hi)
        _assert_views_at(page, [TIMELINE, *opened], new_lo, new_hi, "the timeline and the opened view after "
                         "typing a range", timeout_s=VIEW_MS / 1000)
        _assert_slider_names(page, new_lo, new_hi, "the opened view after typing a range")

        _scroll_to(page, TIMELINE)
    print(f"screenshot: {tmp_path / 'overview-clicked.png'}")


def _assert_slider_names(page: Any, lo: pd.Timestamp, hi: pd.Timestamp, when: str) -> None:
    """The opened view's status line names the window shown, and its time slider's handles sit on
    it (the readout starts at the window's start, not at an observation around it)."""
    words = f"{short_time(lo)} to {short_time(hi)} UTC"
    status = page.locator(".jp-OutputArea .widget-html-content", has_text=words)
    try:
        status.first.wait_for(timeout=VIEW_MS)
    except Exception as exc:  # noqa: BLE001 - say what was shown instead
        shown = page.locator(".jp-OutputArea .widget-html-content").all_text_contents()
        raise AssertionError(f"{when}: no status line says {words!r}; shown: {shown}") from exc
    readouts = page.locator(".jp-OutputArea .widget-readout").all_text_contents()
    assert any(r.startswith(short_time(lo)[11:]) for r in readouts), f"{when}: slider readouts {readouts}"


def _x_ranges(page: Any, titles: list[str]) -> dict[str, list[tuple[str, Any]]]:
    """The drawn range (``_fullLayout``) of every time (x) axis of the figures titled ``titles``."""
    found = page.evaluate(XRANGES, None)
    return {p["title"]: [(r[0], r[2]) for r in p["ranges"] if r[3] == "date"] for p in found if p["title"] in titles}


def _spans(ranges: list[tuple[str, Any]], lo: pd.Timestamp, hi: pd.Timestamp) -> bool:
    try:
        return bool(ranges) and all(r and (_ts(r[0]), _ts(r[1])) == (lo, hi) for _, r in ranges)
    except (TypeError, ValueError):
        return False


def _assert_views_at(page: Any, titles: list[str], lo: pd.Timestamp, hi: pd.Timestamp, when: str,
                     timeout_s: float = 60) -> None:
    """Every x axis of the figures titled ``titles`` spans exactly ``[lo, hi]`` (waiting for the redraw)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = _x_ranges(page, titles)
        if set(got) == set(titles) and all(_spans(r, lo, hi) for r in got.values()):
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    bad = {t: r for t, r in got.items() if not _spans(r, lo, hi)}
    raise AssertionError(f"{when}: expected every x axis at [{lo}, {hi}]; differs: {bad}; all: {got}")


FIGURE = f"""(prefix) => {{
    for (const gd of {CURRENT}.node.querySelectorAll('.jp-OutputArea .js-plotly-plot')) {{
        const t = gd.layout && gd.layout.title;
        const title = typeof t === 'string' ? t : (t && t.text) || '';
        if (!title.startsWith(prefix)) continue;
        const y = gd._fullLayout.yaxis || {{}};
        return {{title, names: gd.data.map(d => d.name || ''), rows: Array.from(y.categoryarray || []),
                 ytitle: (y.title && y.title.text) || '', drawn: gd.querySelectorAll('g.trace').length}};
    }}
    return null;
}}"""


def _figure(page: Any, prefix: str) -> dict | None:
    return page.evaluate(FIGURE, prefix)


def _until(page: Any, prefix: str, changed: Any, what: str) -> dict:
    """Wait until the figure titled ``prefix...`` satisfies ``changed(figure)``; return it."""
    deadline = time.monotonic() + VIEW_MS / 1000
    while True:
        fig = _figure(page, prefix)
        if fig is not None and changed(fig):
            return fig
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: the figure {prefix!r} did not change as expected: {fig}\n"
                                 f"page errors: {PAGE_ERRORS[-10:]}")
        time.sleep(0.5)


def _choose(page: Any, label: str, index: int = 0) -> str:
    """Select option ``index`` of the SelectMultiple described ``label``; return the option's text."""
    box = page.locator(".jp-OutputArea .widget-select-multiple").filter(
        has=page.locator("label", has_text=label)).first
    box.scroll_into_view_if_needed()
    select = box.locator("select")
    options = [o.replace("\xa0", " ") for o in select.locator("option").all_text_contents()]
    assert len(options) > index, (label, options)
    select.select_option(index=index)
    return options[index]


@pytest.mark.full   # make test-full, with the overview above
def test_quorum_node_filter(lab_page: Any, lab: str, tmp_path: Path) -> None:
    """Every plot drawn; choosing one node leaves only that node's series (and its fence marks)."""
    page = lab_page
    with _notebook(page, lab, "01_quorum", tmp_path / "01_quorum.png"):
        census = _census(page)
        _plots_match_kernel(page, census)
        title = "Quorum offset divergence"
        before = _figure(page, title)
        assert before is not None and before["names"], census
        nodes = {n.split(" · ")[0] for n in before["names"] if n.startswith("node ")}
        assert len(nodes) >= 2, before["names"]
        node = _choose(page, "Nodes", 0)
        after = _until(page, title, lambda f: f["names"] != before["names"], "node filter")
        lines = [n for n in after["names"] if n.startswith("node ")]
        assert lines and all(n.startswith(f"node {node} · ") for n in lines), (node, after["names"])
        assert len(after["names"]) < len(before["names"])
        assert after["drawn"] == len(after["names"])
        _plots_match_kernel(page, _rerun_census(page, "01_quorum"))
        _scroll_to(page, title)
        print(f"01_quorum: {len(before['names'])} traces, node {node} alone: {len(after['names'])}")


@pytest.mark.full   # make test-full, with the overview above
def test_isr_topic_filter(lab_page: Any, lab: str, tmp_path: Path) -> None:
    """Every plot drawn; choosing one topic leaves only its partitions' rows on the timeline."""
    page = lab_page
    with _notebook(page, lab, "02_isr", tmp_path / "02_isr.png"):
        census = _census(page)
        _plots_match_kernel(page, census)
        title = "Partition ISR state over time"
        before = _figure(page, title)
        assert before is not None and before["rows"], census
        topic = _choose(page, "Topics", 0)
        after = _until(page, title, lambda f: f["rows"] != before["rows"], "topic filter")
        assert after["rows"] and all(r.rsplit("-", 1)[0] == topic for r in after["rows"]), (topic, after["rows"])
        assert set(after["rows"]) < set(before["rows"]) or len(after["rows"]) < len(before["rows"])
        _plots_match_kernel(page, _rerun_census(page, "02_isr"))
        _scroll_to(page, title)
        print(f"02_isr: {len(before['rows'])} rows, topic {topic}: {len(after['rows'])}")


@pytest.mark.full   # make test-full, with the overview above
def test_consumer_lag_top_n(lab_page: Any, lab: str, tmp_path: Path) -> None:
    """Every plot drawn; Top N = 1 leaves one line in the lag-over-time figure."""
    page = lab_page
    with _notebook(page, lab, "03_consumer_lag", tmp_path / "03_consumer_lag.png"):
        census = _census(page)
        _plots_match_kernel(page, census)
        title = "Lag at each commit"
        before = _figure(page, title)
        assert before is not None and len(before["names"]) >= 2, census
        top = page.locator(".jp-OutputArea .widget-inline-hbox").filter(
            has=page.locator("label", has_text="Top N")).first.locator("input")
        top.scroll_into_view_if_needed()
        top.fill("1")
        top.press("Enter")
        after = _until(page, title, lambda f: len(f["names"]) == 1, "Top N")
        assert after["names"][0] == before["names"][0]  # the worst line stays
        assert after["drawn"] == 1
        _plots_match_kernel(page, _rerun_census(page, "03_consumer_lag"))
        _scroll_to(page, title)
        print(f"03_consumer_lag: {len(before['names'])} lines, Top N = 1: {after['names']}")


@pytest.mark.full   # make test-full, with the overview above
def test_mirror_and_tier_filters(lab_page: Any, lab: str, tmp_path: Path) -> None:
    """Every plot drawn; choosing one source partition leaves its backlog traces only; the tier
    view's measure set to bytes redraws its backlog in bytes."""
    page = lab_page
    with _notebook(page, lab, "04_mirror_and_tier", tmp_path / "04_mirror_and_tier.png"):
        census = _census(page)
        _plots_match_kernel(page, census)
        mirror = "MirrorMaker 2 replication-record-lag"
        before = _figure(page, mirror)
        assert before is not None and before["names"], census
        labels = sorted({n.rsplit(" ", 1)[0] if n.endswith((" min", " max", " avg")) else n
                         for n in before["names"]})
        assert len(labels) >= 2, before["names"]
        chosen = _choose(page, "Partitions", 0)
        after = _until(page, mirror, lambda f: f["names"] != before["names"], "partition filter")
        assert after["names"] and all(n == chosen or n.startswith(chosen + " ") for n in after["names"]), \
            (chosen, after["names"])
        tier = "Tiered-storage backlog per partition"
        tier_before = _figure(page, tier)
        assert tier_before is not None and tier_before["names"], census
        buttons = page.locator(".jp-OutputArea .widget-toggle-buttons").filter(
            has=page.locator("label", has_text="Measure")).first
        buttons.scroll_into_view_if_needed()
        buttons.locator("button", has_text="bytes").click()
        tier_after = _until(page, tier, lambda f: f["title"] != tier_before["title"], "tier measure")
        assert "bytes" in tier_after["ytitle"], tier_after
        _plots_match_kernel(page, _rerun_census(page, "04_mirror_and_tier"))
        _scroll_to(page, mirror)
        print(f"04: mirror {len(before['names'])} traces, {chosen}: {len(after['names'])}; "
              f"tier: {tier_before['title']!r} -> {tier_after['title']!r}")
