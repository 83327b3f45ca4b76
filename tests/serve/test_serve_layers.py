"""serve in rooms, checked on the code: no module in serve/ or its rooms over 300 lines and
no function over 80 (docs/architecture.md, "serve's rooms"; the rooms' import direction is
import-linter's serve-rooms contract in pyproject.toml); the engine behind its process
protocol (shared code never names llama-server); the router protocol complete."""

from __future__ import annotations

import ast
import tomllib
import typing
from pathlib import Path

import edgepick.serve

SERVE = Path(edgepick.serve.__file__).parent
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(SERVE.rglob("*.py"))


def _name(p: Path) -> str:
    return p.relative_to(SERVE).as_posix()


def test_no_module_in_serve_is_over_300_lines():
    long = {_name(p): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"serve modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_in_serve_or_plan_is_over_80_lines():
    import edgepick.plan

    plan = sorted(Path(edgepick.plan.__file__).parent.glob("*.py"))
    long = []
    for p in _modules() + plan:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    where = _name(p) if p.is_relative_to(SERVE) else p.name
                    long.append(f"{where}:{node.lineno} {node.name} ({n} lines)")
    assert not long, f"serve and plan functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_only_the_llama_server_engine_starts_llama_server():
    """The pool, the supervisor and the handlers reach an engine through `EngineProcess`; the
    command line of llama-server is its implementation's alone (serve/engine/llama_server.py)."""
    naming = [_name(p) for p in _modules()
              if '"llama-server"' in p.read_text(encoding="utf-8")]
    assert naming == ["engine/llama_server.py"], naming


def test_the_router_protocol_declares_what_serve_reads():
    from edgepick.serve.router_api import EdgeOnlyRouter, Router, complete

    class Older:  # a plugin router from before task_of and max_prompt_tokens were declared
        async def route(self, request, edge):
            raise AssertionError

        async def aclose(self):
            return None

    assert {"task_of", "max_prompt_tokens", "route", "aclose"} <= typing._get_protocol_attrs(Router)
    assert isinstance(EdgeOnlyRouter(), Router)
    done = complete(Older())
    assert isinstance(done, Router) and done.max_prompt_tokens is None
    for p in _modules():
        text = p.read_text(encoding="utf-8")
        assert 'getattr(self.router' not in text and 'getattr(state.router' not in text, _name(p)


def test_every_room_is_in_the_contract_and_on_the_page():
    """serve's subpackages are its rooms: each is placed in import-linter's serve-rooms layers
    (pyproject.toml) and named in docs/architecture.md's "serve's rooms" table, and nothing is
    placed there that is not a room or a module of serve."""
    root = SERVE.parents[2]
    contracts = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    rooms_contract = next(c for c in contracts["tool"]["importlinter"]["contracts"]
                          if c["id"] == "serve-rooms")
    placed = {name.strip() for layer in rooms_contract["layers"] for name in layer.split("|")}
    rooms = {p.name for p in SERVE.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in SERVE.glob("*.py") if p.stem != "__init__"}
    assert rooms <= placed, rooms - placed
    assert placed == rooms | modules, placed ^ (rooms | modules)
    page = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## serve's rooms", 1)[1].split("\n## ", 1)[0]
    assert all(f"`serve/{room}/`" in section for room in rooms), rooms
