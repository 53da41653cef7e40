"""The package's import graph has no cycles, and big modules say why they are big.

The graph is read from the source with `ast`, not by importing: every `import` and
`from ... import` anywhere in a module counts (module level, inside functions, under
`if TYPE_CHECKING:`), relative imports are resolved against the importing module, and
`from pkg import name` points at `pkg.name` when that is a submodule, else at `pkg`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "edgebench"
PACKAGE = "edgebench"
MAX_LINES_WITHOUT_REASON = 400
SIZE_REASON_PREFIX = "Size:"


def module_files(root: Path = PACKAGE_ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package root."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package, *parts])] = path
    return modules


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _owning_module(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that `name` is or lies inside."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules that module `name` (source at `path`) imports, anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                source = _resolve_relative(name, is_package, node.level, node.module)
            else:
                source = node.module or ""
            targets = [source]
            # `from pkg import sub` imports the submodule pkg.sub when one exists
            targets += [f"{source}.{alias.name}" for alias in node.names
                        if f"{source}.{alias.name}" in modules]
        for target in targets:
            if target != PACKAGE and not target.startswith(PACKAGE + "."):
                continue
            owner = _owning_module(target, modules)
            if owner is not None and owner != name:
                found.add(owner)
    return found


def import_graph(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    modules = module_files() if modules is None else modules
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _cycle_path(graph: dict[str, set[str]], component: list[str]) -> str:
    """The shortest loop through the component's first module, e.g. 'a -> b -> a', for the message."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return " -> ".join([*reversed(path), start])
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return ", ".join(component)


def test_the_graph_sees_imports_everywhere(tmp_path):
    pkg = tmp_path / "edgebench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..top import Thing\n"
    )
    (pkg / "top.py").write_text(
        "import json\n"
        "def f():\n    from .sub.leaf import x\n"
        "def g():\n    import edgebench.mid\n"
    )
    (pkg / "mid.py").write_text("from edgebench.sub import leaf, not_a_module\n")
    modules = module_files(pkg, "edgebench")
    graph = import_graph(modules)
    assert graph["edgebench.top"] == {"edgebench.sub.leaf", "edgebench.mid"}
    assert graph["edgebench.sub.leaf"] == {"edgebench.top"}
    assert graph["edgebench.sub"] == {"edgebench.sub.leaf"}
    assert graph["edgebench.mid"] == {"edgebench.sub", "edgebench.sub.leaf"}
    loop = ["edgebench.mid", "edgebench.sub", "edgebench.sub.leaf", "edgebench.top"]
    assert cycles(graph) == [loop]
    assert _cycle_path(graph, loop) == (
        "edgebench.mid -> edgebench.sub.leaf -> edgebench.top -> edgebench.mid")


def test_cycles_finds_each_component_once():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_inside_the_package():
    graph = import_graph()
    assert "edgebench.cli" in graph and graph["edgebench.cli"], "the walk found no imports at all"
    found = cycles(graph)
    assert not found, "import cycles inside edgebench/ (break each with a lower shared module):\n" + "\n".join(
        _cycle_path(graph, component) for component in found)


def _docstring_states_size_reason(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return any(line.strip().startswith(SIZE_REASON_PREFIX) for line in doc.splitlines())


def test_big_modules_state_why_in_their_docstring():
    too_big = []
    for name, path in module_files().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES_WITHOUT_REASON and not _docstring_states_size_reason(path):
            too_big.append(f"{name} ({lines} lines)")
    assert not too_big, (
        f"modules over {MAX_LINES_WITHOUT_REASON} lines without a '{SIZE_REASON_PREFIX} ...' line in "
        "their docstring (split them where a second job hides, or say why one job needs the room): "
        + ", ".join(too_big))


@pytest.mark.parametrize("text, expected", [
    ('"""One job.\n\nSize: a parser table that reads best whole.\n"""\n', True),
    ('"""One job; the size is fine."""\n', False),
    ('x = 1\n', False),
])
def test_size_reason_is_read_from_the_docstring(tmp_path, text, expected):
    path = tmp_path / "m.py"
    path.write_text(text)
    assert _docstring_states_size_reason(path) is expected


# ------------------------------------------------------------------ stages: which folder may import which

# The tree reads config -> models -> backends -> runner -> pipeline -> results -> answer -> report, with the command
# layer on top. A stage is the folder right under edgebench/ (or a top-level module: errors, atomic_files,
# cli). Each may import only the stages listed here (its own modules always); the list itself is acyclic.
LOWEST = {"errors", "atomic_files", "file_sizes", "process_lifetime", "placement", "edgebench"}  # `edgebench` = the package's __init__ (its __version__)
ALLOWED_STAGE_IMPORTS: dict[str, set[str]] = {
    "errors": set(),
    "atomic_files": set(),
    "file_sizes": set(),  # a folder's bytes and file system: the runner measures its work folder, results its rows
    "process_lifetime": set(),  # a child that dies with its parent: the runner's workers, the models' build steps
    "interrupt_guard": set(),  # the command's Ctrl-C that waits for a lazy import to end (cli installs it)
    "placement": set(),  # the placement grammar: config carries it, telemetry (below config) reads it too
    "edgebench": set(),
    "telemetry": LOWEST,
    "config": LOWEST | {"telemetry"},  # telemetry.catalog (samplers a profile may list), power_calibration (checks)
    "device": LOWEST | {"telemetry", "config"},
    "models": LOWEST | {"config"},
    "evaluation": LOWEST | {"config", "models"},
    "backends": LOWEST | {"config", "models", "device", "evaluation",
                          "results"},  # results.layer_profile: the layers.csv format trt_layers writes
    "runner": LOWEST | {"config", "models", "backends", "telemetry", "evaluation", "device"},
    "results": LOWEST | {"config"},  # the row's parts come in as plain dicts/dataclasses
    "pipeline": LOWEST | {"config", "models", "backends", "runner", "telemetry", "evaluation", "device",
                          "results"},
    # the decision layer: candidates, limits on every repeat, intervals, best, Pareto (renders nothing)
    "answer": LOWEST | {"config", "results",
                        "telemetry"},  # telemetry.host_share: the busy-host rule a row's step wrote, read back from old rows
    "report": LOWEST | {"config", "results", "answer"},
    # the adaptive search: decides through the answer layer, renders its end through report, measures through the sweep
    "search": LOWEST | {"config", "results", "answer", "report", "pipeline"},
    "commands": LOWEST | {"config", "models", "backends", "telemetry", "device", "evaluation",
                          "results"},  # results.reader: the console shows typed rows
    "remote": LOWEST | {"config", "models", "commands"},
    "cli": LOWEST | {"interrupt_guard", "commands", "config", "models", "backends", "runner", "telemetry", "evaluation", "device",
                     "pipeline", "results", "answer", "report", "remote", "search"},
    "__main__": {"cli"},
}


def stage_of(module: str) -> str:
    """'edgebench.models.export' -> 'models'; 'edgebench.cli' -> 'cli'; 'edgebench' -> 'edgebench'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def stage_violations(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = stage_of(module)
        for target in sorted(targets):
            there = stage_of(target)
            if there != here and there not in allowed.get(here, set()):
                found.append(f"{module} -> {target} ({here} may not import {there})")
    return found


def test_stage_violations_name_the_import():
    graph = {"edgebench.models.export": {"edgebench.pipeline.sweep", "edgebench.config.profile"},
             "edgebench.config.profile": {"edgebench.config.fields"}}
    allowed = {"models": {"config"}, "config": set()}
    assert stage_violations(graph, allowed) == [
        "edgebench.models.export -> edgebench.pipeline.sweep (models may not import pipeline)"]


def test_the_stage_allowlist_is_itself_layered():
    graph = {stage: set(targets) for stage, targets in ALLOWED_STAGE_IMPORTS.items()}
    assert cycles(graph) == [], "ALLOWED_STAGE_IMPORTS must stay acyclic, or the stages are not layers"
    assert all(t in ALLOWED_STAGE_IMPORTS for targets in graph.values() for t in targets)


def test_every_stage_imports_only_what_the_allowlist_says():
    graph = import_graph()
    stages = {stage_of(m) for m in graph}
    assert stages <= set(ALLOWED_STAGE_IMPORTS), f"stages missing from the allowlist: {stages - set(ALLOWED_STAGE_IMPORTS)}"
    found = stage_violations(graph, ALLOWED_STAGE_IMPORTS)
    assert not found, "imports across stages outside tests/test_import_graph.py's allowlist:\n" + "\n".join(found)


def imports_inside_functions(path: Path) -> list[str]:
    """'line N: from edgebench.x import y' for each of the package's own imports inside a function body."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            own = (isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").split(".")[0] == PACKAGE)
                   or isinstance(inner, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in inner.names))
            if own:
                found.append(f"line {inner.lineno}: {ast.unparse(inner)}")
    return found


def test_imports_inside_functions_are_found(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import json\nfrom edgebench.errors import ConfigError\n"
                    "def f():\n    import numpy\n    from edgebench.models import export\n    return export\n")
    assert imports_inside_functions(path) == ["line 5: from edgebench.models import export"]


def test_the_package_imports_its_own_modules_at_the_top():
    """Frameworks are imported lazily inside functions; edgebench's own modules at the top of the file, so a
    reader sees a module's dependencies in one place (and the import graph above is what really loads)."""
    inside = {name: found for name, path in module_files().items() if (found := imports_inside_functions(path))}
    assert not inside, "edgebench imports inside functions (move them to the top of the module):\n" + "\n".join(
        f"{name}: {line}" for name, lines in sorted(inside.items()) for line in lines)


def test_help_loads_no_framework():
    """With every own import at module top, `edgebench --help` loads the whole package: still no framework."""
    import subprocess
    import sys

    code = ("import sys, runpy; sys.argv = ['edgebench', '--help']\n"
            "try:\n    runpy.run_module('edgebench', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = ('torch', 'onnx', 'onnxruntime', 'tensorrt', 'pynvml', 'jtop', 'matplotlib', 'numpy', 'yaml')\n"
            "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=PACKAGE_ROOT.parent)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED")]
    assert line == ["LOADED []"], out.stdout[-2000:] + out.stderr[-2000:]
