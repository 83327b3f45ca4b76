"""The layer rules of docs/architecture.md, checked on every module under src/edgepick.

The rules are read from the doc's tables, so the page and the check cannot drift apart. Imports
are collected with `ast` from the whole module, so an import inside a function counts like one at
the top; importing `a.b.c` from another package also runs the package `a.b`'s `__init__`, so that
counts too.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"

# (importer, imported) → why it is still allowed, and who removes it. The goal is none; an entry
# that no longer matches an import fails `test_every_exception_is_still_needed`.
EXCEPTIONS: dict[tuple[str, str], str] = {}


# -- reading the rules ---------------------------------------------------------------------------
def _table_rows(text: str, marker: str) -> list[list[str]]:
    """The body rows of the first Markdown table after the comment containing `marker`."""
    after = text[text.index(marker):].splitlines()[1:]
    rows = []
    for line in after:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append(cells)
    return [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]  # header and rule off


def _names(cell: str) -> list[str]:
    return re.findall(r"`([A-Za-z_][\w.]*)`", cell)


def read_layers(text: str) -> dict[str, int]:
    """Module prefix (relative to edgepick, "edgepick" itself for the root) → layer number."""
    layers: dict[str, int] = {}
    for cells in _table_rows(text, "the layer table"):
        number = int(cells[0].split()[0])
        for name in _names(cells[2]):
            assert name not in layers, f"{name} is in two layers"
            layers[name] = number
    return layers


def read_forbidden(text: str) -> list[tuple[str, str]]:
    return [(_names(c[0])[0], _names(c[1])[0]) for c in _table_rows(text, "forbidden imports")]


# -- reading the code ----------------------------------------------------------------------------
def modules_of(src: Path) -> dict[str, Path]:
    out = {}
    for path in sorted((src / "edgepick").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(src: Path, runtime_only: bool = False) -> dict[str, set[tuple[str, int]]]:
    """Module → the edgepick modules it imports (anywhere in it), with the line. Importing
    `a.b.c` from outside `a.b` first runs `a.b`'s `__init__`: that counts when it imports
    anything of edgepick. `runtime_only` leaves out imports under `if TYPE_CHECKING:`, which
    never run (a cycle through them is not one)."""
    modules = modules_of(src)
    graph = _explicit_imports(modules, runtime_only)
    for name, found in graph.items():
        for target, line in list(found):
            parent = target.rpartition(".")[0]
            while parent.count(".") >= 1 and not (name + ".").startswith(parent + "."):
                if graph.get(parent):
                    found.add((parent, line))
                parent = parent.rpartition(".")[0]
    return graph


@lru_cache(maxsize=None)
def _parsed(path: str, mtime_ns: int) -> ast.AST:
    return ast.parse(Path(path).read_text(encoding="utf-8"), path)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:`."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def _explicit_imports(modules: dict[str, Path],
                      runtime_only: bool) -> dict[str, set[tuple[str, int]]]:
    graph: dict[str, set[tuple[str, int]]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[tuple[str, int]] = set()
        tree = _parsed(str(path), path.stat().st_mtime_ns)
        skip = _type_checking_only(tree) if runtime_only else set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # `from pkg import sub` imports the submodule when there is one
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for t in targets:
                if t == "edgepick" or t.startswith("edgepick."):
                    owner = _owner(t, modules)
                    if owner is None:
                        continue
                    found.add((owner, node.lineno))
        graph[name] = {(t, ln) for t, ln in found if t != name}
    return graph


# -- the checks ----------------------------------------------------------------------------------
def layer_of(module: str, layers: dict[str, int]) -> int | None:
    rel = module.removeprefix("edgepick.") if module != "edgepick" else "edgepick"
    while rel:
        if rel in layers:
            return layers[rel]
        rel = rel.rpartition(".")[0]
    return None


def _matches(module: str, prefix: str) -> bool:
    full = f"edgepick.{prefix}"
    return module == full or module.startswith(full + ".")


def violations(graph, layers, forbidden, exceptions=()) -> list[str]:
    out = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module, layers)
        for target, line in sorted(targets):
            if (module, target) in exceptions:
                continue
            there = layer_of(target, layers)
            if here is not None and there is not None and there > here:
                out.append(f"{module}:{line} imports {target}: layer {there} above {here}")
            for a, b in forbidden:
                if _matches(module, a) and _matches(target, b):
                    out.append(f"{module}:{line} imports {target}: {a} never imports {b}")
    return out


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {m: sorted({t for t, _ in ts if t in graph}) for m, ts in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return found


def check(src: Path, doc_text: str, exceptions=()) -> list[str]:
    """Every problem with the code under `src`, one line each; an excepted import is left out of
    both the layer and the cycle checks."""
    graph = imports_of(src)
    layers = read_layers(doc_text)
    problems = [f"{m}: in no layer of docs/architecture.md" for m in graph
                if layer_of(m, layers) is None]
    problems += violations(graph, layers, read_forbidden(doc_text), exceptions)
    runtime = {m: {(t, ln) for t, ln in ts if (m, t) not in exceptions}
               for m, ts in imports_of(src, runtime_only=True).items()}
    problems += ["import cycle: " + " → ".join(c) for c in cycles(runtime)]
    return problems


# -- the tests -----------------------------------------------------------------------------------
def test_src_keeps_the_layer_rules_of_the_architecture_page():
    problems = check(SRC, DOC.read_text(encoding="utf-8"), EXCEPTIONS)
    assert not problems, "\n".join(problems)


def test_every_exception_is_still_needed():
    graph = imports_of(SRC)
    stale = [pair for pair in EXCEPTIONS
             if pair[1] not in {t for t, _ in graph.get(pair[0], ())}]
    assert not stale, f"remove from EXCEPTIONS, the import is gone: {stale}"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for d in [p for p in src.rglob("*") if p.is_dir()]:
        (d / "__init__.py").touch()
    return src


def test_an_upward_import_fails_even_inside_a_function(tmp_path):
    doc = DOC.read_text(encoding="utf-8")
    src = _tree(tmp_path, {
        "edgepick/cli/app.py": "from edgepick.records import model\n",
        "edgepick/records/model.py": "def f():\n    from edgepick.cli import app\n",
    })
    problems = check(src, doc)
    assert any("edgepick.records.model:2 imports edgepick.cli.app: layer 7 above 0" in p
               for p in problems), problems
    assert any(p.startswith("import cycle:") and "edgepick.records.model" in p
               for p in problems), problems


def test_a_forbidden_import_and_an_unplaced_module_fail(tmp_path):
    src = _tree(tmp_path, {
        "edgepick/serve/app.py": "import edgepick.decide.gates\n",
        "edgepick/decide/gates.py": "",
        "edgepick/newthing/x.py": "",
        "edgepick/serve/edge.py": "from edgepick.serve.pool import P\n",
        "edgepick/serve/pool.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from edgepick.serve.edge import E\n",
    })
    problems = check(src, DOC.read_text(encoding="utf-8"))
    assert any("serve never imports decide" in p for p in problems), problems
    assert any(p.startswith("edgepick.newthing.x: in no layer") for p in problems), problems
    assert not any(p.startswith("import cycle") for p in problems), problems  # type-only


def test_relative_imports_and_package_inits_count(tmp_path):
    src = _tree(tmp_path, {
        "edgepick/backends/__init__.py": "from .base import B\n",
        "edgepick/records/__init__.py": "",
        "edgepick/backends/base.py": "from edgepick.records.x import y\n",
        "edgepick/records/x.py": "from edgepick.backends.base import B\n",
    })
    graph = imports_of(src)
    assert ("edgepick.backends.base", 1) in graph["edgepick.backends"]
    assert {t for t, _ in graph["edgepick.records.x"]} == {"edgepick.backends.base",
                                                            "edgepick.backends"}
    # records.x → backends (its __init__ runs first) → backends.base → records.x
    assert cycles(graph) == [["edgepick.backends", "edgepick.backends.base", "edgepick.records.x"]]


# -- child processes -----------------------------------------------------------------------------
SPAWNS = {("subprocess", "run"), ("subprocess", "Popen"), ("subprocess", "call"),
          ("subprocess", "check_call"), ("subprocess", "check_output"),
          ("multiprocessing", "get_context"), ("multiprocessing", "Process"),
          ("os", "fork"), ("os", "system"), ("os", "popen")}


def spawns_outside_launch(src: Path) -> list[str]:
    """`module:line` of every call that starts a process outside edgepick/launch/ (docs/
    architecture.md: every child process starts through launch/, which makes it die with
    edgepick, closes inherited descriptors and bounds it)."""
    found = []
    for name, path in modules_of(src).items():
        if name.startswith("edgepick.launch"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        alias = {}  # local name -> module, for `import multiprocessing as mp`
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                alias.update({a.asname or a.name: a.name for a in node.names})
        for node in ast.walk(tree):
            f = node.func if isinstance(node, ast.Call) else None
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and (alias.get(f.value.id, f.value.id), f.attr) in SPAWNS):
                found.append(f"{name}:{node.lineno}")
    return found


def test_every_child_process_starts_through_launch():
    assert spawns_outside_launch(SRC) == []


def test_a_process_started_elsewhere_is_found(tmp_path):
    src = _tree(tmp_path, {
        "edgepick/power/meter.py": "import subprocess\nsubprocess.run(['x'])\n",
        "edgepick/devices/p.py": "import multiprocessing as mp\nctx = mp.get_context('spawn')\n",
        "edgepick/launch/process.py": "import subprocess\nsubprocess.Popen(['x'])\n",
    })
    assert sorted(spawns_outside_launch(src)) == ["edgepick.devices.p:2", "edgepick.power.meter:2"]
