"""The architecture rules of docs/architecture.md, checked on every module under src/edgepick.

The package layers and the forbidden imports are import-linter contracts in pyproject.toml, run
here with this environment's `lint-imports` (grimp reads every import, the ones inside functions
included); a broken contract fails with import-linter's own account of the offending import.
This file keeps what import-linter cannot express: the page's table and the contract list the
same layers, every child process starts through launch/, and an import sits inside a function
only for a dependency on the page's allow-list.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


# -- the page's tables ---------------------------------------------------------------------------
def _table_rows(text: str, marker: str) -> list[list[str]]:
    """The body rows of the first Markdown table after the comment containing `marker`."""
    after = text[text.index(marker):].splitlines()[1:]
    rows = []
    for line in after:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]  # header and rule off


def _names(cell: str) -> list[str]:
    return re.findall(r"`([A-Za-z_][\w.]*)`", cell)


def doc_layers(text: str) -> list[list[str]]:
    return [_names(cells[1]) for cells in _table_rows(text, "the layer table")]


def contract_layers(pyproject: dict) -> list[list[str]]:
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    # "(name)": import-linter's optional layer, one that need not exist
    return [[n.strip().strip("()") for n in re.split(r"[|:]", row)] for row in layers]


# -- import-linter -------------------------------------------------------------------------------
def lint_imports(cwd: Path, env_path: Path | None = None) -> subprocess.CompletedProcess:
    env = None if env_path is None else dict(os.environ, PYTHONPATH=str(env_path))
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_package_layers_and_forbidden_imports_hold():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_page_and_the_contract_list_the_same_layers():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert doc_layers(DOC.read_text(encoding="utf-8")) == contract_layers(pyproject)


def test_an_upward_import_inside_a_function_is_refused(tmp_path):
    """The contract reads imports inside functions too (grimp walks the whole module)."""
    pkg = tmp_path / "layered"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "high.py").write_text("from layered import low\n")
    (pkg / "low.py").write_text("def f():\n    from layered import high\n    return high\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = layered\n\n[importlinter:contract:layers]\n"
        "name = layers\ntype = layers\nlayers =\n    layered.high\n    layered.low\n")
    done = lint_imports(tmp_path, tmp_path)
    assert done.returncode != 0, done.stdout
    assert "layered.low -> layered.high" in done.stdout, done.stdout


# -- imports inside functions --------------------------------------------------------------------
def allowed_lazy(text: str) -> list[tuple[str, str]]:
    """(imported module, a module it may be imported inside a function in) for each row and
    each module its "where" cell names; a module stands for its submodules too."""
    return [(_names(cells[0])[0], where) for cells in _table_rows(text, "lazy imports")
            for where in _names(cells[1])]


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_inside_functions(src: Path) -> list[tuple[str, int, str]]:
    """(module, line, imported module) for every import statement inside a function."""
    found = []
    for path in sorted((src / "edgepick").rglob("*.py")):
        module = _module_name(path, src)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    found += [(module, node.lineno, a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    target = "edgepick" if node.level else node.module or ""
                    found.append((module, node.lineno, target))
    return sorted(set(found))


def lazy_problems(src: Path, allowed: list[tuple[str, str]]) -> list[str]:
    out = []
    for module, line, target in imports_inside_functions(src):
        if not any(_within(target, what) and _within(module, where) for what, where in allowed):
            out.append(f"{module}:{line} imports {target} inside a function; import it at the "
                       "top of the module (docs/architecture.md: the allow-list of lazy imports)")
    return out


def test_imports_inside_functions_are_on_the_allow_list():
    problems = lazy_problems(SRC, allowed_lazy(DOC.read_text(encoding="utf-8")))
    assert not problems, "\n".join(problems)


MAX_LAZY = 60  # docs/architecture.md: at most this many imports inside functions in all


def test_imports_inside_functions_stay_few():
    found = imports_inside_functions(SRC)
    assert len(found) <= MAX_LAZY, (
        f"{len(found)} imports inside functions (at most {MAX_LAZY}): import at the top, or "
        "gather an optional dependency's imports in one place")


def test_an_import_inside_a_function_off_the_list_is_found(tmp_path):
    src = tmp_path / "src"
    for pkg in ("backends", "fit"):
        (src / "edgepick" / pkg).mkdir(parents=True)
    (src / "edgepick" / "backends" / "engine.py").write_text(
        "import json\n\ndef f():\n    import llama_cpp\n    from edgepick.records import x\n")
    (src / "edgepick" / "fit" / "speed.py").write_text("def f():\n    import llama_cpp\n")
    allowed = allowed_lazy(DOC.read_text(encoding="utf-8"))
    hint = "import it at the top of the module (docs/architecture.md: the allow-list of lazy imports)"
    assert lazy_problems(src, allowed) == [
        f"edgepick.backends.engine:5 imports edgepick.records inside a function; {hint}",
        f"edgepick.fit.speed:2 imports llama_cpp inside a function; {hint}"]


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
    for path in sorted((src / "edgepick").rglob("*.py")):
        name = _module_name(path, src)
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
    files = {
        "edgepick/power/meter.py": "import subprocess\nsubprocess.run(['x'])\n",
        "edgepick/devices/p.py": "import multiprocessing as mp\nctx = mp.get_context('spawn')\n",
        "edgepick/launch/process.py": "import subprocess\nsubprocess.Popen(['x'])\n",
    }
    for rel, text in files.items():
        path = tmp_path / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert sorted(spawns_outside_launch(tmp_path / "src")) == ["edgepick.devices.p:2",
                                                               "edgepick.power.meter:2"]
