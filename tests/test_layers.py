"""Imports point down the layers of the design, never up, and no module imports itself in a circle.

Layers, bottom first (``../shared/DESIGN.md``, ``ARCHITECTURE.md``)::

    errors (and params) -> formats -> bundle -> spark (and session, classarchive) -> analysis -> widgets -> application
    (report, inspect, dump, demo, cli, the package face ``workbench/__init__.py``)

Every ``import`` counts, at module level or inside a function (a lazy import is still a
dependency); imports under ``if TYPE_CHECKING:`` count too. Third-party packages are ignored.
Every analysis area is a package following one contract (``workbench.analysis.findings.Area``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("workbench", "widgets")

#: Module-name prefix -> layer number (the longest matching prefix wins).
LAYERS: dict[str, int] = {
    "workbench.errors": 0,
    "workbench.params": 0,  # times and typed values a person gives: every layer reads them one way
    "workbench.formats": 1,
    "workbench.bundle": 2,
    "workbench.spark": 3,
    "workbench.session": 3,
    "workbench.classarchive": 3,  # the session's JVM options; recording an archive is kernels' (layer 6)
    "workbench.analysis": 4,
    "widgets": 5,
    "workbench": 6,  # the package face and the application modules: report, cli, dump, ...
}


def layer(module: str) -> int | None:
    best = None
    for prefix, number in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, number)
    return None if best is None else best[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Project modules imported by ``path`` (absolute names; ``from a import b`` may name module a.b)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    known = set(all_modules())
    return {m for m in found if m in known and m != me}


def all_modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[module_name(path)] = path
    return out


def test_every_module_has_a_layer():
    missing = [m for m in all_modules() if layer(m) is None]
    assert not missing, missing


def test_no_import_points_up_the_layers():
    upward = []
    for name, path in all_modules().items():
        mine = layer(name)
        for target in sorted(imports(path)):
            theirs = layer(target)
            if theirs is not None and mine is not None and theirs > mine:
                upward.append(f"{name} (layer {mine}) imports {target} (layer {theirs})")
    assert not upward, "\n".join(upward)


def test_no_circular_imports():
    graph = {name: imports(path) for name, path in all_modules().items()}
    # a package's face hands names on; edges into a package mean its __init__, edges out of it are real
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, "\n".join(" <-> ".join(c) for c in circles)


def test_the_checker_sees_an_upward_import(tmp_path):
    """The checker itself: a formats module importing the spark layer is reported."""
    assert layer("workbench.formats.batch") == 1 and layer("workbench.spark.registry") == 3
    assert layer("workbench.report") == 6 and layer("widgets.isr") == 5
    assert layer("workbench.analysis.isr") == 4 < layer("widgets.isr")


#: The modules every area package holds: its contract (the result, analyse and the roles) and
#: its findings with their sentences; its computation is in modules named for what they compute.
AREA_MODULES = ("area", "verdicts")


def contract_problems(home: str, area) -> list[str]:
    """What keeps ``area`` (registered by the package ``home``) from the one area layout."""
    import importlib
    import importlib.util
    import inspect

    package = importlib.import_module(home)
    if not hasattr(package, "__path__"):
        return [f"{home} is a module, not a package"]
    problems = [f"{home} has no module {m}.py" for m in AREA_MODULES
                if importlib.util.find_spec(f"{home}.{m}") is None]
    for role, arguments in (("analyse", 2), ("findings", 1), ("frames", 1), ("key_figures", 1)):
        function = getattr(area, role)
        if function is None and role in ("frames", "key_figures"):   # optional roles
            continue
        if function.__module__ != f"{home}.area":
            problems.append(f"{home}: {role} is defined in {function.__module__}, not in {home}.area")
        try:
            inspect.signature(function).bind(*range(arguments))
        except TypeError:
            problems.append(f"{home}: {role} does not take {arguments} argument(s)")
    return problems


def test_every_area_is_a_package_with_the_one_contract():
    """Each registered area is the package ``workbench.analysis.<area>``: its four roles
    (analyse(tables, params) -> result; findings, frames and key figures of that result) in its
    ``area`` module, its findings and their sentences in ``verdicts``."""
    from workbench.analysis.findings import areas

    found = areas()
    assert {"quorum", "isr", "consumer_lag", "mirror", "tier"} <= set(found)
    problems = [p for name, area in found.items() for p in contract_problems(f"workbench.analysis.{name}", area)]
    assert problems == []


def test_the_contract_check_refuses_a_module_area_and_misplaced_roles(tmp_path, monkeypatch):
    """The check itself, on two areas written into a temporary directory: one a single module, one
    a package whose roles sit in ``__init__`` and which has no ``verdicts`` module."""
    from workbench.analysis.findings import Area

    (tmp_path / "zz_flat.py").write_text("def analyse(tables, params): pass\ndef findings(result): pass\n")
    (tmp_path / "zz_pkg").mkdir()
    (tmp_path / "zz_pkg" / "__init__.py").write_text("def analyse(tables, params): pass\ndef findings(result): pass\n")
    (tmp_path / "zz_pkg" / "area.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    import zz_flat
    import zz_pkg

    flat = Area("zz_flat", "Flat", 99, zz_flat.analyse, zz_flat.findings)
    assert contract_problems("zz_flat", flat) == ["zz_flat is a module, not a package"]
    misplaced = Area("zz_pkg", "Package", 99, zz_pkg.analyse, zz_pkg.findings)
    assert contract_problems("zz_pkg", misplaced) == [
        "zz_pkg has no module verdicts.py",
        "zz_pkg: analyse is defined in zz_pkg, not in zz_pkg.area",
        "zz_pkg: findings is defined in zz_pkg, not in zz_pkg.area",
    ]


def test_an_area_not_following_the_contract_is_refused():
    from workbench.analysis.findings import areas, register_area
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'zz_old': its findings must be called as findings\(result\)"):
        register_area("zz_old", title="Old style", order=99, analyse=lambda tables, params: None,
                      findings=lambda tables, params: None)
    with pytest.raises(ConfigError, match=r"its analyse must be called as analyse\(tables, params\)"):
        register_area("zz_old", title="Old style", order=99, analyse=lambda tables: None, findings=lambda r: r)
    assert "zz_old" not in areas()
